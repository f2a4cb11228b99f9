package storage

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// segment is one .log file with its two index files.
//
// Readers never lock a segment: they take a reference (refs) while the
// Log's list still holds it, then read its immutable view. Deleting a
// segment unlinks its files at once but closes them only when the last
// reference goes, so a read in flight keeps working on the open file.
type segment struct {
	fs   FS
	base int64
	// logPath is the .log file; its handle and the index files' come
	// from the FileCache, open only while used or recently used.
	logPath  string
	logFile  *cachedFile
	idxFile  *cachedFile
	tidxFile *cachedFile
	refs     atomic.Int32 // 1 for the Log's list, +1 per reader or syncer
	deleted  atomic.Bool  // files unlinked: a lazy load must not recreate them
	// pinned holds the .log open from its deletion until the last
	// reference goes, so a read in flight never has to reopen an unlinked
	// file. Set once, by removeFiles under the writer's lock.
	pinned atomic.Bool
	// sealedSize is the size of a sealed segment whose view is not loaded.
	sealedSize atomic.Int64
	// sealed: not the active segment, so its view may be dropped by
	// sealedIndexCache. Changes under loadMu.
	sealed atomic.Bool
	recent atomic.Bool // used since the cache last looked (CLOCK bit)
	// Guarded by sealedIndexCache.mu.
	cacheElem *list.Element
	cacheCost int64

	// view is nil until loaded: sealed segments load lazily on first use,
	// so a clean start reads no index of them. Views are immutable; the
	// writer publishes a new one per append.
	view   atomic.Pointer[segView]
	loadMu sync.Mutex // serialises lazy loads

	// Owned by the writer (Log.writeMu) while the segment is active.
	bytesSinceIndex int64
	created         time.Time
	// indexDirty: index entries were written since the segment was
	// opened (Close then fsyncs the index files; otherwise they are as
	// durable as they were found or created empty).
	indexDirty bool

	// txn is the segment's aborted-transaction index (txnindex.go).
	txn segTxnIndex
	// keepTxnIndex: removeFiles leaves the .txnindex, which a cleaning
	// pass has just replaced with its group's merged entries. Owned by
	// writeMu.
	keepTxnIndex bool

	// indexSynced is owned by the syncer token (Log.mu.syncing): the
	// segment is sealed and its files are durable.
	indexSynced bool
}

// segView is what readers see of a segment. entries is append-only with
// respect to earlier views: a later view may share its backing array but
// never changes an element an earlier view can see.
type segView struct {
	size       int64 // bytes of whole, valid batches
	entries    []indexEntry
	nextOffset int64 // offset after the last batch; base when empty
	maxTs      int64 // largest batch maxTimestamp, -1 when none
}

func segmentPath(dir string, base int64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, ext))
}

// openSegment registers the .log of base with the file cache; with create
// it creates it empty (the handle stays cached), else it only stats it, so
// opening a log opens no segment file.
func openSegment(fsys FS, files *FileCache, dir string, base int64, create bool) (*segment, error) {
	s := &segment{fs: fsys, base: base, logPath: segmentPath(dir, base, ".log")}
	s.logFile = files.file(fsys, s.logPath, segmentFileFlag)
	s.idxFile = files.file(fsys, s.indexPath(), segmentFileFlag)
	s.tidxFile = files.file(fsys, s.timeIndexPath(), segmentFileFlag)
	s.refs.Store(1)
	if create {
		f, err := fsys.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open segment %d: %w", base, err)
		}
		files.opened.Add(1)
		s.logFile.adopt(f)
		s.view.Store(&segView{nextOffset: base, maxTs: -1})
		return s, nil
	}
	fi, err := fsys.Stat(s.logPath)
	if err != nil {
		return nil, fmt.Errorf("stat segment %d: %w", base, err)
	}
	s.sealedSize.Store(fi.Size())
	return s, nil
}

