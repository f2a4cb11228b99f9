package storage

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Append writes one or more concatenated record batches (magic 2) at the end
// of the log. It validates every batch first (length, magic, CRC,
// lastOffsetDelta, recordCount, MaxBatchBytes, offsets with KeepOffsets) and
// writes nothing when any is invalid.
//
// Append MODIFIES batches in place: unless KeepOffsets, each batch's
// baseOffset is rewritten to the offset assigned from LogEndOffset, its
// partitionLeaderEpoch to opt.LeaderEpoch, and with LogAppendTime its
// attributes, maxTimestamp and CRC. The caller may reuse the slice once
// Append returns.
//
// A write error fails the log (ErrFailed): nothing of the append is visible
// and every later append is refused. With opt.Sync, Append returns once the
// batches are fsynced, sharing fsyncs with concurrent Sync appends.
func (l *Log) Append(batches []byte, opt AppendOptions) (AppendResult, error) {
	l.writeMu.Lock()
	res, flushAt, err := l.appendLocked(batches, opt)
	l.writeMu.Unlock()
	if err != nil {
		return res, err
	}
	if opt.Sync {
		flushAt = res.LastOffset + 1
	}
	if flushAt > 0 {
		if err := l.syncTo(flushAt); err != nil {
			return res, err
		}
	}
	return res, nil
}

// appendLocked validates, stamps and writes the batches and publishes them.
// It returns the offset to fsync up to when FlushMessages calls for it.
// Expects writeMu.
func (l *Log) appendLocked(b []byte, opt AppendOptions) (AppendResult, int64, error) {
	res := AppendResult{LogAppendTime: -1, MaxTimestamp: -1}
	l.mu.Lock()
	cfg, end, failed, closed := l.mu.cfg, l.mu.endOffset, l.mu.failed, l.mu.closed
	l.mu.Unlock()
	switch {
	case closed:
		return res, 0, ErrClosed
	case failed != nil:
		return res, 0, l.failedErr(failed)
	}
	last, records, err := validateAppend(b, cfg, end, opt)
	if err != nil {
		return res, 0, err
	}
	if err := l.dropCleanMarker(); err != nil {
		return res, 0, err
	}
	now := l.now()
	if err := l.maybeRoll(cfg, now, int64(len(b)), last); err != nil {
		return res, 0, err
	}
	active := l.active()
	v := active.view.Load()
	nv, bytesSince := l.stamp(b, active, v, opt, int64(cfg.IndexIntervalBytes), now, &res)
	if err := l.write(active, v, b); err != nil {
		return res, 0, err
	}
	res.BaseOffset, res.LastOffset, res.Records = end, last, records
	if opt.KeepOffsets {
		res.BaseOffset = int64(binary.BigEndian.Uint64(b))
	}
	active.bytesSinceIndex = bytesSince
	l.mu.Lock()
	defer l.mu.Unlock()
	active.view.Store(nv)
	l.mu.endOffset = last + 1
	if l.mu.firstUnflushed.IsZero() {
		l.mu.firstUnflushed = now
	}
	if cfg.FlushMessages > 0 && l.mu.endOffset-l.mu.recoveryPoint >= cfg.FlushMessages {
		return res, l.mu.endOffset, nil
	}
	return res, 0, nil
}

// validateAppend checks every batch and returns the last offset the append
// will hold and its record count.
func validateAppend(b []byte, cfg Config, end int64, opt AppendOptions) (last, records int64, err error) {
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("append: %w: no batches", ErrCorrupt)
	}
	if len(b) > math.MaxInt32 {
		return 0, 0, fmt.Errorf("append of %d bytes: %w", len(b), ErrBatchTooLarge)
	}
	next := end
	for pos := 0; pos < len(b); {
		h, err := recordbatch.CheckFraming(b[pos:], !opt.ChecksumVerified)
		if err != nil {
			return 0, 0, fmt.Errorf("append: batch at byte %d: %w", pos, err)
		}
		if cfg.MaxBatchBytes > 0 && h.Size() > int64(cfg.MaxBatchBytes) {
			return 0, 0, fmt.Errorf("append: batch of %d bytes over %d: %w", h.Size(), cfg.MaxBatchBytes, ErrBatchTooLarge)
		}
		if opt.KeepOffsets {
			if h.BaseOffset < next { // forward gaps are a compacted leader's
				return 0, 0, fmt.Errorf("append: batch at offset %d, log end %d: %w", h.BaseOffset, next, ErrInvalidOffsets)
			}
			next = h.LastOffset() + 1
		} else {
			if h.RecordCount < 1 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
				return 0, 0, fmt.Errorf("append: %w: batch at byte %d has %d records and lastOffsetDelta %d",
					ErrCorrupt, pos, h.RecordCount, h.LastOffsetDelta)
			}
			next += int64(h.LastOffsetDelta) + 1
		}
		records += int64(h.RecordCount)
		pos += int(h.Size())
	}
	return next - 1, records, nil
}

