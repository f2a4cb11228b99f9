package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout of a record batch v2 header (all big endian).
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// BatchHeaderSize is the size of a v2 batch header, and so the minimum
	// size of a batch.
	BatchHeaderSize = 61
	// logOverhead is the part of the header not counted by batchLength.
	logOverhead = 12

	attrTimestampType = 1 << 3 // 1 = LogAppendTime
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed header of a record batch v2.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // bytes after the Length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the whole batch's size in bytes.
func (h BatchHeader) Size() int64 { return logOverhead + int64(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// ParseBatchHeader decodes the header at the start of b. It checks only what
// the header alone can show (length, magic, lastOffsetDelta); the CRC needs
// the whole batch (see ValidateBatches). Errors wrap ErrCorrupt.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: batch header needs %d bytes, have %d", ErrCorrupt, BatchHeaderSize, len(b))
	}
	be := binary.BigEndian
	h := BatchHeader{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		Length:          int32(be.Uint32(b[offLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[offRecordCount:])),
	}
	if h.Length < BatchHeaderSize-logOverhead {
		return h, fmt.Errorf("%w: batch length %d below minimum %d", ErrCorrupt, h.Length, BatchHeaderSize-logOverhead)
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d, want 2", ErrCorrupt, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative lastOffsetDelta %d", ErrCorrupt, h.LastOffsetDelta)
	}
	return h, nil
}

// checkBatch parses the batch at the start of b and verifies that it is
// whole and that its CRC matches.
func checkBatch(b []byte) (BatchHeader, error) {
	return checkBatchFraming(b, true)
}

// checkBatchFraming is checkBatch, with the CRC computed only when withCRC.
func checkBatchFraming(b []byte, withCRC bool) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() > int64(len(b)) {
		return h, fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrCorrupt, h.Size(), len(b))
	}
	if !withCRC {
		return h, nil
	}
	if got := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return h, nil
}

// ValidateBatches walks the concatenated batches in b and verifies each
// one's length, magic and CRC. It returns how many whole valid batches
// precede the first problem; err wraps ErrCorrupt.
func ValidateBatches(b []byte) (n int, err error) {
	for pos := 0; pos < len(b); n++ {
		h, err := checkBatch(b[pos:])
		if err != nil {
			return n, fmt.Errorf("batch %d at byte %d: %w", n, pos, err)
		}
		pos += int(h.Size())
	}
	return n, nil
}

// setBaseOffset and setLeaderEpoch rewrite fields outside the CRC's range.
func setBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

func setLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// setLogAppendTime stamps a whole batch with the broker's time, as Kafka does
// for LogAppendTime topics; attributes and maxTimestamp are inside the CRC,
// so it is recomputed.
func setLogAppendTime(b []byte, ms int64) {
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|attrTimestampType)
	be.PutUint64(b[offMaxTimestamp:], uint64(ms))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}
