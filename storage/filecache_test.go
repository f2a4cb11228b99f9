package storage_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// fdSlack covers descriptors opened outside the cache for the length of
// one call (a checkpoint or index file read, a directory fsync) by each of
// the test's goroutines, and the runtime's own.
const fdSlack = 24

// TestFileCacheBoundsDescriptors serves far more partitions than the fd
// budget, each with several sealed segments, appending to and reading
// every one (also concurrently, while retention deletes segments under
// readers): the process's descriptors never pass the budget plus a small
// constant, and every read returns what was written.
func TestFileCacheBoundsDescriptors(t *testing.T) {
	const (
		budget   = 32
		logs     = 500
		batches  = 12
		readers  = 4
		perBatch = 2
	)
	files := storage.NewFileCache(budget)
	cfg := storage.Config{SegmentBytes: 700, IndexIntervalBytes: 100, RetentionTime: -1}
	opts := storage.Options{FileCache: files, Logger: slog.New(slog.DiscardHandler)}
	root := t.TempDir()
	base := openFDs(t)
	var peak atomic.Int64
	check := func() {
		n := int64(openFDs(t) - base)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
	}
	ls := make([]*storage.Log, logs)
	for i := range ls {
		l, err := storage.Open(filepath.Join(root, fmt.Sprintf("p-%d", i)), cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
		t.Cleanup(func() { l.Close() })
	}
	check()
	for round := 0; round < batches; round++ {
		for _, l := range ls {
			if _, err := l.Append(makeBatch(perBatch, 50, int64(1000+round)), storage.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		check()
	}
	for i, l := range ls {
		if l.SegmentCount() < 3 {
			t.Fatalf("log %d has %d segments, want sealed ones", i, l.SegmentCount())
		}
	}
	if files.Opened() <= budget {
		t.Fatalf("cache opened only %d files: the test does not exercise eviction", files.Opened())
	}

	// Readers race each other and retention over evicted segments.
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for k := 0; k < logs; k++ {
				l := ls[(k*7+r*131)%logs]
				if err := readEverything(l); err != nil {
					errs <- err
					return
				}
				if k%50 == 0 {
					check()
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < logs; i += 5 {
			if err := ls[i].AdvanceStartOffset(4 * perBatch); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check()
	if p := peak.Load(); p > budget+fdSlack {
		t.Fatalf("descriptors grew by %d over %d logs; budget %d + %d", p, logs, budget, fdSlack)
	}
	if n := files.Open(); n > budget {
		t.Fatalf("cache holds %d open files while idle, budget %d", n, budget)
	}
	t.Logf("%d logs, budget %d: peak fd growth %d, %d opens", logs, budget, peak.Load(), files.Opened())

	// A clean restart of every log opens none of its files until used.
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files = storage.NewFileCache(budget)
	opts.FileCache = files
	for i := range ls {
		l, err := storage.Open(filepath.Join(root, fmt.Sprintf("p-%d", i)), cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	if n := files.Opened(); n > logs {
		t.Fatalf("reopening %d logs opened %d files through the cache, want at most one each", logs, n)
	}
	for i, l := range ls {
		if err := readEverything(l); err != nil {
			t.Fatalf("log %d after restart: %v", i, err)
		}
	}
	check()
	if p := peak.Load(); p > budget+fdSlack {
		t.Fatalf("descriptors grew by %d after restart; budget %d + %d", p, budget, fdSlack)
	}
}

// readEverything reads l from its start to its end in small reads and
// checks the offsets are contiguous.
func readEverything(l *storage.Log) error {
	off := l.LogStartOffset()
	end := l.LogEndOffset()
	for off < end {
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 300, MinOneBatch: true}, nil)
		if err != nil {
			if off < l.LogStartOffset() {
				off = l.LogStartOffset() // retention moved past us
				continue
			}
			return fmt.Errorf("%s at %d: %w", l.Dir(), off, err)
		}
		if res.Batches == 0 {
			return fmt.Errorf("%s at %d: empty read below end %d", l.Dir(), off, end)
		}
		if _, err := recordbatch.Validate(res.Data); err != nil {
			return fmt.Errorf("%s at %d: %w", l.Dir(), off, err)
		}
		off = res.NextOffset
	}
	return nil
}

func TestFileCacheRereadsAfterEviction(t *testing.T) {
	files := storage.NewFileCache(1)
	opts := storage.Options{FileCache: files, Logger: slog.New(slog.DiscardHandler)}
	cfg := storage.Config{SegmentBytes: 500, IndexIntervalBytes: 100, RetentionTime: -1}
	a, err := storage.Open(t.TempDir(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := storage.Open(t.TempDir(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	for i := 0; i < 20; i++ {
		appendBatches(t, a, 1, 1, 80, start.UnixMilli())
		appendBatches(t, b, 1, 1, 80, start.UnixMilli())
	}
	if len(readAll(t, a)) != 20 || len(readAll(t, b)) != 20 {
		t.Fatal("lost batches")
	}
	if files.Open() > 1 {
		t.Fatalf("%d files open with a budget of 1", files.Open())
	}
}
