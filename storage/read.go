package storage

import (
	"fmt"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// ReadResult is what Read returns.
type ReadResult struct {
	// Data is dst with the whole batches appended (append semantics:
	// Data[len(dst):] are the batches); just dst with ChunksOnly.
	Data []byte
	// Chunks say where the appended bytes lie on disk, in order, for
	// sendfile. A chunk's file may be deleted by retention right after the
	// read; Data stays valid regardless.
	Chunks []Chunk
	// Batches is the number of batches returned.
	Batches int
	// NextOffset is the offset after the last batch returned (the offset
	// to read next), or the requested offset when none was.
	NextOffset int64
	// LogStartOffset and LogEndOffset are the log's bounds when the read
	// began.
	LogStartOffset int64
	LogEndOffset   int64
}

// Read appends to dst the whole batches from the one holding opt.Offset on,
// within opt.MaxBytes (see ReadOptions), crossing segments as needed.
// Reading at the log end returns nothing and no error; below the start or
// above the end it returns ErrOffsetOutOfRange.
//
// Cost: a binary search over segments, one over the sparse index, a forward
// scan of about one index interval of batch headers, then one pread per
// segment touched. No lock is held during disk reads.
func (l *Log) Read(opt ReadOptions, dst []byte) (ReadResult, error) {
	res := ReadResult{Data: dst, NextOffset: opt.Offset}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	start, end, segs := l.mu.startOffset, l.mu.endOffset, l.mu.segs
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	res.LogStartOffset, res.LogEndOffset = start, end
	if opt.Offset < start || opt.Offset > end {
		l.mu.Unlock()
		return res, fmt.Errorf("read at %d, log holds [%d, %d): %w", opt.Offset, start, end, ErrOffsetOutOfRange)
	}
	maxOffset := end // a view may already show bytes past end; skip them
	if opt.MaxOffset > 0 {
		maxOffset = min(maxOffset, opt.MaxOffset)
	}
	if opt.Offset >= maxOffset {
		l.mu.Unlock()
		return res, nil
	}
	i := segIndex(segs, opt.Offset)
	segs[i].refs.Add(1) // in the list, so alive
	l.mu.Unlock()

	hdr := make([]byte, recordbatch.HeaderSize)
	budget := opt.MaxBytes
	for k, s := range segs[i:] {
		if k > 0 && !s.tryAcquire() {
			break // deleted meanwhile: return what we have
		}
		more, err := l.readSegment(&res, s, opt, maxOffset, interval, &budget, hdr, k == 0, i+k == len(segs)-1)
		s.release()
		if err != nil || !more {
			return res, err
		}
	}
	return res, nil
}

// readSegment reads from one segment into res; more reports whether the
// read should go on with the next segment (last: none follows).
func (l *Log) readSegment(res *ReadResult, s *segment, opt ReadOptions, maxOffset, interval int64, budget *int, hdr []byte, first, last bool) (more bool, err error) {
	v, err := s.ensureView(interval)
	if err != nil {
		return false, err
	}
	f, err := s.logFile.acquire()
	if err != nil {
		return false, fmt.Errorf("open segment %d: %w", s.base, err)
	}
	defer s.logFile.release()
	// Headers are read a window at a time from the start: the seek's
	// window usually holds the batches that follow, and the read copies
	// them from it.
	hs := headerScan{s: s, f: f, hdr: hdr, limit: v.size, small: true}
	defer hs.release()
	var pos int64
	if first {
		found := false
		if pos, found, err = s.seek(&hs, v, opt.Offset); err != nil || !found {
			return err == nil, err
		}
	}
	minOne := opt.MinOneBatch && res.Batches == 0
	var (
		n    int
		data []byte
		r    readResult
	)
	// Only a read that starts in the last segment copies (copySmall), so
	// one read's result is either all in Data or all in Chunks.
	if opt.ChunksOnly && !copySmall(opt, first, last, v.size-pos) {
		n, r, err = s.scanBatches(&hs, pos, *budget, minOne, maxOffset)
		data = res.Data
	} else {
		before := len(res.Data)
		data, r, err = s.readInto(f, &hs, res.Data, pos, v.size, *budget, minOne, maxOffset)
		n = len(data) - before
	}
	if err != nil {
		return false, err
	}
	if r.batches > 0 {
		res.Data = data
		res.Chunks = append(res.Chunks, Chunk{fs: s.fs, path: s.logPath, pos: pos, size: n, base: r.first})
		res.Batches += r.batches
		res.NextOffset = r.next
		*budget -= n
	}
	return r.toEnd && *budget > 0, nil
}

// copySmall says whether a ChunksOnly read copies after all
// (ReadOptions.CopyBelow): it starts in the log's last segment, which
// holds fewer than CopyBelow bytes (left) from the read position on, so
// no result can be larger.
func copySmall(opt ReadOptions, first, last bool, left int64) bool {
	return first && last && left < int64(opt.CopyBelow)
}

// OffsetForTimestamp returns the base offset of the first batch whose
// maxTimestamp is >= ts (not below the log start offset), or -1 when none
// is. It skips segments whose newest timestamp is older, then uses the time
// index and a short scan. Kafka's special timestamps (-1 latest, -2
// earliest) are the caller's: use LogEndOffset and LogStartOffset.
func (l *Log) OffsetForTimestamp(ts int64) (int64, error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return -1, ErrClosed
	}
	start, segs := l.mu.startOffset, l.mu.segs
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	for _, s := range segs {
		s.refs.Add(1)
	}
	l.mu.Unlock()
	defer func() {
		for _, s := range segs {
			s.release()
		}
	}()
	hdr := make([]byte, recordbatch.HeaderSize)
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= start {
			continue
		}
		v, err := s.ensureView(interval)
		if err != nil {
			return -1, err
		}
		if v.maxTs < ts {
			continue
		}
		off, err := s.seekTimeOpen(v, ts, start, hdr)
		if err != nil || off >= 0 {
			return off, err
		}
	}
	return -1, nil
}

// seekTimeOpen is seekTime on the segment's file, opened for the call.
func (s *segment) seekTimeOpen(v *segView, ts, minOffset int64, hdr []byte) (int64, error) {
	f, err := s.logFile.acquire()
	if err != nil {
		return -1, fmt.Errorf("open segment %d: %w", s.base, err)
	}
	defer s.logFile.release()
	return s.seekTime(f, v, ts, minOffset, hdr)
}
