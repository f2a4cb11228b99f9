package storage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// EnforceRetention deletes the oldest closed segments whose newest record is
// older than RetentionTime, then more while the log is larger than
// RetentionBytes. The active segment is never deleted; the log start offset
// moves to the first remaining segment and is persisted before any file goes.
// When the active segment is older than SegmentMaxAge it is rolled first, so
// an idle partition's data can still expire.
func (l *Log) EnforceRetention(now time.Time) (deletedSegments int, err error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	cfg, closed := l.mu.cfg, l.mu.closed
	l.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	if a := l.active(); a.view.Load().size > 0 && now.Sub(a.created) >= cfg.SegmentMaxAge {
		if err := l.roll(now); err != nil {
			return 0, err
		}
	}
	segs := l.mu.segs // written only under writeMu, which we hold
	n, err := l.expiredPrefix(cfg, segs, now)
	if n == 0 {
		return 0, err
	}
	return n, errors.Join(err, l.deleteOldest(n, segs[n].base))
}

// expiredPrefix counts the oldest closed segments retention deletes.
// Expects writeMu.
func (l *Log) expiredPrefix(cfg Config, segs []*segment, now time.Time) (int, error) {
	var total int64
	for _, s := range segs {
		total += s.size()
	}
	for i, s := range segs[:len(segs)-1] {
		size := s.size()
		expired := false
		if cfg.RetentionTime >= 0 {
			ts, err := l.segmentTime(s, int64(cfg.IndexIntervalBytes))
			if err != nil {
				return i, err
			}
			expired = now.UnixMilli()-ts > cfg.RetentionTime.Milliseconds()
		}
		over := cfg.RetentionBytes >= 0 && total-size >= cfg.RetentionBytes
		if !expired && !over {
			return i, nil
		}
		total -= size
	}
	return len(segs) - 1, nil
}

// segmentTime is the newest timestamp in s (ms), or its file's modification
// time when its batches carry none.
func (l *Log) segmentTime(s *segment, interval int64) (int64, error) {
	v, err := s.ensureView(interval)
	if err != nil {
		return 0, err
	}
	if v.maxTs >= 0 {
		return v.maxTs, nil
	}
	fi, err := s.fs.Stat(s.logPath)
	if err != nil {
		return 0, fmt.Errorf("stat segment %d: %w", s.base, err)
	}
	return fi.ModTime().UnixMilli(), nil
}

// AdvanceStartOffset moves the log start offset to offset (DeleteRecords):
// reads below it fail with ErrOffsetOutOfRange and closed segments wholly
// below it are deleted. The new start is persisted first. Offsets at or
// below the current start are a no-op; above LogEndOffset an error.
func (l *Log) AdvanceStartOffset(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	start, end, segs, closed := l.mu.startOffset, l.mu.endOffset, l.mu.segs, l.mu.closed
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case offset > end:
		return fmt.Errorf("advance start offset to %d past log end %d: %w", offset, end, ErrOffsetOutOfRange)
	case offset <= start:
		return nil
	}
	n := 0
	for n < len(segs)-1 && segs[n+1].base <= offset {
		n++
	}
	return l.deleteOldest(n, offset)
}

// deleteOldest persists newStart as the log start offset, then drops the n
// oldest segments from the list and unlinks their files; reads in flight
// keep them open until they finish. Expects writeMu.
func (l *Log) deleteOldest(n int, newStart int64) error {
	if err := l.dropCleanMarker(); err != nil {
		return err
	}
	l.mu.Lock()
	newStart = max(newStart, l.mu.startOffset)
	l.mu.Unlock()
	if err := writeCheckpoint(l.fs, l.path(logStartFile), newStart); err != nil {
		return fmt.Errorf("persist log start offset: %w", err)
	}
	l.mu.Lock()
	victims := l.mu.segs[:n]
	l.mu.segs = slices.Clone(l.mu.segs[n:])
	l.mu.startOffset = newStart
	l.mu.Unlock()
	var errs []error
	for _, s := range victims {
		errs = append(errs, s.removeFiles())
		s.release()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete segments: %w", err)
	}
	return nil
}

