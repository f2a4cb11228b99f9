package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// cleanerCheckpointFile holds the log's first dirty offset: everything
// below it has been cleaned at least once (Kafka keeps the same value per
// data directory in cleaner-offset-checkpoint).
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// Errors of a cleaning pass.
var (
	// ErrMapTooSmall: the dedupe map cannot hold even one batch's keys.
	ErrMapTooSmall = errors.New("cleaner offset map too small for one batch")
	// ErrCleanStopped: CleanOptions.Stop closed during the pass.
	ErrCleanStopped = errors.New("cleaning pass stopped")
)

// RecordCodec is what the cleaner needs of the records inside a batch,
// which storage otherwise treats as opaque bytes. The broker passes
// server/records.Cleaner; storage never imports server/.
type RecordCodec interface {
	// Records calls fn for each record of batch in offset order; key is
	// nil for a keyless record and valid only during the call.
	Records(batch []byte, fn func(offset int64, key []byte, null bool)) error
	// Filter appends to dst a copy of batch with only the records keep
	// accepts (called once per record, in offset order), base and last
	// offsets, producer fields and codec unchanged, and returns how many
	// it kept (0: dst unextended). deleteHorizon >= 0 stamps the batch
	// with that KIP-534 delete horizon.
	Filter(dst, batch []byte, keep func(offset int64) bool, deleteHorizon int64) ([]byte, int, error)
}

// BatchAction is what a pass does with one batch before looking at its
// records: the classification step where transactions plug in (aborted
// data dropped whole, markers kept until their horizon) without a second
// cleaner.
type BatchAction int

const (
	// CleanRecords dedupes the batch's records by key (data batches).
	CleanRecords BatchAction = iota
	// KeepBatch keeps the batch untouched and keeps its keys out of the
	// map (control batches, for now).
	KeepBatch
	// DropBatch removes the whole batch.
	DropBatch
)

// DefaultClassify keeps control batches whole and cleans the rest.
func DefaultClassify(h recordbatch.Header) BatchAction {
	if h.IsControl() {
		return KeepBatch
	}
	return CleanRecords
}

// CleanOptions are one pass's inputs, from the broker's cleaner.
type CleanOptions struct {
	Codec RecordCodec
	// Map is the caller's dedupe map (one per cleaner goroutine), reset
	// by the pass.
	Map *OffsetMap
	// UpperBound: no segment holding an offset at or above it is cleaned
	// (the high watermark; later the last stable offset).
	UpperBound int64
	// MinCompactionLag: no segment holding a record newer than this is
	// cleaned (min.compaction.lag.ms).
	MinCompactionLag time.Duration
	// DeleteRetention: how long a tombstone stays after the pass that
	// first cleaned past it (delete.retention.ms).
	DeleteRetention time.Duration
	// Throttle, when set, is called with each count of bytes read or
	// written and may block (log.cleaner.io.max.bytes.per.second).
	Throttle func(bytes int)
	// Classify decides per batch; nil is DefaultClassify.
	Classify func(recordbatch.Header) BatchAction
	// KeepEmpty says whether a producer's batch whose records all go
	// stays as an empty batch, its header alone: Kafka keeps the last
	// batch of each live producer so that a replica rebuilding producer
	// state from the log still finds its epoch and last sequence. nil
	// drops every emptied batch.
	KeepEmpty func(recordbatch.Header) bool
	// Now is the pass's clock; nil is the log's.
	Now func() time.Time
	// Stop, when closed, ends the pass at its next read (ErrCleanStopped);
	// the groups already swapped stay cleaned.
	Stop <-chan struct{}
}

// CleanResult says what one pass did.
type CleanResult struct {
	// FirstDirty and CleanedTo bound the dirty range this pass mapped: the
	// log is clean below CleanedTo afterwards (its new first dirty offset).
	FirstDirty, CleanedTo   int64
	SegmentsIn, SegmentsOut int
	BytesRead, BytesWritten int64
	RecordsRemoved          int64 // superseded, keyless or expired tombstones
	KeylessRemoved          int64 // of those, keyless (Kafka's invalid records)
	TombstonesRemoved       int64
}

