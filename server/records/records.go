package records

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Sentinel errors. Every error returned by this package wraps one of them
// with context, so callers map them with errors.Is (for instance to Kafka's
// CORRUPT_MESSAGE, INVALID_RECORD and UNSUPPORTED_COMPRESSION_TYPE codes).
var (
	// ErrCorrupt: the bytes are not a well-formed batch (bad length, CRC,
	// magic, varint, record framing, or compressed stream). It is the
	// format's own error, recordbatch.ErrCorrupt (storage.ErrCorrupt too).
	ErrCorrupt = recordbatch.ErrCorrupt
	// ErrInvalid: the batch is well formed but Kafka would refuse it from a
	// producer (control batch, non-zero base offset, offset deltas that do
	// not count 0..n-1). Only Validate returns it.
	ErrInvalid = errors.New("records: invalid record batch")
	// ErrTooLarge: a payload decompresses to more than the caller's cap, or
	// a built batch would not fit Kafka's int32 length.
	ErrTooLarge = errors.New("records: record batch too large")
	// ErrUnsupportedCodec: attribute bits name a codec Kafka does not define.
	ErrUnsupportedCodec = errors.New("records: unsupported compression codec")
)

// DefaultMaxDecompressed is the per-batch decompression cap used when a
// caller passes a cap <= 0. Kafka's own limits (message.max.bytes 1 MiB,
// fetch.max.bytes 50 MiB) keep honest batches far below it.
const DefaultMaxDecompressed = 64 << 20

// Header is one record header. Kafka forbids null header keys; a nil Value
// is a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as the gateway sees it.
type Record struct {
	Key           []byte // nil = null key
	Value         []byte // nil = null value (tombstone)
	Headers       []Header
	Timestamp     int64 // ms since epoch; the Builder writes it as given
	Offset        int64 // set by Decode
	TimestampType int8  // set by Decode: 0 CreateTime, 1 LogAppendTime
}

// Codec is a batch compression codec; its values are Kafka's attribute bits.
type Codec int8

// The codecs Kafka defines.
const (
	None Codec = iota
	Gzip
	Snappy
	LZ4
	Zstd
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// BatchOptions say how Builder.AppendBatch frames a batch. The zero value
// gives an uncompressed, non-idempotent batch.
type BatchOptions struct {
	Codec Codec
	// Level is the compression level in Kafka's numbering (see
	// CompressLevel); 0 is the codec's default.
	Level int
	// ProducerID 0 means "no producer": producerId, producerEpoch and
	// baseSequence are all written as -1 and the two fields below are
	// ignored. Kafka can hand out producer id 0, so whoever allocates
	// producer ids for ferry-built idempotent batches must start at 1.
	// Any other value (including an explicit -1) is written as given,
	// together with ProducerEpoch and BaseSequence.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Transactional sets the batch's transactional attribute (with a
	// ProducerID): its records belong to that producer's open transaction
	// until a marker ends it.
	Transactional bool
}
