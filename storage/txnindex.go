package storage

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
)

// The aborted-transaction index (Kafka's .txnindex): per segment, one entry
// per abort marker in that segment, in marker order, so a read_committed
// fetch learns which producers' batches in its range were aborted
// (FetchResponse AbortedTransactions) without reading the markers.
//
//	<base>.txnindex   entries of 34 bytes, big endian, as Kafka's AbortedTxn:
//	  version           int16  0
//	  producerId        int64
//	  firstOffset       int64  the transaction's first offset in this partition
//	  lastOffset        int64  the abort marker's offset (in this segment)
//	  lastStableOffset  int64  the partition's LSO once the abort completed
//
// Storage only keeps the entries; replication decides them (it owns the
// producers' state) and calls AppendAbortedTxn after appending a marker.
// Each entry is fsynced as it is written (aborts are rare), so every abort
// marker below a producer state snapshot has its entry on disk, and a load
// replays the markers above it into the index again: AppendAbortedTxn
// ignores an entry the segment already holds. Concurrent aborts of
// different producers may write their entries out of marker order, so the
// file is in write order and the entries are sorted when read. A torn or
// invalid tail is
// dropped when the file is read; entries above the log end (a crash cut
// their marker) are dropped at open and by truncation. The file goes with
// its segment (retention, truncation, cleaning merges a group's entries
// into the cleaned segment's).

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

const (
	txnIndexEntrySize = 34
	txnIndexExt       = ".txnindex"
	// maxTxnIndexBytes bounds what is read of one file: far more aborts
	// than a segment can hold markers for at a sane size.
	maxTxnIndexBytes = 64 << 20
)

// segTxnIndex is a segment's aborted-transaction entries, read from its
// file on first use.
type segTxnIndex struct {
	mu      sync.Mutex
	loaded  bool
	entries []AbortedTxn // guarded by mu
}

func (s *segment) txnIndexPath() string { return s.logPath[:len(s.logPath)-4] + txnIndexExt }

// txnEntriesLocked returns the segment's entries, sorted by marker offset
// (the slice is never modified in place, only replaced). Expects
// s.txn.mu.
func (s *segment) txnEntriesLocked() ([]AbortedTxn, error) {
	if s.txn.loaded {
		return s.txn.entries, nil
	}
	b, err := readSmallFile(s.fs, s.txnIndexPath(), maxTxnIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("read aborted transaction index of segment %d: %w", s.base, err)
	}
	s.txn.entries = decodeTxnIndex(b)
	s.txn.loaded = true
	return s.txn.entries, nil
}

// decodeTxnIndex reads whole, valid entries up to the first that is not
// (a torn write, a wrong version, offsets out of order), sorted by marker
// offset.
func decodeTxnIndex(b []byte) []AbortedTxn {
	out := decodeTxnEntries(b)
	slices.SortFunc(out, func(a, b AbortedTxn) int { return cmp.Compare(a.LastOffset, b.LastOffset) })
	return out
}

func decodeTxnEntries(b []byte) []AbortedTxn {
	var out []AbortedTxn
	for ; len(b) >= txnIndexEntrySize; b = b[txnIndexEntrySize:] {
		be := binary.BigEndian
		a := AbortedTxn{
			ProducerID:       int64(be.Uint64(b[2:])),
			FirstOffset:      int64(be.Uint64(b[10:])),
			LastOffset:       int64(be.Uint64(b[18:])),
			LastStableOffset: int64(be.Uint64(b[26:])),
		}
		if be.Uint16(b) != 0 || a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset {
			break
		}
		out = append(out, a)
	}
	return out
}

func appendTxnEntry(b []byte, a AbortedTxn) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 0)
	b = be.AppendUint64(b, uint64(a.ProducerID))
	b = be.AppendUint64(b, uint64(a.FirstOffset))
	b = be.AppendUint64(b, uint64(a.LastOffset))
	return be.AppendUint64(b, uint64(a.LastStableOffset))
}