// Clean runs one cleaning pass (see doc.go, "Compaction"): it maps the
// dirty range's keys to their latest offsets, then rewrites the segments
// below the end of what it mapped, group by group, each group replaced by
// one segment through the .cleaned/.swap protocol. It returns a zero
// CleanedTo when there was nothing to clean. Passes of one log serialise;
// appends, reads and retention go on meanwhile (a group that retention or
// truncation touched is left for the next pass).
func (l *Log) Clean(opts CleanOptions) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var txn *txnClassifier
	if opts.Classify == nil {
		// Kafka's rules for transactions (cleanertxn.go), from the
		// aborted-transaction index.
		aborted, err := l.AbortedTxns(0, opts.UpperBound)
		if err != nil {
			return CleanResult{}, err
		}
		txn = newTxnClassifier(aborted)
		opts.Classify = txn.classify
	}
	if opts.Now == nil {
		opts.Now = l.now
	}
	started := opts.Now()
	p := &cleanPass{l: l, opts: opts, now: opts.Now().UnixMilli()}
	l.writeMu.Lock()
	truncations := l.truncations
	l.writeMu.Unlock()
	// Only fsynced data is cleaned: a map built from records a crash can
	// still lose would let the pass drop the older records they replace.
	if err := l.syncTo(opts.UpperBound); err != nil {
		return CleanResult{}, err
	}
	segs, firstDirty, uncleanable, err := l.cleanableRange(opts.UpperBound, opts.MinCompactionLag, opts.Now(), true)
	if err != nil || firstDirty >= uncleanable {
		return CleanResult{}, err
	}
	defer releaseAll(segs)
	p.res.FirstDirty = firstDirty
	end, err := p.buildMap(segs, firstDirty, uncleanable)
	if err != nil {
		return p.res, err
	}
	p.res.CleanedTo = end
	if txn != nil {
		txn.copying = true
	}
	if err := p.cleanSegments(segs, end); err != nil {
		return p.res, err
	}
	if err := l.setCleanedTo(end, truncations); err != nil {
		return p.res, err
	}
	done := opts.Now()
	l.mu.Lock()
	l.mu.lastPass, l.mu.lastPassTook = done, done.Sub(started)
	l.mu.Unlock()
	return p.res, nil
}

// CleanerState is what the broker's choice of the dirtiest log needs.
type CleanerState struct {
	FirstDirty, FirstUncleanable int64
	CleanBytes, DirtyBytes       int64 // below FirstDirty; from it to FirstUncleanable
	// OldestDirtyTime is the newest timestamp of the first dirty segment
	// (ms; -1 when unknown), for max.compaction.lag.ms.
	OldestDirtyTime int64
	// LastPass is when the last pass that cleaned something ended (zero:
	// none since the log was opened) and LastPassTook how long it took.
	LastPass     time.Time
	LastPassTook time.Duration
}

// DirtyRatio is DirtyBytes over the cleanable bytes (0 when none).
func (s CleanerState) DirtyRatio() float64 {
	if s.CleanBytes+s.DirtyBytes == 0 {
		return 0
	}
	return float64(s.DirtyBytes) / float64(s.CleanBytes+s.DirtyBytes)
}

// CleanerState measures the log's clean and dirty parts under the same
// bounds as Clean.
func (l *Log) CleanerState(upper int64, minLag time.Duration, now time.Time) (CleanerState, error) {
	segs, firstDirty, uncleanable, err := l.cleanableRange(upper, minLag, now, false)
	if err != nil {
		return CleanerState{}, err
	}
	defer releaseAll(segs)
	st := CleanerState{FirstDirty: firstDirty, FirstUncleanable: uncleanable, OldestDirtyTime: -1}
	l.mu.Lock()
	st.LastPass, st.LastPassTook = l.mu.lastPass, l.mu.lastPassTook
	l.mu.Unlock()
	interval := l.interval()
	for i, s := range segs {
		switch {
		case s.base >= uncleanable:
		case i+1 < len(segs) && segs[i+1].base <= firstDirty:
			st.CleanBytes += s.size()
		default:
			if st.OldestDirtyTime < 0 {
				if v, err := s.ensureView(interval); err == nil {
					st.OldestDirtyTime = v.maxTs
				}
			}
			st.DirtyBytes += s.size()
		}
	}
	return st, nil
}

func (l *Log) interval() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.mu.cfg.IndexIntervalBytes)
}