func (s *segment) indexPath() string     { return s.logPath[:len(s.logPath)-4] + ".index" }
func (s *segment) timeIndexPath() string { return s.logPath[:len(s.logPath)-4] + ".timeindex" }

// tryAcquire takes a reference unless the segment is already closed.
func (s *segment) tryAcquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the files.
func (s *segment) release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	sealedIndexCache.remove(s)
	if s.pinned.Load() {
		s.logFile.release()
	}
	s.logFile.forget()
	s.idxFile.forget()
	s.tidxFile.forget()
}

// removeFiles unlinks the segment's files. Its .log stays open (pinned)
// for the readers still holding the segment. Expects writeMu.
func (s *segment) removeFiles() error {
	if !s.pinned.Load() {
		if _, err := s.logFile.acquire(); err == nil {
			s.pinned.Store(true)
		}
	}
	s.deleted.Store(true)
	var errs []error
	paths := []string{s.logPath, s.indexPath(), s.timeIndexPath()}
	if !s.keepTxnIndex {
		paths = append(paths, s.txnIndexPath())
	}
	for _, p := range paths {
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// createIndexFiles creates both index files empty (a new segment must not
// inherit a stale index); their handles stay cached for the writer.
func (s *segment) createIndexFiles() error {
	for _, cf := range []*cachedFile{s.idxFile, s.tidxFile} {
		f, err := s.fs.OpenFile(cf.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("create index of segment %d: %w", s.base, err)
		}
		cf.cache.opened.Add(1)
		cf.adopt(f)
	}
	return s.removeTxnIndex()
}

// size is the segment's byte size without forcing a lazy load.
func (s *segment) size() int64 {
	if v := s.view.Load(); v != nil {
		return v.size
	}
	return s.sealedSize.Load()
}

// ensureView returns the segment's view, loading a sealed segment's
// indexes on first use. A lazy load trusts the data (it is below the
// recovery point) and never truncates; it stops at anything invalid.
func (s *segment) ensureView(interval int64) (*segView, error) {
	if v := s.view.Load(); v != nil {
		if !s.recent.Load() {
			s.recent.Store(true)
		}
		return v, nil
	}
	v, loaded, err := s.loadView(interval)
	if loaded {
		sealedIndexCache.add(s, v)
	}
	return v, err
}

// loadView loads the view unless another caller just did; loaded reports
// whether this call did the work.
func (s *segment) loadView(interval int64) (v *segView, loaded bool, err error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if v := s.view.Load(); v != nil {
		return v, false, nil
	}
	if _, err := s.load(interval, math.MaxInt64, false); err != nil {
		return nil, false, err
	}
	return s.view.Load(), s.sealed.Load(), nil
}

// readHeader reads and parses the batch header at pos, checking that the
// whole batch lies below limit.
func (s *segment) readHeader(f File, buf []byte, pos, limit int64) (recordbatch.Header, error) {
	if limit-pos < recordbatch.HeaderSize {
		return recordbatch.Header{}, fmt.Errorf("%w: %d bytes left at position %d of segment %d", ErrCorrupt, limit-pos, pos, s.base)
	}
	if _, err := f.ReadAt(buf[:recordbatch.HeaderSize], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return recordbatch.Header{}, fmt.Errorf("%w: segment %d ends before position %d", ErrCorrupt, s.base, pos+recordbatch.HeaderSize)
		}
		return recordbatch.Header{}, fmt.Errorf("read segment %d at %d: %w", s.base, pos, err)
	}
	return s.parseHeader(buf, pos, limit)
}

// parseHeader parses the batch header in buf, read from pos, checking that
// the whole batch lies below limit.
func (s *segment) parseHeader(buf []byte, pos, limit int64) (recordbatch.Header, error) {
	h, err := recordbatch.ParseHeader(buf)
	if err != nil {
		return h, fmt.Errorf("segment %d position %d: %w", s.base, pos, err)
	}
	if h.Size() > limit-pos {
		return h, fmt.Errorf("%w: batch of %d bytes at position %d of segment %d passes its end %d", ErrCorrupt, h.Size(), pos, s.base, limit)
	}
	return h, nil
}

// seek returns the position of the first batch whose last offset is at or
// above offset: a binary search in the sparse index, then a forward scan
// of batch headers (at most about one index interval), through hs, whose
// limit is v.size. found is false when the segment ends first.
func (s *segment) seek(hs *headerScan, v *segView, offset int64) (pos int64, found bool, err error) {
	pos = lookupOffset(v.entries, offset-s.base)
	for pos < v.size {
		h, err := hs.header(pos)
		if err != nil {
			return pos, false, err
		}
		if h.LastOffset() >= offset {
			return pos, true, nil
		}
		pos += h.Size()
	}
	return pos, false, nil
}

// seekTime returns the base offset of the first batch at or after position
// lookupTime(ts) whose maxTimestamp is >= ts and whose last offset is >=
// minOffset, or -1.
func (s *segment) seekTime(f File, v *segView, ts, minOffset int64, hdr []byte) (int64, error) {
	for pos := lookupTime(v.entries, ts); pos < v.size; {
		h, err := s.readHeader(f, hdr, pos, v.size)
		if err != nil {
			return -1, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			return max(h.BaseOffset, minOffset), nil
		}
		pos += h.Size()
	}
	return -1, nil
}

// readResult is what readInto found in one segment.
type readResult struct {
	first   int64 // base offset of the first batch read
	batches int
	next    int64 // offset after the last batch read
	toEnd   bool  // every batch up to the segment's end was taken
}

// readInto appends to dst the whole batches from pos on, stopping at limit,
// after budget bytes, or before the first batch whose last offset is >=
// maxOffset. With minOne the first batch is taken even over budget. It reads
// the budget's worth of bytes in one pread and trims the partial tail; when
// the window hs read to find pos already holds them (a consumer at the
// tail asks for little), it copies them from there instead.
func (s *segment) readInto(f File, hs *headerScan, dst []byte, pos, limit int64, budget int, minOne bool, maxOffset int64) ([]byte, readResult, error) {
	r := readResult{next: -1}
	want := max(min(limit-pos, int64(budget)), 0)
	start := len(dst)
	dst = slices.Grow(dst, int(want))[:start+int(want)]
	var got int
	var err error
	if hs != nil && pos >= hs.at && pos+want <= hs.at+int64(len(hs.buf)) {
		got = copy(dst[start:], hs.buf[pos-hs.at:])
	} else {
		got, err = f.ReadAt(dst[start:], pos)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return dst[:start], r, fmt.Errorf("read segment %d at %d: %w", s.base, pos, err)
	}
	buf, used, stopped := dst[start:start+got], 0, false
	for used < len(buf) {
		h, err := recordbatch.ParseHeader(buf[used:])
		if err != nil || h.Size() > int64(len(buf)-used) {
			break
		}
		if h.LastOffset() >= maxOffset {
			stopped = true
			break
		}
		if r.batches == 0 {
			r.first = h.BaseOffset
		}
		used += int(h.Size())
		r.batches++
		r.next = h.LastOffset() + 1
	}
	r.toEnd = !stopped && pos+int64(used) == limit
	if r.batches == 0 && minOne && !stopped && pos < limit {
		return s.readOne(f, dst[:start], pos, limit, maxOffset)
	}
	return dst[:start+used], r, nil
}

// scanBatches is readInto without the data: it walks the batch headers
// from pos and returns how many bytes of whole batches readInto would
// have appended. Small batches' headers are read a window at a time
// (one pread per headerWindowBytes, not per batch); a large batch costs
// the read of its header only.
func (s *segment) scanBatches(hs *headerScan, pos int64, budget int, minOne bool, maxOffset int64) (int, readResult, error) {
	r := readResult{next: -1}
	limit := hs.limit
	used, stopped := int64(0), false
	for pos+used < limit {
		h, err := hs.header(pos + used)
		if err != nil {
			if r.batches == 0 && minOne {
				return 0, r, err // readOne fails the same way
			}
			break // readInto stops at a bad tail without an error too
		}
		if h.LastOffset() >= maxOffset {
			stopped = true
			break
		}
		if used+h.Size() > int64(budget) && !(minOne && r.batches == 0) {
			break
		}
		if r.batches == 0 {
			r.first = h.BaseOffset
		}
		used += h.Size()
		r.batches++
		r.next = h.LastOffset() + 1
	}
	r.toEnd = !stopped && pos+used == limit
	return int(used), r, nil
}

// headerWindowBytes is how much of a segment scanBatches reads at once
// while batches are small.
const headerWindowBytes = 16 << 10

var headerWindows = sync.Pool{New: func() any { b := make([]byte, headerWindowBytes); return &b }}

// headerScan reads batch headers forward through a segment, below limit.
type headerScan struct {
	s      *segment
	f      File   // the segment's .log, held by the caller
	hdr    []byte // recordbatch.HeaderSize bytes, for a lone header
	window *[]byte
	buf    []byte // the segment's bytes from at
	at     int64
	limit  int64
	small  bool // the last batch was small: read a window next time
}

// header parses the batch header at pos, as readHeader does.
func (hs *headerScan) header(pos int64) (recordbatch.Header, error) {
	if hs.limit-pos < recordbatch.HeaderSize {
		return recordbatch.Header{}, fmt.Errorf("%w: %d bytes left at position %d of segment %d", ErrCorrupt, hs.limit-pos, pos, hs.s.base)
	}
	if pos < hs.at || pos+recordbatch.HeaderSize > hs.at+int64(len(hs.buf)) {
		if err := hs.fill(pos); err != nil {
			return recordbatch.Header{}, err
		}
	}
	h, err := hs.s.parseHeader(hs.buf[pos-hs.at:], pos, hs.limit)
	if err != nil {
		return h, err
	}
	hs.small = h.Size() < headerWindowBytes/4
	return h, nil
}

// fill reads from pos: a window after small batches, else one header.
func (hs *headerScan) fill(pos int64) error {
	buf := hs.hdr[:recordbatch.HeaderSize]
	if hs.small {
		if hs.window == nil {
			hs.window = headerWindows.Get().(*[]byte)
		}
		buf = (*hs.window)[:min(int64(headerWindowBytes), hs.limit-pos)]
	}
	n, err := hs.f.ReadAt(buf, pos)
	if err != nil && !(errors.Is(err, io.EOF) && n >= recordbatch.HeaderSize) {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: segment %d ends before position %d", ErrCorrupt, hs.s.base, pos+recordbatch.HeaderSize)
		}
		return fmt.Errorf("read segment %d at %d: %w", hs.s.base, pos, err)
	}
	hs.buf, hs.at = buf[:n], pos
	return nil
}

func (hs *headerScan) release() {
	if hs.window != nil {
		headerWindows.Put(hs.window)
	}
}

// readOne appends the single batch at pos, whatever its size (KIP-74).
func (s *segment) readOne(f File, dst []byte, pos, limit, maxOffset int64) ([]byte, readResult, error) {
	r := readResult{next: -1}
	h, err := s.readHeader(f, make([]byte, recordbatch.HeaderSize), pos, limit)
	if err != nil || h.LastOffset() >= maxOffset {
		return dst, r, err
	}
	start := len(dst)
	dst = slices.Grow(dst, int(h.Size()))[:start+int(h.Size())]
	if _, err := f.ReadAt(dst[start:], pos); err != nil {
		return dst[:start], r, fmt.Errorf("read segment %d at %d: %w", s.base, pos, err)
	}
	r.first, r.batches, r.next, r.toEnd = h.BaseOffset, 1, h.LastOffset()+1, pos+h.Size() == limit
	return dst, r, nil
}
