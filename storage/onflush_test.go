package storage_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// TestOnFlushReportsEachFsync: Options.OnFlush is called once per
// successful fsync (a synced append, an explicit Flush), with its
// duration, and not when there is nothing to flush.
func TestOnFlushReportsEachFsync(t *testing.T) {
	var mu sync.Mutex
	var flushes []time.Duration
	l, err := storage.Open(t.TempDir(), storage.Config{}, storage.Options{
		Logger: testLogger(t),
		OnFlush: func(d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			flushes = append(flushes, d)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(flushes) }

	if _, err := l.Append(makeBatch(2, 10, 1000), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d flushes after an unsynced append, want 0", n)
	}
	if _, err := l.Append(makeBatch(2, 10, 1000), storage.AppendOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d flushes after a synced append, want 1", n)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d flushes after Flush with nothing new, want 1", n)
	}
	if _, err := l.Append(makeBatch(1, 10, 1000), storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(flushes) != 2 || flushes[0] <= 0 || flushes[1] <= 0 {
		t.Fatalf("flushes %v, want 2 positive durations", flushes)
	}
}