// cleanableRange returns the segments (each with a reference the caller
// releases), the first dirty offset and the first uncleanable offset: the
// base of the first segment that is active, holds an offset at or above
// upper (or, with flushedOnly, the recovery point), or a record newer
// than minLag.
func (l *Log) cleanableRange(upper int64, minLag time.Duration, now time.Time, flushedOnly bool) ([]*segment, int64, int64, error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil, 0, 0, ErrClosed
	}
	segs, start, end, rp := l.mu.segs, l.mu.startOffset, l.mu.endOffset, l.mu.recoveryPoint
	firstDirty := min(max(l.mu.cleanedTo, start, segs[0].base), end)
	interval := int64(l.mu.cfg.IndexIntervalBytes)
	for _, s := range segs {
		s.refs.Add(1) // in the list, so alive
	}
	l.mu.Unlock()
	bound := upper
	if flushedOnly {
		bound = min(upper, rp)
	}
	uncleanable := segs[len(segs)-1].base
	for i, s := range segs[:len(segs)-1] {
		if segs[i+1].base > bound {
			uncleanable = s.base
			break
		}
		if minLag > 0 {
			v, err := s.ensureView(interval)
			if err != nil {
				releaseAll(segs)
				return nil, 0, 0, err
			}
			if v.maxTs > now.Add(-minLag).UnixMilli() {
				uncleanable = s.base
				break
			}
		}
	}
	return segs, firstDirty, uncleanable, nil
}

func releaseAll(segs []*segment) {
	for _, s := range segs {
		s.release()
	}
}

// setCleanedTo persists the new first dirty offset, unless a truncation
// since the pass began (truncations differs from seen) may have cut
// below it: the records a follower appends there again are dirty. A crash
// before it only makes the next pass clean the same range again. Called
// with cleanMu, which orders it after any other pass's.
func (l *Log) setCleanedTo(end int64, seen uint64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.truncations != seen {
		return nil
	}
	if err := writeCheckpoint(l.fs, l.path(cleanerCheckpointFile), end); err != nil {
		return fmt.Errorf("persist cleaner offset: %w", err)
	}
	l.mu.Lock()
	l.mu.cleanedTo = end
	l.mu.Unlock()
	return nil
}

// lowerCleanedTo brings the first dirty offset down to a truncation's new
// log end, durably before the truncation touches any file, as Kafka's
// cleaner checkpoint is on truncation: the records appended again above
// it must be mapped. Expects writeMu.
func (l *Log) lowerCleanedTo(end int64) error {
	l.truncations++
	l.mu.Lock()
	above := l.mu.cleanedTo > end
	l.mu.Unlock()
	if !above {
		return nil
	}
	if err := writeCheckpoint(l.fs, l.path(cleanerCheckpointFile), end); err != nil {
		return fmt.Errorf("lower cleaner offset: %w", err)
	}
	l.mu.Lock()
	l.mu.cleanedTo = end
	l.mu.Unlock()
	return nil
}

// CleanedTo is the log's first dirty offset: below it every key's older
// records are gone (Kafka's cleaner checkpoint).
func (l *Log) CleanedTo() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cleanedTo
}

// loadCleanedTo reads the cleaner checkpoint at open (0 when missing).
func (l *Log) loadCleanedTo() error {
	v, _, err := readCheckpoint(l.fs, l.path(cleanerCheckpointFile))
	l.mu.cleanedTo = v
	return err
}

// cleanPass is one pass's working state; owned by the goroutine in Clean.
type cleanPass struct {
	l    *Log
	opts CleanOptions
	now  int64 // ms
	res  CleanResult
	buf  []byte // segment bytes being read
	out  []byte // cleaned bytes not yet written
	keep []bool // per record of the current batch
}

// buildMap maps the keys of the data batches from firstDirty on, segment
// by segment below uncleanable, until the map is full. It returns the
// offset up to which it mapped: a batch boundary (where the map filled)
// or the base of the first segment it did not reach.
func (p *cleanPass) buildMap(segs []*segment, firstDirty, uncleanable int64) (int64, error) {
	m := p.opts.Map
	m.Reset()
	end := firstDirty
	for i := segIndex(segs, firstDirty); i < len(segs) && segs[i].base < uncleanable; i++ {
		full := false
		err := p.eachBatch(segs[i], func(h recordbatch.Header, batch []byte) error {
			if h.LastOffset() < firstDirty {
				return nil
			}
			if p.opts.Classify(h) == CleanRecords {
				if int(h.RecordCount) > m.Free() {
					full = true
					return errStopScan
				}
				err := p.opts.Codec.Records(batch, func(off int64, key []byte, _ bool) {
					if key != nil {
						m.Put(key, off)
					}
				})
				if err != nil {
					return fmt.Errorf("map batch at %d: %w", h.BaseOffset, err)
				}
			}
			end = h.LastOffset() + 1
			return nil
		})
		if err != nil {
			return end, err
		}
		if full {
			if end == firstDirty {
				return end, fmt.Errorf("%w: %d keys fit", ErrMapTooSmall, m.Capacity())
			}
			return end, nil
		}
		end = segs[i+1].base // the next segment exists: i is below the active one
	}
	return end, nil
}