// maybeRoll starts a new segment when the active one would grow past
// SegmentBytes, is older than SegmentMaxAge, or could not index last with a
// 32-bit relative offset. Expects writeMu.
func (l *Log) maybeRoll(cfg Config, now time.Time, n, last int64) error {
	a := l.active()
	v := a.view.Load()
	if v.size == 0 {
		a.created = now // age counts from the first batch
		return nil
	}
	if v.size+n > cfg.SegmentBytes || now.Sub(a.created) >= cfg.SegmentMaxAge || last-a.base > math.MaxInt32 {
		return l.roll(now)
	}
	return nil
}

// roll creates a new active segment at the log end. The syncer fsyncs the
// old segment's files later. Expects writeMu.
func (l *Log) roll(now time.Time) error {
	if err := l.dropCleanMarker(); err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	base := l.mu.endOffset // written only under writeMu, which we hold
	s, err := openSegment(l.fs, l.files, l.dir, base, true)
	if err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	if err := s.createIndexFiles(); err != nil {
		s.removeFiles()
		s.release()
		return fmt.Errorf("roll: %w", err)
	}
	s.created = now
	old := l.active()
	l.mu.Lock()
	l.mu.segs = append(l.mu.segs[:len(l.mu.segs):len(l.mu.segs)], s)
	l.mu.dirDirty = true
	l.mu.Unlock()
	old.seal(old.view.Load())
	if l.onRoll != nil {
		l.onRoll(base)
	}
	return nil
}

// stamp rewrites the batches' offsets, epoch and append time, fills res,
// and computes the view the segment will have once they are written, with
// its new index entries (left in l.newEntries). Expects writeMu.
func (l *Log) stamp(b []byte, seg *segment, v *segView, opt AppendOptions, interval int64, now time.Time, res *AppendResult) (*segView, int64) {
	next, ms := v.nextOffset, now.UnixMilli()
	bytesSince, maxTs := seg.bytesSinceIndex, v.maxTs
	l.newEntries = l.newEntries[:0]
	for pos := 0; pos < len(b); {
		h := recordbatch.ReadHeader(b[pos:]) // checked by validateAppend
		size := int(h.Size())
		batch := b[pos : pos+size]
		if !opt.KeepOffsets {
			recordbatch.SetBaseOffset(batch, next)
			recordbatch.SetLeaderEpoch(batch, opt.LeaderEpoch)
			h.BaseOffset = next
			if opt.LogAppendTime {
				recordbatch.SetLogAppendTime(batch, ms)
				h.MaxTimestamp, res.LogAppendTime = ms, ms
			}
		}
		base, batchMaxTs := h.BaseOffset, h.MaxTimestamp
		if bytesSince >= interval {
			l.newEntries = append(l.newEntries, indexEntry{rel: uint32(base - seg.base), pos: uint32(v.size + int64(pos)), ts: maxTs})
			bytesSince = 0
		}
		bytesSince += int64(size)
		maxTs = max(maxTs, batchMaxTs)
		res.MaxTimestamp = max(res.MaxTimestamp, batchMaxTs)
		next = h.LastOffset() + 1
		pos += size
	}
	nv := &segView{size: v.size + int64(len(b)), entries: v.entries, nextOffset: next, maxTs: maxTs}
	if len(l.newEntries) > 0 {
		// Appending past len never touches what earlier views can see.
		nv.entries = append(v.entries, l.newEntries...)
	}
	return nv, bytesSince
}

// write puts the batches and their new index entries on disk at the end of
// the segment. On error it truncates back what it can and fails the log.
// Expects writeMu.
func (l *Log) write(seg *segment, v *segView, b []byte) error {
	n := int64(len(v.entries))
	f, err := seg.logFile.acquire()
	if err == nil {
		if _, err = f.WriteAt(b, v.size); err != nil {
			f.Truncate(v.size) // best effort: no torn bytes for a reader or a restart
		}
		seg.logFile.release()
	}
	if err == nil && len(l.newEntries) > 0 {
		seg.indexDirty = true
		l.encoded = appendOffsetEntries(l.encoded[:0], l.newEntries)
		err = writeIndex(seg.idxFile, l.encoded, n*offsetEntrySize)
		if err == nil {
			l.encoded = appendTimeEntries(l.encoded[:0], l.newEntries)
			err = writeIndex(seg.tidxFile, l.encoded, n*timeEntrySize)
		}
		if err != nil {
			seg.logFile.with(func(f File) error { return f.Truncate(v.size) })
			truncateIndex(seg.idxFile, n*offsetEntrySize)
			truncateIndex(seg.tidxFile, n*timeEntrySize)
		}
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("append to segment %d at %d: %w", seg.base, v.size, err)
	l.mu.Lock()
	l.failLocked(err)
	l.mu.Unlock()
	return l.failedErr(err)
}

// writeIndex writes index entries at off, creating the file when missing
// (a log opened without its index files).
func writeIndex(cf *cachedFile, b []byte, off int64) error {
	f, err := cf.acquireFlag(os.O_CREATE)
	if err != nil {
		return err
	}
	defer cf.release()
	_, err = f.WriteAt(b, off)
	return err
}

func truncateIndex(cf *cachedFile, size int64) {
	cf.with(func(f File) error { return f.Truncate(size) })
}
