package storage_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// recoverCase is a fault that fails a log mid-append.
type recoverCase struct {
	name   string
	faults []errorfs.Fault
	opt    storage.AppendOptions
	// wholeSurvives: the failed append's batch was written whole (only its
	// fsync failed), so recovery may keep it; it was never acknowledged.
	wholeSurvives bool
}

var recoverCases = []recoverCase{
	// A full disk fails every write, the probe's too.
	{name: "ENOSPC on write", faults: []errorfs.Fault{{Op: errorfs.OpWrite, Err: errorfs.ENOSPC}}},
	{name: "ENOSPC on index write", faults: []errorfs.Fault{{Op: errorfs.OpWrite, PathSuffix: ".timeindex", Err: errorfs.ENOSPC},
		{Op: errorfs.OpWrite, PathSuffix: ".tmp", Err: errorfs.ENOSPC}}},
	// A torn write whose undo fails too leaves half a batch on disk.
	{name: "EIO torn write, truncate fails", faults: []errorfs.Fault{{Op: errorfs.OpWrite, PathSuffix: ".log", Err: errorfs.EIO, TornBytes: 40},
		{Op: errorfs.OpTruncate, Err: errorfs.EIO}, {Op: errorfs.OpWrite, PathSuffix: ".tmp", Err: errorfs.EIO}}},
	{name: "EIO on fsync", faults: []errorfs.Fault{{Op: errorfs.OpSync, Err: errorfs.EIO}},
		opt: storage.AppendOptions{Sync: true}, wholeSurvives: true},
	{name: "ENOSPC on fsync", faults: []errorfs.Fault{{Op: errorfs.OpSync, Err: errorfs.ENOSPC}},
		opt: storage.AppendOptions{Sync: true}, wholeSurvives: true},
}

// TestRecoverAfterFault: a log failed by a write or fsync error refuses
// appends and Recover while the fault lasts, and once it is gone Recover
// brings it back with every acknowledged batch exactly once, no torn bytes,
// and appends continuing at the right offset; a restart sees the same.
func TestRecoverAfterFault(t *testing.T) {
	for _, tc := range recoverCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := newErrorFS()
			cfg := storage.Config{IndexIntervalBytes: 10}
			l := openLog(t, dir, cfg, fs)
			defer l.Close()
			appendBatches(t, l, 5, 2, 50, 0)
			acked := mustRead(t, l, 0)
			failedBatch := makeBatch(2, 50, 0)
			for _, f := range tc.faults {
				fs.Inject(f)
			}
			if _, err := l.Append(failedBatch, tc.opt); !errors.Is(err, storage.ErrFailed) {
				t.Fatalf("append under fault: %v, want ErrFailed", err)
			}
			if l.Failure() == nil {
				t.Fatal("Failure() is nil after a failed append")
			}
			if _, err := l.Recover(); err == nil || l.Failure() == nil {
				t.Fatalf("Recover with the fault still there: %v, failure %v", err, l.Failure())
			}
			if _, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
				t.Fatalf("append after a refused recovery: %v", err)
			}
			fs.Clear()
			if ok, err := l.Recover(); !ok || err != nil {
				t.Fatalf("Recover after the fault cleared: %v %v", ok, err)
			}
			if l.Failure() != nil {
				t.Fatalf("Failure() after Recover: %v", l.Failure())
			}
			checkRecovered(t, l, acked, failedBatch, tc.wholeSurvives)
			end := l.LogEndOffset()
			res, err := l.Append(makeBatch(3, 20, 0), storage.AppendOptions{Sync: true})
			if err != nil || res.BaseOffset != end {
				t.Fatalf("append after recovery: %+v %v, want base %d", res, err, end)
			}
			want := mustRead(t, l, 0)
			readAll(t, l)
			if err := l.Close(); err != nil {
				t.Fatalf("close after recovery: %v", err)
			}
			l2 := openLog(t, dir, cfg, nil)
			defer l2.Close()
			if got := mustRead(t, l2, 0); !bytes.Equal(got, want) {
				t.Fatalf("after restart the log holds %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// checkRecovered: the log holds the acknowledged bytes and, when allowed,
// the failed batch whole after them; nothing else.
func checkRecovered(t *testing.T, l *storage.Log, acked, failedBatch []byte, wholeSurvives bool) {
	t.Helper()
	got := mustRead(t, l, 0)
	if !bytes.HasPrefix(got, acked) {
		t.Fatalf("recovered log (%d bytes) lost acknowledged bytes (%d)", len(got), len(acked))
	}
	rest := got[len(acked):]
	switch {
	case len(rest) == 0:
	case wholeSurvives && bytes.Equal(rest, failedBatch):
		// Whole (Append stamped failedBatch in place), never acknowledged:
		// the producer saw an error and may retry, as after a crash.
	default:
		t.Fatalf("recovered log has %d bytes after the acknowledged ones", len(rest))
	}
	heads := readAll(t, l)
	if last := heads[len(heads)-1]; last.LastOffset()+1 != l.LogEndOffset() {
		t.Fatalf("log end %d, last batch ends at %d", l.LogEndOffset(), last.LastOffset()+1)
	}
}

// TestRecoverHealthyLogIsNoop: Recover on a log that has not failed
// changes nothing.
func TestRecoverHealthyLogIsNoop(t *testing.T) {
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	defer l.Close()
	appendBatches(t, l, 3, 2, 50, 0)
	before := mustRead(t, l, 0)
	if ok, err := l.Recover(); ok || err != nil {
		t.Fatalf("Recover of a healthy log: %v %v", ok, err)
	}
	if got := mustRead(t, l, 0); !bytes.Equal(got, before) {
		t.Fatal("Recover of a healthy log changed it")
	}
}

// TestRecoverKeepsReadsInFlightWorking: a read that began before Recover
// swapped the segments still returns whole batches, and later reads all.
func TestRecoverKeepsReadsInFlightWorking(t *testing.T) {
	fs := newErrorFS()
	l := openLog(t, t.TempDir(), storage.Config{SegmentBytes: 400}, fs)
	defer l.Close()
	appendBatches(t, l, 12, 2, 50, 0)
	acked := mustRead(t, l, 0)
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Err: errorfs.ENOSPC, Times: 1})
	if _, err := l.Append(makeBatch(1, 50, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
		t.Fatal(err)
	}
	done := make(chan []byte)
	fs.Inject(errorfs.Fault{Op: errorfs.OpRead, PathSuffix: ".log", Times: 1, Hook: func(string) {
		// The read holds its segment reference while the log is recovered.
		if _, err := l.Recover(); err != nil {
			t.Error(err)
		}
	}})
	go func() {
		res, err := l.Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 30}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- res.Data
	}()
	// The read may stop at the swapped-out segments (a short read, as when
	// retention deletes the next segment), never return torn bytes.
	if got := <-done; len(got) == 0 || !bytes.HasPrefix(acked, got) {
		t.Fatalf("read across Recover returned %d bytes, not a prefix of the %d acknowledged", len(got), len(acked))
	}
	headers(t, mustRead(t, l, 0))
	if got := mustRead(t, l, 0); !bytes.Equal(got, acked) {
		t.Fatalf("read after Recover returned %d bytes, want %d", len(got), len(acked))
	}
	if l.Failure() != nil {
		t.Fatal("still failed")
	}
}

