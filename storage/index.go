package storage

import (
	"encoding/binary"
	"sort"
)

// Index file entry sizes, as in Kafka.
const (
	offsetEntrySize = 8  // relative offset uint32, position uint32
	timeEntrySize   = 12 // timestamp int64, relative offset uint32
)

// indexEntry is entry i of both the .index and the .timeindex file: the
// batch whose base offset is segment base + rel starts at byte pos, and
// every batch before it has maxTimestamp <= ts (-1 when there is none).
// The two files always hold the same number of entries; a file with fewer
// is short and its missing entries are rebuilt by scanning.
type indexEntry struct {
	rel uint32
	pos uint32
	ts  int64
}

// lookupOffset returns the position from which a forward scan finds the
// batch holding rel: that of the last entry at or below it.
func lookupOffset(entries []indexEntry, rel int64) int64 {
	i := sort.Search(len(entries), func(i int) bool { return int64(entries[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(entries[i-1].pos)
}

// lookupTime returns the position from which a forward scan finds the first
// batch with maxTimestamp >= ts: every batch before the last entry whose ts
// is below the target has a smaller timestamp.
func lookupTime(entries []indexEntry, ts int64) int64 {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].ts >= ts })
	if i == 0 {
		return 0
	}
	return int64(entries[i-1].pos)
}

// parseIndex decodes the longest valid prefix of the two index files:
// offsets and positions strictly increasing, timestamps non-decreasing,
// positions inside the segment, offsets below trustBelow (base-relative).
func parseIndex(off, tim []byte, segSize, trustBelow int64) []indexEntry {
	n := min(len(off)/offsetEntrySize, len(tim)/timeEntrySize)
	entries := make([]indexEntry, 0, n)
	be := binary.BigEndian
	for i := 0; i < n; i++ {
		o, t := off[i*offsetEntrySize:], tim[i*timeEntrySize:]
		e := indexEntry{rel: be.Uint32(o), pos: be.Uint32(o[4:]), ts: int64(be.Uint64(t))}
		if be.Uint32(t[8:]) != e.rel || int64(e.pos) >= segSize || int64(e.rel) >= trustBelow {
			break
		}
		if i > 0 {
			p := entries[i-1]
			if e.rel <= p.rel || e.pos <= p.pos || e.ts < p.ts {
				break
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// appendOffsetEntries and appendTimeEntries encode entries for the files.
func appendOffsetEntries(b []byte, entries []indexEntry) []byte {
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return b
}

func appendTimeEntries(b []byte, entries []indexEntry) []byte {
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, e.rel)
	}
	return b
}
