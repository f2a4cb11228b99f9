package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// indexFileLimit bounds how much of an index file is read: a segment of
// size bytes holds at most one entry per minimal batch, so anything longer
// is garbage and must not cost memory.
func indexFileLimit(size int64) int64 {
	return (size/recordbatch.HeaderSize + 1) * timeEntrySize
}

// scanState is the running state of a forward scan over a segment's batches,
// the same bookkeeping Append does, so a scan rebuilds exactly the index
// entries the appends made.
type scanState struct {
	pos        int64
	next       int64 // lowest base offset the next batch may have
	maxTs      int64
	bytesSince int64
	entries    []indexEntry
}

// add records the batch h found at st.pos, adding an index entry once an
// interval of bytes has passed since the previous one.
func (st *scanState) add(h recordbatch.Header, base, interval int64) {
	if st.bytesSince >= interval {
		st.entries = append(st.entries, indexEntry{rel: uint32(h.BaseOffset - base), pos: uint32(st.pos), ts: st.maxTs})
		st.bytesSince = 0
	}
	st.bytesSince += h.Size()
	st.maxTs = max(st.maxTs, h.MaxTimestamp)
	st.next = h.LastOffset() + 1
	st.pos += h.Size()
}

// load builds the segment's view. It keeps the longest valid prefix of the
// index files whose offsets are below trustBelow, checks that the last kept
// entry points at the batch it names, and scans batch headers from there to
// the end of the file, re-creating the entries after it. So a clean start
// reads only an index interval or so of log, a short or missing index is
// rebuilt, and recovery rescans only from the recovery point.
//
// With verify (recovery) every scanned batch's CRC is checked and the file is
// truncated at the first invalid batch; without it the scan reads headers
// only and the view simply ends at anything invalid, leaving the file alone.
func (s *segment) load(interval, trustBelow int64, verify bool) (truncated bool, err error) {
	f, err := s.logFile.acquire()
	if err != nil {
		return false, fmt.Errorf("open segment %d: %w", s.base, err)
	}
	defer s.logFile.release()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat segment %d: %w", s.base, err)
	}
	size := fi.Size()
	off, err := readSmallFile(s.fs, s.indexPath(), indexFileLimit(size))
	if err != nil {
		return false, fmt.Errorf("read index of segment %d: %w", s.base, err)
	}
	tim, err := readSmallFile(s.fs, s.timeIndexPath(), indexFileLimit(size))
	if err != nil {
		return false, fmt.Errorf("read time index of segment %d: %w", s.base, err)
	}
	entries := parseIndex(off, tim, size, max(trustBelow-s.base, 0))
	hdr := make([]byte, recordbatch.HeaderSize)
	st, kept := s.resume(f, entries, size, interval, hdr)
	if err := s.scan(f, &st, size, interval, hdr, verify); err != nil {
		return false, err
	}
	if st.pos < size && verify {
		if err := f.Truncate(st.pos); err != nil {
			return false, fmt.Errorf("truncate segment %d to %d: %w", s.base, st.pos, err)
		}
		truncated = true
	}
	stale := kept != len(st.entries) || len(off) != kept*offsetEntrySize || len(tim) != kept*timeEntrySize
	if stale && !s.deleted.Load() {
		if err := s.rewriteIndexFiles(st.entries, verify); err != nil {
			return truncated, err
		}
	}
	s.bytesSinceIndex = st.bytesSince
	s.view.Store(&segView{size: st.pos, entries: slices.Clip(st.entries), nextOffset: st.next, maxTs: st.maxTs})
	return truncated, nil
}

// resume returns where a scan starts given the trusted index entries: at
// the batch of the last entry, if it really starts there, forcing that
// entry to be re-created; else at the segment start with no entries. kept
// is how many entries of the files survive (-1: the files are wrong).
func (s *segment) resume(f File, entries []indexEntry, size, interval int64, hdr []byte) (st scanState, kept int) {
	n := len(entries)
	if n == 0 {
		return scanState{next: s.base, maxTs: -1}, 0
	}
	last := entries[n-1]
	h, err := s.readHeader(f, hdr, int64(last.pos), size)
	if err != nil || h.BaseOffset != s.base+int64(last.rel) {
		return scanState{next: s.base, maxTs: -1}, -1
	}
	return scanState{pos: int64(last.pos), next: h.BaseOffset, maxTs: last.ts, bytesSince: interval, entries: entries[:n-1]}, n
}

// scan walks batches from st.pos until size or the first invalid batch.
// Only I/O errors are returned; invalid data just ends the scan.
func (s *segment) scan(f File, st *scanState, size, interval int64, hdr []byte, verify bool) error {
	var body []byte
	for st.pos < size {
		h, err := s.readHeader(f, hdr, st.pos, size)
		if err == nil && (h.BaseOffset < st.next || h.LastOffset()-s.base > math.MaxInt32) {
			err = fmt.Errorf("%w: batch offset %d in segment %d does not follow %d", ErrCorrupt, h.BaseOffset, s.base, st.next)
		}
		if err == nil && verify {
			body = slices.Grow(body[:0], int(h.Size()))[:h.Size()]
			if _, err = f.ReadAt(body, st.pos); err == nil {
				_, err = recordbatch.Check(body)
			}
		}
		if errors.Is(err, ErrCorrupt) || errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st.add(h, s.base, interval)
	}
	return nil
}

// rewriteIndexFiles replaces both index files with entries; with durable
// (recovery) it fsyncs them, since a clean restart trusts them later.
func (s *segment) rewriteIndexFiles(entries []indexEntry, durable bool) error {
	write := func(path string, data []byte) error {
		f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(data, 0)
		if err == nil && durable {
			err = f.Sync()
		}
		return errors.Join(err, f.Close())
	}
	// Cached handles of the index files stay valid: O_TRUNC keeps the inode.
	if err := write(s.indexPath(), appendOffsetEntries(nil, entries)); err != nil {
		return fmt.Errorf("rewrite index of segment %d: %w", s.base, err)
	}
	if err := write(s.timeIndexPath(), appendTimeEntries(nil, entries)); err != nil {
		return fmt.Errorf("rewrite time index of segment %d: %w", s.base, err)
	}
	return nil
}

// readSmallFile reads a whole file, nil when missing, at most limit bytes.
func readSmallFile(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, min(fi.Size(), limit))
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}