// TestRecoverUnderConcurrentReads: appends fail now and then (ENOSPC or a
// torn EIO write), each failure is recovered while a reader keeps reading;
// the reader only ever sees whole batches, and in the end the log holds
// exactly the acknowledged batches, once each, in order.
func TestRecoverUnderConcurrentReads(t *testing.T) {
	fs := newErrorFS()
	l := openLog(t, t.TempDir(), storage.Config{SegmentBytes: 2000, IndexIntervalBytes: 100}, fs)
	defer l.Close()
	stop := make(chan struct{})
	readerDone := make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			res, err := l.Read(storage.ReadOptions{Offset: l.LogStartOffset(), MaxBytes: 1 << 20}, nil)
			if err != nil {
				readerDone <- err
				return
			}
			for b := res.Data; len(b) > 0; {
				h, err := recordbatch.ParseHeader(b)
				if err != nil || h.Size() > int64(len(b)) {
					readerDone <- errors.New("reader saw a torn batch")
					return
				}
				b = b[h.Size():]
			}
		}
	}()
	var acked []byte
	failures := 0
	for i := range 200 {
		if i%17 == 5 {
			fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Err: errorfs.EIO, TornBytes: 20 + i, Times: 1})
		}
		b := makeBatch(1+i%3, 30, 0)
		if _, err := l.Append(b, storage.AppendOptions{}); err != nil {
			mustIs(t, err, storage.ErrFailed)
			failures++
			if ok, err := l.Recover(); !ok || err != nil {
				t.Fatalf("recover: %v %v", ok, err)
			}
			continue
		}
		acked = append(acked, b...)
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	if failures == 0 {
		t.Fatal("no append failed")
	}
	if got := mustRead(t, l, 0); !bytes.Equal(got, acked) {
		t.Fatalf("log holds %d bytes, want the %d acknowledged", len(got), len(acked))
	}
}
