package storage_test

import (
	"errors"
	"math/rand"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func TestConcurrentSyncAppendsShareFsyncs(t *testing.T) {
	dir := t.TempDir()
	fs := newErrorFS()
	cfg := storage.Config{SegmentBytes: 64 << 10}
	l := openLog(t, dir, cfg, fs)
	const writers, each = 32, 40
	var mu sync.Mutex
	var bases []int64
	var wg sync.WaitGroup
	fs.ResetCounters()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				res, err := l.Append(makeBatch(2, 500, 1), storage.AppendOptions{Sync: true})
				if err != nil {
					t.Error(err)
					return
				}
				if f := l.FlushedOffset(); f <= res.LastOffset {
					t.Errorf("Sync append of %d returned with recovery point %d", res.LastOffset, f)
				}
				mu.Lock()
				bases = append(bases, res.BaseOffset)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for i, b := range bases {
		if b != int64(2*i) {
			t.Fatalf("batch %d got base offset %d", i, b)
		}
	}
	syncs := fs.Syncs()
	t.Logf("%d sync appends, %d fsyncs", writers*each, syncs)
	if syncs >= writers*each {
		t.Errorf("%d fsyncs for %d appends: no group commit", syncs, writers*each)
	}
	// Crash and reopen: every acknowledged batch is there.
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	if hs := readAll(t, l2); len(hs) != writers*each {
		t.Fatalf("%d batches after restart", len(hs))
	}
}

// TestConcurrentAppendReadRetention runs writers, readers and retention
// together; every read must return valid whole batches or a clean
// out-of-range error, never garbage, even when its segment is deleted
// under it.
func TestConcurrentAppendReadRetention(t *testing.T) {
	// A tiny index cache makes sealed views drop and reload under the readers.
	defer storage.SetIndexCacheLimit(1024)()
	cfg := storage.Config{SegmentBytes: 4096, IndexIntervalBytes: 256, RetentionBytes: 16 << 10, RetentionTime: -1}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	run := func(f func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(time.Now().UnixNano()))
			for !stop.Load() {
				f(r)
			}
		}()
	}
	for i := 0; i < 3; i++ {
		run(func(r *rand.Rand) {
			n := 1 + r.Intn(5)
			if _, err := l.Append(makeBatch(n, 10+r.Intn(200), 1), storage.AppendOptions{Sync: r.Intn(10) == 0}); err != nil {
				t.Error(err)
				stop.Store(true)
			}
		})
	}
	for i := 0; i < 3; i++ {
		run(func(r *rand.Rand) {
			start, end := l.LogStartOffset(), l.LogEndOffset()
			off := start + r.Int63n(end-start+1)
			res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: r.Intn(20000), MinOneBatch: r.Intn(2) == 0}, nil)
			if errors.Is(err, storage.ErrOffsetOutOfRange) {
				return
			}
			if err != nil {
				t.Error(err)
				stop.Store(true)
				return
			}
			if _, err := recordbatch.Validate(res.Data); err != nil {
				t.Errorf("read at %d: %v", off, err)
				stop.Store(true)
			}
			if hs := headersNoFatal(res.Data); len(hs) > 0 && (hs[0].BaseOffset > off || hs[0].LastOffset() < off) {
				t.Errorf("read at %d starts with [%d, %d]", off, hs[0].BaseOffset, hs[0].LastOffset())
				stop.Store(true)
			}
		})
	}
	run(func(r *rand.Rand) {
		if _, err := l.EnforceRetention(time.Now()); err != nil {
			t.Error(err)
		}
		if _, err := l.OffsetForTimestamp(1); err != nil {
			t.Error(err)
		}
		time.Sleep(time.Millisecond) // pacing, not waiting for a condition
	})
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && !stop.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	readAll(t, l)
	if l.LogStartOffset() == 0 {
		t.Error("retention never ran")
	}
}

func headersNoFatal(data []byte) []recordbatch.Header {
	var hs []recordbatch.Header
	for pos := 0; pos < len(data); {
		h, err := recordbatch.ParseHeader(data[pos:])
		if err != nil {
			return hs
		}
		hs = append(hs, h)
		pos += int(h.Size())
	}
	return hs
}

func TestFlushPolicies(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	cfg := storage.Config{FlushMessages: 10, FlushInterval: time.Second}
	l, err := storage.Open(t.TempDir(), cfg, storage.Options{Now: clock.Now, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBatches(t, l, 4, 2, 10, 0)
	if l.FlushedOffset() != 0 {
		t.Fatalf("flushed %d after 8 messages", l.FlushedOffset())
	}
	appendBatches(t, l, 1, 2, 10, 0)
	if l.FlushedOffset() != 10 {
		t.Fatalf("flushed %d after 10 messages", l.FlushedOffset())
	}
	appendBatches(t, l, 1, 2, 10, 0)
	if err := l.MaybeFlush(clock.Now().Add(500 * time.Millisecond)); err != nil || l.FlushedOffset() != 10 {
		t.Fatalf("early MaybeFlush flushed to %d: %v", l.FlushedOffset(), err)
	}
	if err := l.MaybeFlush(clock.Now().Add(time.Second)); err != nil || l.FlushedOffset() != 12 {
		t.Fatalf("MaybeFlush flushed to %d: %v", l.FlushedOffset(), err)
	}
}

// TestReadSurvivesSegmentDeletion deletes the segment a read is about to
// pread from, at that exact moment: the read still returns its batches.
func TestReadSurvivesSegmentDeletion(t *testing.T) {
	fs := newErrorFS()
	dir := t.TempDir()
	l := openLog(t, dir, storage.Config{SegmentBytes: 1000}, fs)
	defer l.Close()
	appendBatches(t, l, 20, 2, 100, 0) // 3 batches per segment
	want := mustRead(t, l, 0)
	first := segPath(dir, 0, ".log")
	deleted := false
	fs.Inject(errorfs.Fault{Op: errorfs.OpRead, PathSuffix: first, Times: 1, Hook: func(string) {
		if err := l.AdvanceStartOffset(30); err != nil {
			t.Error(err)
		}
		_, err := os.Stat(first)
		deleted = os.IsNotExist(err)
	}})
	res, err := l.Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20}, nil)
	if err != nil || !deleted {
		t.Fatalf("read: %v, segment deleted: %v", err, deleted)
	}
	// The read began before the deletion; it serves what it saw, or stops
	// early, but never garbage.
	if string(res.Data) != string(want[:len(res.Data)]) || res.Batches < 3 {
		t.Fatalf("read returned %d batches, %d bytes", res.Batches, len(res.Data))
	}
	headers(t, res.Data)
	if l.LogStartOffset() != 30 {
		t.Fatal(l.LogStartOffset())
	}
}
