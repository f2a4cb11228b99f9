package records

// The legacy message formats, magic 0 and 1, which Kafka clients older than
// 0.11 read and write (Fetch v0–v3, Produce v0–v2). ferry stores only magic 2
// batches, so these are converted at the edge: down for old consumers, up for
// old producers. A message set is a plain sequence of entries (big endian):
//
//	offset       int64
//	messageSize  int32   bytes after this field
//	crc          uint32  CRC-32 (IEEE) of magic to the end
//	magic        int8    0 or 1
//	attributes   int8    bits 0-2 codec, bit 3 LogAppendTime (magic 1)
//	timestamp    int64   magic 1 only
//	key          int32 length (-1 null) then bytes
//	value        int32 length (-1 null) then bytes
//
// A compressed message is a wrapper whose value is a compressed message set
// of the inner messages; in magic 1 the inner offsets are relative and the
// wrapper carries the absolute offset of the last one.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Legacy message layout offsets, from the start of an entry.
const (
	legacyOffOffset = 0
	legacyOffSize   = 8
	legacyOffCRC    = 12
	legacyOffMagic  = 16
	legacyOffAttrs  = 17
	legacyLogHeader = 12 // offset + messageSize

	legacyAttrLogAppendTime = 0x08

	// A wrapper nests one level only; deeper nesting is corrupt, which
	// bounds the recursion on hostile input.
	maxLegacyNesting = 1
)

// legacyMinSize is the smallest messageSize of each magic: crc, magic,
// attributes, (timestamp,) and two null lengths.
func legacyMinSize(magic int8) int {
	if magic == 0 {
		return 4 + 1 + 1 + 4 + 4
	}
	return 4 + 1 + 1 + 8 + 4 + 4
}

// AppendLegacy appends to dst the records of the magic 2 batches at or above
// minOffset, rewritten as a message set of magic 0 or 1, uncompressed, with
// the same offsets, keys and values (headers have no place in the old
// formats and are dropped, as Kafka does). Magic 1 carries each record's
// timestamp and the batch's timestamp type; magic 0 has neither. Control
// batches are skipped. The output stops before the message that would take
// it past maxBytes (<= 0: no limit), but always holds at least one message
// when there is one, so a consumer never stalls on a large record. Batches
// decompress under maxDecompressed (<= 0: DefaultMaxDecompressed); a
// truncated final batch ends the walk.
func AppendLegacy(dst, batches []byte, magic int8, minOffset int64, maxBytes, maxDecompressed int) ([]byte, error) {
	if magic != 0 && magic != 1 {
		return dst, fmt.Errorf("legacy magic %d: %w", magic, ErrInvalid)
	}
	if maxBytes <= 0 {
		maxBytes = math.MaxInt
	}
	start := len(dst)
	err := Decode(batches, minOffset, maxDecompressed, func(r Record) bool {
		size := legacyLogHeader + legacyMinSize(magic) + len(r.Key) + len(r.Value)
		if len(dst) > start && len(dst)-start+size > maxBytes {
			return false
		}
		dst = appendLegacyMessage(dst, magic, &r)
		return true
	})
	return dst, err
}