var errStopScan = errors.New("stop scan")

// eachBatch calls fn with every batch of s, read a megabyte at a time
// (more for a larger batch), counting and throttling the bytes read.
func (p *cleanPass) eachBatch(s *segment, fn func(recordbatch.Header, []byte) error) error {
	v, err := s.ensureView(p.l.interval())
	if err != nil {
		return err
	}
	f, err := s.logFile.acquire()
	if err != nil {
		return fmt.Errorf("open segment %d: %w", s.base, err)
	}
	defer s.logFile.release()
	for pos := int64(0); pos < v.size; {
		n, err := p.readChunk(s, f, pos, v.size)
		if err != nil {
			return err
		}
		rest := p.buf[:n]
		for len(rest) > 0 {
			batch, r, err := recordbatch.Next(rest)
			if err != nil || batch == nil {
				break
			}
			h, err := recordbatch.ParseHeader(batch)
			if err != nil {
				return fmt.Errorf("segment %d position %d: %w", s.base, pos, err)
			}
			if err := fn(h, batch); err != nil {
				if err == errStopScan {
					return nil
				}
				return err
			}
			pos += int64(len(batch))
			rest = r
		}
	}
	return nil
}

const cleanReadBytes = 1 << 20

// readChunk reads into p.buf from pos: a megabyte, or the whole batch at
// pos when it is larger.
func (p *cleanPass) readChunk(s *segment, f File, pos, limit int64) (int, error) {
	select {
	case <-p.opts.Stop:
		return 0, ErrCleanStopped
	default:
	}
	want := min(int64(cleanReadBytes), limit-pos)
	if limit-pos >= recordbatch.HeaderSize {
		hdr := make([]byte, recordbatch.HeaderSize)
		h, err := s.readHeader(f, hdr, pos, limit)
		if err != nil {
			return 0, err
		}
		want = max(want, h.Size())
	}
	if int64(cap(p.buf)) < want {
		p.buf = make([]byte, want)
	}
	n, err := f.ReadAt(p.buf[:want], pos)
	if int64(n) < want {
		return 0, fmt.Errorf("read segment %d at %d: %w", s.base, pos, errors.Join(err, ErrCorrupt))
	}
	p.res.BytesRead += int64(n)
	if p.opts.Throttle != nil {
		p.opts.Throttle(n)
	}
	return n, nil
}