// AppendAbortedTxn records an aborted transaction in the index of the
// segment holding its marker (a.LastOffset), durably. An entry for the
// same marker is already there (a replay after a restart) and is ignored.
func (l *Log) AppendAbortedTxn(a AbortedTxn) error {
	if a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.ProducerID < 0 {
		return fmt.Errorf("aborted transaction %+v: offsets out of order", a)
	}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	segs := l.mu.segs
	end := l.mu.endOffset
	l.mu.Unlock()
	if a.LastOffset >= end {
		return fmt.Errorf("aborted transaction marker %d at or above the log end %d: %w", a.LastOffset, end, ErrOffsetOutOfRange)
	}
	s := segs[segIndex(segs, a.LastOffset)]
	s.txn.mu.Lock()
	defer s.txn.mu.Unlock()
	if s.deleted.Load() {
		return nil // retention or a truncation took the segment meanwhile
	}
	entries, err := s.txnEntriesLocked()
	if err != nil {
		return err
	}
	at, found := slices.BinarySearchFunc(entries, a.LastOffset, func(e AbortedTxn, off int64) int { return cmp.Compare(e.LastOffset, off) })
	if found {
		return nil
	}
	if err := s.writeTxnEntries(len(entries), []AbortedTxn{a}); err != nil {
		return err
	}
	// A new slice: readers may hold the old one (txnEntriesLocked).
	s.txn.entries = slices.Insert(slices.Clone(entries), at, a)
	return nil
}

// writeTxnEntries writes entries after the first n of the file, cuts what
// follows (a torn tail) and fsyncs. Expects s.txn.mu.
func (s *segment) writeTxnEntries(n int, entries []AbortedTxn) error {
	f, err := s.fs.OpenFile(s.txnIndexPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open aborted transaction index of segment %d: %w", s.base, err)
	}
	defer f.Close()
	var buf []byte
	for _, a := range entries {
		buf = appendTxnEntry(buf, a)
	}
	pos := int64(n) * txnIndexEntrySize
	if _, err := f.WriteAt(buf, pos); err != nil {
		return fmt.Errorf("write aborted transaction index of segment %d: %w", s.base, err)
	}
	if err := f.Truncate(pos + int64(len(buf))); err != nil {
		return fmt.Errorf("truncate aborted transaction index of segment %d: %w", s.base, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync aborted transaction index of segment %d: %w", s.base, err)
	}
	return nil
}

// trimTxnIndex drops the entries whose marker is at or above end (a crash
// or a truncation cut it from the log).
func (s *segment) trimTxnIndex(end int64) error {
	s.txn.mu.Lock()
	defer s.txn.mu.Unlock()
	entries, err := s.txnEntriesLocked()
	if err != nil {
		return err
	}
	keep := len(entries) // sorted: the entries to drop are the last ones
	for keep > 0 && entries[keep-1].LastOffset >= end {
		keep--
	}
	if keep == len(entries) {
		return nil
	}
	if err := s.writeTxnEntries(0, entries[:keep]); err != nil {
		return err
	}
	s.txn.entries = slices.Clone(entries[:keep])
	return nil
}

// removeTxnIndex deletes a stale index a new segment must not inherit.
func (s *segment) removeTxnIndex() error {
	s.txn.mu.Lock()
	defer s.txn.mu.Unlock()
	s.txn.entries, s.txn.loaded = nil, true
	if err := s.fs.Remove(s.txnIndexPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove aborted transaction index of segment %d: %w", s.base, err)
	}
	return nil
}

// AbortedTxns returns the aborted transactions that overlap [from, upTo):
// marker at or after from, first offset below upTo, ordered by marker
// offset: what a read_committed fetch of that range must be told.
func (l *Log) AbortedTxns(from, upTo int64) ([]AbortedTxn, error) {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	segs := l.mu.segs
	l.mu.Unlock()
	var out []AbortedTxn
	for _, s := range segs[segIndex(segs, from):] {
		s.txn.mu.Lock()
		entries, err := s.txnEntriesLocked()
		s.txn.mu.Unlock()
		if err != nil {
			return out, err
		}
		for _, a := range entries {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
		}
	}
	// A cleaning pass interrupted between writing a merged index and
	// removing its group leaves an entry in two files.
	slices.SortStableFunc(out, func(a, b AbortedTxn) int { return cmp.Compare(a.LastOffset, b.LastOffset) })
	return slices.CompactFunc(out, func(a, b AbortedTxn) bool { return a == b }), nil
}

// mergedTxnIndex writes the entries of a cleaned group's segments as the
// index of the segment replacing them (base: the group's first), before
// the group's files go; group[0] then keeps that file. Expects writeMu.
func (l *Log) mergedTxnIndex(group []*segment) error {
	var all []AbortedTxn
	for _, s := range group {
		s.txn.mu.Lock()
		entries, err := s.txnEntriesLocked()
		s.txn.mu.Unlock()
		if err != nil {
			return err
		}
		all = append(all, entries...)
	}
	first := group[0]
	first.keepTxnIndex = true
	if len(all) == 0 {
		return first.removeTxnIndex()
	}
	var buf []byte
	for _, a := range all {
		buf = appendTxnEntry(buf, a)
	}
	return WriteFileAtomic(l.fs, first.txnIndexPath(), buf, 0o644, Durable)
}
