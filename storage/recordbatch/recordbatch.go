package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrCorrupt marks bytes that are not a well-formed batch (length, magic,
// CRC, offsets, framing). storage.ErrCorrupt and records.ErrCorrupt are
// this same error.
var ErrCorrupt = errors.New("corrupt record batch")

// Byte positions of the header fields; see the package doc.
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
)

const (
	// HeaderSize is the size of a v2 batch header, and so the minimum
	// size of a batch.
	HeaderSize = 61
	// LogOverhead is the part of the header batchLength does not count
	// (baseOffset and batchLength itself): a batch is LogOverhead+Length
	// bytes.
	LogOverhead = offLength + 4
	// MinLength is batchLength for a batch with no record bytes.
	MinLength = HeaderSize - LogOverhead
	// Magic is the only format version ferry stores.
	Magic = 2
)

// Attribute bits.
const (
	CodecMask         = 0x07 // the compression codec, Kafka's numbering
	AttrLogAppendTime = 0x08 // timestamps are the broker's (maxTimestamp)
	AttrTransactional = 0x10
	AttrControl       = 0x20 // a control batch (transaction markers)
	// AttrDeleteHorizon (KIP-534): the log cleaner has passed over this
	// batch's tombstones; baseTimestamp holds the time after which they
	// may be removed (record timestamps are still baseTimestamp + delta).
	AttrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is CRC-32C (Castagnoli) of b: the batch checksum, and the one
// ferry's own files (producer state snapshots) use.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Header is the fixed header of a record batch v2.
type Header struct {
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
func (h Header) Size() int64 { return LogOverhead + int64(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Codec is the attributes' compression codec, in Kafka's numbering.
func (h Header) Codec() int8 { return int8(h.Attributes & CodecMask) }

// IsControl reports a control batch.
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// DeleteHorizon is the KIP-534 delete horizon the cleaner stamped on the
// batch, and whether there is one.
func (h Header) DeleteHorizon() (int64, bool) {
	return h.BaseTimestamp, h.Attributes&AttrDeleteHorizon != 0
}

// LogAppendTime reports a batch whose timestamps are the broker's.
func (h Header) LogAppendTime() bool { return h.Attributes&AttrLogAppendTime != 0 }

// ReadHeader decodes the header at the start of b, which must hold at
// least HeaderSize bytes, without checking any field: for callers that
// apply their own rules (ParseHeader applies the format's).
func ReadHeader(b []byte) Header {
	_ = b[HeaderSize-1]
	be := binary.BigEndian
	return Header{
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
}

// ParseHeader decodes the header at the start of b and checks what the
// header alone can show (length, magic, lastOffsetDelta); the CRC needs the
// whole batch (see Check). Errors wrap ErrCorrupt.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: batch header needs %d bytes, have %d", ErrCorrupt, HeaderSize, len(b))
	}
	h := ReadHeader(b)
	if h.Length < MinLength {
		return h, fmt.Errorf("%w: batch length %d below minimum %d", ErrCorrupt, h.Length, MinLength)
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d, want 2", ErrCorrupt, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: negative lastOffsetDelta %d", ErrCorrupt, h.LastOffsetDelta)
	}
	return h, nil
}

// Check parses the batch at the start of b and verifies that it is whole
// and that its CRC matches.
func Check(b []byte) (Header, error) { return CheckFraming(b, true) }

// CheckFraming is Check, with the CRC computed only when withCRC (a caller
// that has just verified it passes false).
func CheckFraming(b []byte, withCRC bool) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() > int64(len(b)) {
		return h, fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrCorrupt, h.Size(), len(b))
	}
	if !withCRC {
		return h, nil
	}
	return h, h.VerifyCRC(b)
}

// VerifyCRC checks h's CRC against the batch b it was read from, which
// must hold the whole batch (h.Size() bytes).
func (h Header) VerifyCRC(b []byte) error {
	if got := Checksum(b[offAttributes:h.Size()]); got != h.CRC {
		return fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return nil
}

// Validate walks the concatenated batches in b and verifies each one's
// length, magic and CRC. It returns how many whole valid batches precede
// the first problem; err wraps ErrCorrupt.
func Validate(b []byte) (n int, err error) {
	for pos := 0; pos < len(b); n++ {
		h, err := Check(b[pos:])
		if err != nil {
			return n, fmt.Errorf("batch %d at byte %d: %w", n, pos, err)
		}
		pos += int(h.Size())
	}
	return n, nil
}

// Next splits the first batch off src, checking only its length field. A
// nil batch with a nil error means src ends in a truncated batch, which a
// fetch response may do.
func Next(src []byte) (batch, rest []byte, err error) {
	if len(src) < LogOverhead {
		return nil, nil, nil
	}
	length := int32(binary.BigEndian.Uint32(src[offLength:]))
	if length < MinLength {
		return nil, nil, fmt.Errorf("batch length %d: %w", length, ErrCorrupt)
	}
	if int64(length) > int64(len(src)-LogOverhead) {
		return nil, nil, nil
	}
	end := LogOverhead + int(length)
	return src[:end], src[end:], nil
}
