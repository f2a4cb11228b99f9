package storage

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// A log fails on its first write or fsync error (ENOSPC, EIO): it refuses
// appends from then on, because after a failed fsync it cannot know what the
// disk holds, and serves reads of what it had published. Recover is the way
// back without a restart: it runs the same recovery a restart after a crash
// runs (rescan from the recovery point, drop a torn or corrupt tail, rebuild
// the indexes, fsync what it keeps), so what a restart would keep and only
// that is served afterwards.

// probeFile is written and removed by Recover to test that the directory
// takes writes again. Its .tmp suffix makes Open remove a leftover.
const probeFile = "write-probe.tmp"

// probeBytes is one page: a directory that cannot take this much is not
// worth reopening yet.
const probeBytes = 4096

// Failure returns the error that failed the log, or nil when it takes
// appends (also once closed).
func (l *Log) Failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.failed
}

// Recover reopens a failed log in place, so that it takes appends again,
// once its directory is writable: it first writes, fsyncs and removes a
// probe file, then recovers the log from disk as Open does after a crash
// and swaps the recovered segments in. Reads in flight finish on the old
// files. recovered is false on a log that had not failed (nothing done);
// on error the log stays failed (with its first cause) and Recover may be
// called again.
func (l *Log) Recover() (recovered bool, err error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	cfg, failed, closed := l.mu.cfg, l.mu.failed, l.mu.closed
	l.mu.Unlock()
	switch {
	case closed:
		return false, ErrClosed
	case failed == nil:
		return false, nil
	}
	if err := l.probeWritable(); err != nil {
		return false, fmt.Errorf("recover log %s: directory not writable: %w", l.dir, err)
	}
	fresh := &Log{dir: l.dir, fs: l.fs, files: l.files, logger: l.logger, now: l.now, onFlush: l.onFlush, onRoll: l.onRoll}
	fresh.mu.cfg = cfg
	fresh.mu.syncCond.L = &fresh.mu.Mutex
	if err := fresh.load(); err != nil {
		return false, fmt.Errorf("recover log %s: %w", l.dir, err)
	}
	before, after := l.adopt(fresh)
	l.logger.Info("log recovered; taking appends again", "after", failed,
		"log_end_offset_before", before, "log_end_offset", after)
	return true, nil
}

// probeWritable writes one page to a new file in the log's directory,
// fsyncs and removes it. Expects writeMu.
func (l *Log) probeWritable() error {
	path := l.path(probeFile)
	f, err := l.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close(), l.fs.Remove(path))
	return err
}

// adopt replaces l's segments and offsets with those of fresh, a log just
// opened on the same directory, clears the failure and releases the old
// segments. It returns the log end offsets before and after. Expects
// writeMu; no fsync can be running, since a failed log starts none.
func (l *Log) adopt(fresh *Log) (before, after int64) {
	l.mu.Lock()
	for l.mu.syncing {
		l.mu.syncCond.Wait()
	}
	old, oldCheckpoint := l.mu.segs, l.checkpoint
	before = l.mu.endOffset
	l.mu.segs = fresh.mu.segs
	l.mu.startOffset = fresh.mu.startOffset
	l.mu.endOffset = fresh.mu.endOffset
	l.mu.recoveryPoint = fresh.mu.recoveryPoint
	l.mu.firstUnflushed = time.Time{}
	l.mu.dirDirty = false
	l.mu.failed = nil
	l.checkpoint = fresh.checkpoint
	after = l.mu.endOffset
	l.mu.Unlock()
	for _, s := range old {
		s.release()
	}
	oldCheckpoint.close()
	return before, after
}