// TruncateTo drops every batch at or above offset (a follower truncating to
// its leader). The cut falls on a batch boundary: the batch holding offset
// goes too, so LogEndOffset becomes that batch's base offset (offset itself
// when it is a batch boundary). Index entries above the cut go as well.
// Offsets at or above LogEndOffset are a no-op; below LogStartOffset an
// error.
func (l *Log) TruncateTo(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if err := l.truncateCheck(offset); err != nil || offset >= l.mu.endOffset {
		l.mu.Unlock()
		return err
	}
	// Hold the sync token so no fsync or checkpoint runs while the tail
	// changes under it.
	for l.mu.syncing {
		l.mu.syncCond.Wait()
	}
	l.mu.syncing = true
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	l.mu.Unlock()
	err := l.truncate(offset, interval)
	l.mu.Lock()
	l.mu.syncing = false
	l.mu.syncCond.Broadcast()
	if err != nil {
		l.failLocked(err)
		err = l.failedErr(err)
	}
	l.mu.Unlock()
	return err
}

// truncateCheck refuses truncation of a closed or failed log or below its
// start. Expects mu.
func (l *Log) truncateCheck(offset int64) error {
	switch {
	case l.mu.closed:
		return ErrClosed
	case l.mu.failed != nil:
		return l.failedErr(l.mu.failed)
	case offset < l.mu.startOffset:
		return fmt.Errorf("truncate to %d below log start %d: %w", offset, l.mu.startOffset, ErrOffsetOutOfRange)
	}
	return nil
}

// truncate does TruncateTo's work. Expects writeMu and the sync token.
func (l *Log) truncate(offset, interval int64) error {
	if err := l.dropCleanMarker(); err != nil {
		return err
	}
	segs := l.mu.segs
	i := segIndex(segs, offset)
	s := segs[i]
	s.unseal() // keep its view from now on: it becomes the active segment
	v, err := s.ensureView(interval)
	if err != nil {
		return err
	}
	hdr := make([]byte, recordbatch.HeaderSize)
	pos, newEnd, err := s.cutPoint(v, offset, hdr)
	if err != nil {
		return err
	}
	kept := slices.Clone(v.entries[:lookupCount(v.entries, pos)])
	if err := l.lowerCleanedTo(newEnd); err != nil {
		return err
	}
	// Publish the shorter log before touching files, so new reads stay
	// below the cut.
	l.mu.Lock()
	s.view.Store(&segView{size: pos, entries: kept, nextOffset: newEnd, maxTs: v.maxTs})
	l.mu.segs = slices.Clone(segs[:i+1])
	l.mu.endOffset = newEnd
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, newEnd)
	l.mu.Unlock()
	for _, d := range segs[i+1:] {
		err = errors.Join(err, d.removeFiles())
		d.release()
	}
	if err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return l.truncateSegment(s, pos, kept, interval)
}

// truncateSegment cuts s at pos and makes it the active segment again.
func (l *Log) truncateSegment(s *segment, pos int64, kept []indexEntry, interval int64) error {
	if err := s.logFile.with(func(f File) error { return f.Truncate(pos) }); err != nil {
		return fmt.Errorf("truncate segment %d to %d: %w", s.base, pos, err)
	}
	if err := s.trimTxnIndex(s.view.Load().nextOffset); err != nil {
		return err
	}
	if err := s.logFile.with(File.Sync); err != nil {
		return fmt.Errorf("fsync segment %d: %w", s.base, err)
	}
	if err := s.rewriteIndexFiles(kept, true); err != nil {
		return err
	}
	// Reload to get the exact max timestamp and index bookkeeping.
	if _, err := s.load(interval, math.MaxInt64, false); err != nil {
		return err
	}
	s.indexSynced = false // active again: the syncer must see it when sealed
	l.mu.Lock()
	rp := l.mu.recoveryPoint
	l.mu.Unlock()
	if err := l.checkpoint.write(rp); err != nil {
		l.logger.Warn("recovery point checkpoint not written", "err", err)
	}
	return l.syncDir()
}

// cutPoint returns the position of the batch holding offset and the log
// end a cut there leaves (the segment's end when no batch holds it).
func (s *segment) cutPoint(v *segView, offset int64, hdr []byte) (pos, newEnd int64, err error) {
	f, err := s.logFile.acquire()
	if err != nil {
		return 0, 0, fmt.Errorf("open segment %d: %w", s.base, err)
	}
	defer s.logFile.release()
	hs := headerScan{s: s, f: f, hdr: hdr, limit: v.size}
	defer hs.release()
	pos, found, err := s.seek(&hs, v, offset)
	if err != nil || !found {
		return pos, v.nextOffset, err
	}
	h, err := hs.header(pos)
	if err != nil {
		return 0, 0, err
	}
	return pos, h.BaseOffset, nil
}

// lookupCount is the number of entries below position pos.
func lookupCount(entries []indexEntry, pos int64) int {
	n := 0
	for n < len(entries) && int64(entries[n].pos) < pos {
		n++
	}
	return n
}