func appendLegacyMessage(dst []byte, magic int8, r *Record) []byte {
	be := binary.BigEndian
	dst = be.AppendUint64(dst, uint64(r.Offset))
	sizeAt := len(dst)
	dst = be.AppendUint32(dst, 0) // messageSize, known at the end
	crcAt := len(dst)
	dst = be.AppendUint32(dst, 0)
	dst = append(dst, byte(magic))
	var attrs byte
	if magic == 1 && r.TimestampType == 1 {
		attrs |= legacyAttrLogAppendTime
	}
	dst = append(dst, attrs)
	if magic == 1 {
		dst = be.AppendUint64(dst, uint64(r.Timestamp))
	}
	dst = appendLegacyBytes(dst, r.Key)
	dst = appendLegacyBytes(dst, r.Value)
	be.PutUint32(dst[sizeAt:], uint32(len(dst)-crcAt))
	be.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

func appendLegacyBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1: null
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// LegacyMagic reports the format of a produced record set: the magic byte
// of its first entry, which sits at the same place in every format, and
// false when the data is too short to have one.
func LegacyMagic(data []byte) (int8, bool) {
	if len(data) <= legacyOffMagic {
		return 0, false
	}
	return int8(data[legacyOffMagic]), true
}

// legacyMessage is one parsed legacy message; slices alias the input.
type legacyMessage struct {
	offset     int64
	magic      int8
	attrs      int8
	timestamp  int64
	key, value []byte
}

func (m *legacyMessage) codec() Codec { return Codec(m.attrs & recordbatch.CodecMask) }

// nextLegacy parses the first entry of src, checking its framing and CRC.
func nextLegacy(src []byte) (legacyMessage, []byte, error) {
	var m legacyMessage
	if len(src) < legacyLogHeader {
		return m, nil, fmt.Errorf("legacy message: %d bytes left: %w", len(src), ErrCorrupt)
	}
	be := binary.BigEndian
	m.offset = int64(be.Uint64(src[legacyOffOffset:]))
	size := int32(be.Uint32(src[legacyOffSize:]))
	if size < int32(legacyMinSize(0)) || int64(size) > int64(len(src)-legacyLogHeader) {
		return m, nil, fmt.Errorf("legacy message size %d, %d bytes left: %w", size, len(src)-legacyLogHeader, ErrCorrupt)
	}
	end := legacyLogHeader + int(size)
	msg, rest := src[:end], src[end:]
	m.magic, m.attrs = int8(msg[legacyOffMagic]), int8(msg[legacyOffAttrs])
	if m.magic != 0 && m.magic != 1 || int(size) < legacyMinSize(m.magic) {
		return m, nil, fmt.Errorf("legacy message magic %d size %d: %w", m.magic, size, ErrCorrupt)
	}
	if want, got := be.Uint32(msg[legacyOffCRC:]), crc32.ChecksumIEEE(msg[legacyOffMagic:]); want != got {
		return m, nil, fmt.Errorf("legacy message crc %#08x, computed %#08x: %w", want, got, ErrCorrupt)
	}
	r := legacyReader{b: msg[legacyOffAttrs+1:]}
	m.timestamp = -1
	if m.magic == 1 {
		m.timestamp = r.int64()
	}
	m.key, m.value = r.bytes(), r.bytes()
	if r.bad || len(r.b) != 0 {
		return m, nil, fmt.Errorf("legacy message framing: %w", ErrCorrupt)
	}
	return m, rest, nil
}

// legacyReader reads the fixed-width primitives of the old formats; like
// reader, a failed read sets bad and later reads return zero values.
type legacyReader struct {
	b   []byte
	bad bool
}

func (r *legacyReader) int64() int64 {
	if r.bad || len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *legacyReader) bytes() []byte {
	if r.bad || len(r.b) < 4 {
		r.bad = true
		return nil
	}
	n := int32(binary.BigEndian.Uint32(r.b))
	r.b = r.b[4:]
	switch {
	case n == -1:
		return nil
	case n < 0 || int64(n) > int64(len(r.b)):
		r.bad = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// UpConvert turns a produced message set of magic 0 or 1 into one magic 2
// batch appended to dst, ready for Validate and the log: records keep their
// order, keys and values and get offset deltas 0..n-1 (the log assigns the
// offsets, as Kafka does); a magic 1 message keeps its timestamp, while a
// magic 0 message, which has none, and a magic 1 one without one (-1) get
// now, the broker's clock. Compressed wrappers are unpacked (their inner
// messages decompress under maxDecompressed, <= 0: DefaultMaxDecompressed)
// and the batch is compressed with the first wrapper's codec. Corrupt
// framing or a bad CRC fails with ErrCorrupt, an empty set with ErrInvalid;
// on error dst is returned unextended.
func UpConvert(dst, msgset []byte, now int64, maxDecompressed int) ([]byte, error) {
	u := upConverter{now: now, max: maxDecompressed}
	if maxDecompressed <= 0 {
		u.max = DefaultMaxDecompressed
	}
	if err := u.addSet(msgset, 0); err != nil {
		return dst, fmt.Errorf("up-convert message set: %w", err)
	}
	if u.b.Len() == 0 {
		return dst, fmt.Errorf("up-convert message set: no messages: %w", ErrInvalid)
	}
	out, err := u.b.AppendBatch(dst, BatchOptions{Codec: u.codec})
	if err != nil {
		return dst, fmt.Errorf("up-convert message set: %w", err)
	}
	return out, nil
}

type upConverter struct {
	b     Builder
	codec Codec
	now   int64
	max   int // decompressed bytes left for all wrappers together
}

func (u *upConverter) addSet(set []byte, depth int) error {
	for len(set) > 0 {
		m, rest, err := nextLegacy(set)
		if err != nil {
			return err
		}
		if err := u.addMessage(&m, depth); err != nil {
			return fmt.Errorf("message at offset %d: %w", m.offset, err)
		}
		set = rest
	}
	return nil
}

func (u *upConverter) addMessage(m *legacyMessage, depth int) error {
	if m.codec() == None {
		ts := m.timestamp
		if ts < 0 {
			ts = u.now
		}
		u.b.Add(Record{Key: m.key, Value: m.value, Timestamp: ts})
		return nil
	}
	if depth >= maxLegacyNesting {
		return fmt.Errorf("compressed message inside a compressed message: %w", ErrCorrupt)
	}
	if u.b.Len() == 0 {
		u.codec = m.codec()
	}
	if u.max <= 0 { // Decompress would read 0 as "the default cap"
		return fmt.Errorf("wrappers decompress past the cap: %w", ErrTooLarge)
	}
	inner, err := Decompress(m.codec(), nil, m.value, u.max)
	if err != nil {
		return err
	}
	u.max -= len(inner)
	return u.addSet(inner, depth+1)
}