// cleanSegments rewrites the segments below end from the log's start,
// in groups of consecutive segments that fit one segment.
func (p *cleanPass) cleanSegments(segs []*segment, end int64) error {
	segBytes := p.l.Config().SegmentBytes
	for i := 0; i < len(segs)-1 && segs[i].base < end; {
		j := groupEnd(segs, i, end, segBytes)
		if err := p.cleanGroup(segs[i:j], segs[j].base, end); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// groupEnd returns the index after the group that starts at segs[i]:
// Kafka merges consecutive segments while their total size stays within
// segment.bytes and their offsets fit a segment's 32-bit relative offsets.
func groupEnd(segs []*segment, i int, end, segBytes int64) int {
	size := segs[i].size()
	j := i + 1
	for j < len(segs)-1 && segs[j].base < end {
		if size+segs[j].size() > segBytes || segs[j+1].base-segs[i].base > math.MaxInt32 {
			break
		}
		size += segs[j].size()
		j++
	}
	return j
}

// cleanGroup writes the cleaned copy of group (the segments from its
// first base up to next) to a .cleaned file and swaps it in.
func (p *cleanPass) cleanGroup(group []*segment, next, end int64) error {
	l := p.l
	base := group[0].base
	cleaned := segmentPath(l.dir, base, ".log.cleaned")
	f, err := l.fs.OpenFile(cleaned, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create cleaned segment %d: %w", base, err)
	}
	sizes := make([]int64, len(group))
	err = p.copyGroup(f, group, sizes, end)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(fmt.Errorf("clean segments from %d: %w", base, err), l.fs.Remove(cleaned))
	}
	p.res.SegmentsIn += len(group)
	swapped, err := l.swapIn(group, sizes, cleaned, next)
	if swapped {
		p.res.SegmentsOut++
	}
	return err
}

// copyGroup writes the kept batches of group to f.
func (p *cleanPass) copyGroup(f File, group []*segment, sizes []int64, end int64) error {
	p.out = p.out[:0]
	for k, s := range group {
		sizes[k] = s.size()
		err := p.eachBatch(s, func(h recordbatch.Header, batch []byte) error {
			var err error
			p.out, err = p.cleanBatch(p.out, h, batch, end)
			if err != nil || len(p.out) < cleanReadBytes {
				return err
			}
			return p.flush(f)
		})
		if err != nil {
			return err
		}
	}
	return p.flush(f)
}

func (p *cleanPass) flush(f File) error {
	if len(p.out) == 0 {
		return nil
	}
	if _, err := f.Write(p.out); err != nil {
		return err
	}
	p.res.BytesWritten += int64(len(p.out))
	if p.opts.Throttle != nil {
		p.opts.Throttle(len(p.out))
	}
	p.out = p.out[:0]
	return nil
}

// cleanBatch appends what survives of batch to dst. A record survives
// when it has a key, no later record of its key is in the map, and it is
// not a tombstone whose delete horizon has passed. A batch below end that
// keeps a tombstone without a horizon gets one (now + delete.retention.ms):
// tombstones stay that long after the first pass that cleaned past them.
func (p *cleanPass) cleanBatch(dst []byte, h recordbatch.Header, batch []byte, end int64) ([]byte, error) {
	switch p.opts.Classify(h) {
	case KeepBatch:
		return append(dst, batch...), nil
	case DropBatch:
		p.res.RecordsRemoved += int64(h.RecordCount)
		return p.emptied(dst, h), nil
	case dropMarkerAfterHorizon:
		return p.cleanMarker(dst, h, batch, end), nil
	}
	horizon, hasHorizon := h.DeleteHorizon()
	p.keep = p.keep[:0]
	all, tombstones := true, false
	err := p.opts.Codec.Records(batch, func(off int64, key []byte, null bool) {
		keep := p.retain(off, key, null, hasHorizon && p.now >= horizon)
		p.keep = append(p.keep, keep)
		all = all && keep
		tombstones = tombstones || (keep && null)
	})
	if err != nil {
		return dst, fmt.Errorf("clean batch at %d: %w", h.BaseOffset, err)
	}
	if h.RecordCount == 0 { // left empty by an earlier pass
		return p.emptied(dst, h), nil
	}
	stamp := int64(-1)
	if tombstones && !hasHorizon && h.LastOffset() < end {
		stamp = p.now + p.opts.DeleteRetention.Milliseconds()
	}
	if all && stamp < 0 {
		return append(dst, batch...), nil
	}
	i := 0
	out, kept, err := p.opts.Codec.Filter(dst, batch, func(int64) bool { i++; return p.keep[i-1] }, stamp)
	if err != nil {
		return dst, fmt.Errorf("rewrite batch at %d: %w", h.BaseOffset, err)
	}
	if kept == 0 {
		return p.emptied(dst, h), nil
	}
	return out, nil
}

// emptied appends what is left of a batch none of whose records stay:
// nothing, or, for a batch KeepEmpty keeps, its header alone as an
// uncompressed batch of no records (Kafka's empty batch), with its
// offsets and producer fields, so its last offset and sequence survive.
func (p *cleanPass) emptied(dst []byte, h recordbatch.Header) []byte {
	if h.ProducerID < 0 || p.opts.KeepEmpty == nil || !p.opts.KeepEmpty(h) {
		return dst
	}
	start := len(dst)
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	h.Attributes &^= recordbatch.CodecMask
	h.RecordCount = 0
	h.Put(dst[start:])
	return dst
}

// retain is Kafka's rule for one record of a data batch.
func (p *cleanPass) retain(off int64, key []byte, null, horizonPassed bool) bool {
	switch latest, ok := p.opts.Map.Get(key); {
	case key == nil:
		p.res.KeylessRemoved++
	case ok && latest > off:
	case null && horizonPassed:
		p.res.TombstonesRemoved++
	default:
		return true
	}
	p.res.RecordsRemoved++
	return false
}
