package storage_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
)

// failedAppendLeavesNothing injects fault, appends, and checks the append
// failed with ErrFailed, left the log as it was, and that later appends are
// refused; a reopened log has exactly the data from before.
func failedAppendLeavesNothing(t *testing.T, fault errorfs.Fault, opt storage.AppendOptions) {
	t.Helper()
	dir := t.TempDir()
	fs := newErrorFS()
	cfg := storage.Config{IndexIntervalBytes: 10}
	l := openLog(t, dir, cfg, fs)
	appendBatches(t, l, 5, 2, 50, 0)
	want := mustRead(t, l, 0)
	end, size := l.LogEndOffset(), fileSize(t, segPath(dir, 0, ".log"))
	fs.Inject(fault)
	_, err := l.Append(makeBatch(2, 50, 0), opt)
	mustIs(t, err, storage.ErrFailed)
	if fault.Err != nil {
		mustIs(t, err, fault.Err)
	}
	fs.Clear()
	if !opt.Sync {
		if l.LogEndOffset() != end || fileSize(t, segPath(dir, 0, ".log")) != size {
			t.Fatalf("failed append left LEO %d (was %d), file %d bytes (was %d)",
				l.LogEndOffset(), end, fileSize(t, segPath(dir, 0, ".log")), size)
		}
	}
	if _, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("append after failure: %v", err)
	}
	if err := l.Close(); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("close of a failed log: %v", err)
	}
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	got := mustRead(t, l2, 0)
	if opt.Sync {
		got = got[:len(want)] // the unsynced batch may survive; it is whole
	}
	if string(got) != string(want) {
		t.Fatalf("reopened log has %d bytes, want %d", len(got), len(want))
	}
	readAll(t, l2)
}

func TestAppendENOSPC(t *testing.T) {
	failedAppendLeavesNothing(t, errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Err: syscall.ENOSPC}, storage.AppendOptions{})
}

func TestAppendTornWrite(t *testing.T) {
	failedAppendLeavesNothing(t, errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Err: syscall.EIO, TornBytes: 30}, storage.AppendOptions{})
}

func TestAppendIndexWriteError(t *testing.T) {
	failedAppendLeavesNothing(t, errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".timeindex", Err: syscall.ENOSPC}, storage.AppendOptions{})
}

func TestAppendFsyncError(t *testing.T) {
	failedAppendLeavesNothing(t, errorfs.Fault{Op: errorfs.OpSync, PathSuffix: ".log", Err: syscall.EIO}, storage.AppendOptions{Sync: true})
}

func TestTornWriteThatCannotBeUndoneIsRecovered(t *testing.T) {
	dir := t.TempDir()
	fs := newErrorFS()
	l := openLog(t, dir, storage.Config{}, fs)
	appendBatches(t, l, 3, 2, 50, 0)
	want := mustRead(t, l, 0)
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", TornBytes: 40})
	fs.Inject(errorfs.Fault{Op: errorfs.OpTruncate, PathSuffix: ".log"})
	if _, err := l.Append(makeBatch(2, 50, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
		t.Fatal(err)
	}
	if got := mustRead(t, l, 0); string(got) != string(want) {
		t.Fatal("torn bytes are visible to readers")
	}
	// Crash; recovery drops the torn tail.
	l2 := openLog(t, dir, storage.Config{}, nil)
	defer l2.Close()
	if got := mustRead(t, l2, 0); string(got) != string(want) {
		t.Fatal("torn bytes survived recovery")
	}
}

func TestFlushErrorFailsLog(t *testing.T) {
	fs := newErrorFS()
	l := openLog(t, t.TempDir(), storage.Config{}, fs)
	appendBatches(t, l, 3, 2, 50, 0)
	flushed := l.FlushedOffset()
	fs.Inject(errorfs.Fault{Op: errorfs.OpSync, Times: 1})
	mustIs(t, l.Flush(), storage.ErrFailed)
	if l.FlushedOffset() != flushed {
		t.Fatalf("recovery point moved to %d after a failed fsync", l.FlushedOffset())
	}
	// fsync errors are not retried: the page cache may have dropped the data.
	mustIs(t, l.Flush(), storage.ErrFailed)
	if _, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
		t.Fatal(err)
	}
	// Reads still work.
	readAll(t, l)
}

func TestRollFailureWritesNothing(t *testing.T) {
	fs := newErrorFS()
	l := openLog(t, t.TempDir(), storage.Config{SegmentBytes: 300}, fs)
	defer l.Close()
	appendBatches(t, l, 1, 2, 100, 0)
	fs.Inject(errorfs.Fault{Op: errorfs.OpOpen, PathSuffix: ".log", Err: syscall.ENOSPC, Times: 1})
	if _, err := l.Append(makeBatch(2, 100, 0), storage.AppendOptions{}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append needing a roll: %v", err)
	}
	if l.LogEndOffset() != 2 || l.SegmentCount() != 1 {
		t.Fatalf("LEO %d segments %d", l.LogEndOffset(), l.SegmentCount())
	}
	// Nothing was written, so the log goes on.
	appendBatches(t, l, 2, 2, 100, 0)
	readAll(t, l)
}
