package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

var errEmptyBatch = errors.New("records: no records to encode")

// Builder encodes records into one v2 batch. It keeps the encoded records in
// one growing buffer, so a Builder reused through Reset (for instance from a
// sync.Pool) allocates per batch at most, not per record. The zero value is
// ready to use. A Builder is not safe for concurrent use.
type Builder struct {
	records []byte // encoded records, uncompressed
	count   int
	firstTS int64 // the first record's timestamp: deltas are taken from it
	maxTS   int64
}

// Reset forgets the added records but keeps the buffer for the next batch.
func (b *Builder) Reset() {
	b.records = b.records[:0]
	b.count = 0
}

// Len returns the number of records added since the last Reset.
func (b *Builder) Len() int { return b.count }

// Add encodes r as the next record: its offset delta is its index and its
// timestamp delta is taken from the first record's timestamp (deltas may be
// negative). r's slices are copied, so the caller may reuse them at once.
func (b *Builder) Add(r Record) {
	if b.count == 0 {
		b.firstTS, b.maxTS = r.Timestamp, r.Timestamp
	}
	b.maxTS = max(b.maxTS, r.Timestamp)
	b.records = appendRecord(b.records, &r, r.Timestamp-b.firstTS, int32(b.count))
	b.count++
}

// AppendBatch appends the batch holding the added records to dst and returns
// the extended slice. The batch has baseOffset 0 (the log assigns offsets),
// partitionLeaderEpoch -1, CreateTime timestamps, and is compressed with
// opts.Codec. On error dst is returned unextended. The Builder is unchanged,
// so a caller may retry with another codec.
func (b *Builder) AppendBatch(dst []byte, opts BatchOptions) ([]byte, error) {
	if b.count == 0 {
		return dst, errEmptyBatch
	}
	start := len(dst)
	if opts.Codec == None {
		dst = slices.Grow(dst, recordbatch.HeaderSize+len(b.records)) // one allocation, not two
	}
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	dst, err := CompressLevel(opts.Codec, opts.Level, dst, b.records)
	if err != nil {
		return dst[:start], fmt.Errorf("build batch of %d records: %w", b.count, err)
	}
	batch := dst[start:]
	if len(batch)-recordbatch.LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("build batch of %d bytes: %w", len(batch), ErrTooLarge)
	}
	b.putHeader(batch, opts)
	return dst, nil
}

// putHeader fills the 61-byte header of batch, whose records are in place.
func (b *Builder) putHeader(batch []byte, opts BatchOptions) {
	h := recordbatch.Header{
		BaseOffset:      0,
		LeaderEpoch:     -1, // the log stamps it
		Magic:           recordbatch.Magic,
		Attributes:      int16(opts.Codec) & recordbatch.CodecMask,
		LastOffsetDelta: int32(b.count - 1),
		BaseTimestamp:   b.firstTS,
		MaxTimestamp:    b.maxTS,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		BaseSequence:    -1,
		RecordCount:     int32(b.count),
	}
	if opts.ProducerID != 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence
		if opts.Transactional {
			h.Attributes |= recordbatch.AttrTransactional
		}
	}
	h.Put(batch)
}

// appendRecord appends r in the v2 record format. The length prefix comes
// first, so the body size is computed up front instead of encoding twice.
func appendRecord(dst []byte, r *Record, tsDelta int64, offsetDelta int32) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodyLen(r, tsDelta, offsetDelta)))
	dst = append(dst, 0) // record attributes: unused by Kafka
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendNullableBytes(dst, r.Key)
	dst = appendNullableBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullableBytes(dst, h.Value)
	}
	return dst
}

func recordBodyLen(r *Record, tsDelta int64, offsetDelta int32) int {
	n := 1 + varintLen(tsDelta) + varintLen(int64(offsetDelta))
	n += nullableBytesLen(r.Key) + nullableBytesLen(r.Value)
	n += varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintLen(int64(len(h.Key))) + len(h.Key) + nullableBytesLen(h.Value)
	}
	return n
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func nullableBytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the size of v zigzag-varint encoded: 7 bits per byte.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return (bits.Len64(u|1) + 6) / 7
}
