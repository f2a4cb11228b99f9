package storage

import (
	"crypto/md5"
	"encoding/binary"
)

// OffsetMap is the cleaner's dedupe map: key → the latest offset seen for
// it, in a fixed byte budget (log.cleaner.dedupe.buffer.size divided over
// the cleaner threads), as Kafka's. A key is stored as its 16-byte MD5, so
// an entry costs 24 bytes whatever the key's size; the table is open
// addressing in one slice and counts as full at 90% of its slots, so a
// pass maps only as much of the dirty log as fits and the rest waits for
// the next pass. One cleaner goroutine owns a map and reuses it.
type OffsetMap struct {
	slots   []byte // entrySize per slot: hash, then offset+1 (0: empty)
	n       int    // slots
	used    int
	maxUsed int
}

const (
	mapHashSize  = md5.Size
	mapEntrySize = mapHashSize + 8
)

// NewOffsetMap returns a map using at most budget bytes (at least one slot).
func NewOffsetMap(budget int) *OffsetMap {
	n := max(budget/mapEntrySize, 2)
	return &OffsetMap{slots: make([]byte, n*mapEntrySize), n: n, maxUsed: max(n*9/10, 1)}
}

// Capacity is how many keys the map holds before it counts as full.
func (m *OffsetMap) Capacity() int { return m.maxUsed }

// Len is how many keys are in the map.
func (m *OffsetMap) Len() int { return m.used }

// Free is how many more distinct keys fit.
func (m *OffsetMap) Free() int { return m.maxUsed - m.used }

// Reset empties the map for the next pass.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.used = 0
}

// Put records offset as key's latest; a new key in a full map is refused.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h := md5.Sum(key)
	slot, found := m.find(&h)
	if !found {
		if m.used >= m.maxUsed {
			return false
		}
		copy(m.slots[slot:], h[:])
		m.used++
	}
	binary.BigEndian.PutUint64(m.slots[slot+mapHashSize:], uint64(offset+1))
	return true
}

// Get returns key's latest offset.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	h := md5.Sum(key)
	slot, found := m.find(&h)
	if !found {
		return -1, false
	}
	return int64(binary.BigEndian.Uint64(m.slots[slot+mapHashSize:])) - 1, true
}

// find returns the byte position of h's slot, or of the empty slot where
// it would go (linear probing; the table never fills past maxUsed).
func (m *OffsetMap) find(h *[mapHashSize]byte) (int, bool) {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(m.n))
	for {
		slot := i * mapEntrySize
		e := m.slots[slot : slot+mapEntrySize]
		if binary.BigEndian.Uint64(e[mapHashSize:]) == 0 {
			return slot, false
		}
		if string(e[:mapHashSize]) == string(h[:]) {
			return slot, true
		}
		if i++; i == m.n {
			i = 0
		}
	}
}
