package records

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
)

// batchHeader is the fixed 61-byte part of one batch, parsed.
type batchHeader struct {
	baseOffset   int64
	magic        int8
	crc          uint32
	attrs        int16
	lastDelta    int32
	baseTime     int64
	maxTime      int64
	producerID   int64
	baseSequence int32
	count        int32
}

// readHeader parses batch, which nextBatch guarantees is >= headerSize long.
func readHeader(batch []byte) batchHeader {
	be := binary.BigEndian
	return batchHeader{
		baseOffset:   int64(be.Uint64(batch[offBaseOffset:])),
		magic:        int8(batch[offMagic]),
		crc:          be.Uint32(batch[offCRC:]),
		attrs:        int16(be.Uint16(batch[offAttributes:])),
		lastDelta:    int32(be.Uint32(batch[offLastDelta:])),
		baseTime:     int64(be.Uint64(batch[offBaseTime:])),
		maxTime:      int64(be.Uint64(batch[offMaxTime:])),
		producerID:   int64(be.Uint64(batch[offProducerID:])),
		baseSequence: int32(be.Uint32(batch[offBaseSequence:])),
		count:        int32(be.Uint32(batch[offRecordCount:])),
	}
}

func (h *batchHeader) codec() Codec        { return Codec(h.attrs & attrCodecMask) }
func (h *batchHeader) isControl() bool     { return h.attrs&attrControl != 0 }
func (h *batchHeader) logAppendTime() bool { return h.attrs&attrLogAppendTime != 0 }
func (h *batchHeader) lastOffset() int64   { return h.baseOffset + int64(h.lastDelta) }

// check verifies what must hold before any record is trusted: the format
// version and the checksum over everything after the CRC field.
func (h *batchHeader) check(batch []byte) error {
	if h.magic != magicV2 {
		return fmt.Errorf("magic %d, only v2 is supported: %w", h.magic, ErrCorrupt)
	}
	if got := crc32.Checksum(batch[offAttributes:], castagnoli); got != h.crc {
		return fmt.Errorf("crc %#08x, computed %#08x: %w", h.crc, got, ErrCorrupt)
	}
	if h.count < 0 {
		return fmt.Errorf("record count %d: %w", h.count, ErrCorrupt)
	}
	return nil
}

// nextBatch splits the first batch off src. A nil batch with a nil error
// means src ends in a truncated batch, which a fetch response may do.
func nextBatch(src []byte) (batch, rest []byte, err error) {
	if len(src) < lengthFieldEnd {
		return nil, nil, nil
	}
	length := int32(binary.BigEndian.Uint32(src[offLength:]))
	if length < minBatchLength {
		return nil, nil, fmt.Errorf("batch length %d: %w", length, ErrCorrupt)
	}
	if int64(length) > int64(len(src)-lengthFieldEnd) {
		return nil, nil, nil
	}
	end := lengthFieldEnd + int(length)
	return src[:end], src[end:], nil
}

// decoder holds what Decode and Validate reuse across batches and calls.
type decoder struct {
	buf     []byte // decompressed records of the current batch
	headers []Header
}

// maxPooledBuf keeps one giant batch from pinning its buffer in the pool.
const maxPooledBuf = 4 << 20

var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder() *decoder { return decoderPool.Get().(*decoder) }

func putDecoder(d *decoder) {
	if cap(d.buf) > maxPooledBuf {
		d.buf = nil
	}
	clear(d.headers[:cap(d.headers)]) // drop references into callers' data
	d.headers = d.headers[:0]
	decoderPool.Put(d)
}

// payload returns batch's records, decompressed into d.buf when needed.
func (d *decoder) payload(h *batchHeader, batch []byte, maxDecompressed int) ([]byte, error) {
	recs := batch[headerSize:]
	if h.codec() == None {
		return recs, nil
	}
	out, err := Decompress(h.codec(), d.buf[:0], recs, maxDecompressed)
	if err != nil {
		return nil, err
	}
	d.buf = out
	return out, nil
}

// Decode walks concatenated batches, as a log read or a fetch response holds
// them, and calls fn for each record at or above minOffset, with the absolute
// offset and timestamp (LogAppendTime batches give every record the batch's
// maxTimestamp). It skips control batches, decompresses each batch under a cap
// of maxDecompressed bytes (<= 0 means DefaultMaxDecompressed), and returns
// nil at a truncated final batch. fn returning false ends the walk with nil.
//
// The Record passed to fn aliases batches or an internal buffer: its Key,
// Value and Headers are valid only until fn returns; copy what must outlive it.
func Decode(batches []byte, minOffset int64, maxDecompressed int, fn func(Record) bool) error {
	d := getDecoder()
	defer putDecoder(d)
	for len(batches) > 0 {
		batch, rest, err := nextBatch(batches)
		if err != nil || batch == nil {
			return err
		}
		more, err := d.decodeBatch(batch, minOffset, maxDecompressed, fn)
		if err != nil {
			base := int64(binary.BigEndian.Uint64(batch))
			return fmt.Errorf("decode batch at offset %d: %w", base, err)
		}
		if !more {
			return nil
		}
		batches = rest
	}
	return nil
}

// decodeBatch calls fn for batch's wanted records; false means fn said stop.
func (d *decoder) decodeBatch(batch []byte, minOffset int64, maxDecompressed int, fn func(Record) bool) (bool, error) {
	h := readHeader(batch)
	if h.lastOffset() < minOffset || h.isControl() {
		return true, nil // checked by whoever reads it; not ours to fail on
	}
	if err := h.check(batch); err != nil {
		return false, err
	}
	recs, err := d.payload(&h, batch, maxDecompressed)
	if err != nil {
		return false, err
	}
	for i := int32(0); i < h.count; i++ {
		var v recordView
		if v, recs, err = readRecord(recs); err != nil {
			return false, fmt.Errorf("record %d of %d: %w", i, h.count, err)
		}
		rec := d.record(&h, &v)
		if rec.Offset >= minOffset && !fn(rec) {
			return false, nil
		}
	}
	if len(recs) != 0 {
		return false, fmt.Errorf("%d bytes after %d records: %w", len(recs), h.count, ErrCorrupt)
	}
	return true, nil
}

// record turns a parsed record into the caller's view of it.
func (d *decoder) record(h *batchHeader, v *recordView) Record {
	rec := Record{
		Key:       v.key,
		Value:     v.value,
		Offset:    h.baseOffset + int64(v.offsetDelta),
		Timestamp: h.baseTime + v.tsDelta,
	}
	if h.logAppendTime() {
		rec.Timestamp, rec.TimestampType = h.maxTime, 1
	}
	if v.headerCount > 0 {
		d.headers = appendHeaders(d.headers[:0], v)
		rec.Headers = d.headers
	}
	return rec
}

// Validate checks one batch a producer sent, before the Kafka listener
// appends it, the way Kafka's broker does: v2 framing and CRC, exactly one
// batch, not a control batch, baseOffset 0, recordCount == lastOffsetDelta+1,
// a sequence number when a producer id is set, and, after decompressing under
// maxDecompressed (<= 0 means DefaultMaxDecompressed), records whose lengths
// frame exactly and whose offset deltas run 0..n-1 in order.
func Validate(batch []byte, maxDecompressed int) error {
	if err := validate(batch, maxDecompressed); err != nil {
		return fmt.Errorf("validate batch: %w", err)
	}
	return nil
}

func validate(batch []byte, maxDecompressed int) error {
	one, rest, err := nextBatch(batch)
	switch {
	case err != nil:
		return err
	case one == nil:
		return fmt.Errorf("truncated: %d bytes: %w", len(batch), ErrCorrupt)
	case len(rest) != 0:
		return fmt.Errorf("%d bytes after the batch: %w", len(rest), ErrInvalid)
	}
	h := readHeader(one)
	if err := h.check(one); err != nil {
		return err
	}
	if err := h.checkProduced(); err != nil {
		return err
	}
	d := getDecoder()
	defer putDecoder(d)
	recs, err := d.payload(&h, one, maxDecompressed)
	if err != nil {
		return err
	}
	return validateRecords(recs, h.count)
}

// checkProduced applies the header rules Kafka enforces on producers.
func (h *batchHeader) checkProduced() error {
	switch {
	case h.isControl():
		return fmt.Errorf("control batch from a producer: %w", ErrInvalid)
	case h.baseOffset != 0:
		return fmt.Errorf("base offset %d, producers send 0: %w", h.baseOffset, ErrInvalid)
	case h.count <= 0 || int64(h.count) != int64(h.lastDelta)+1:
		return fmt.Errorf("record count %d with last offset delta %d: %w", h.count, h.lastDelta, ErrInvalid)
	case h.producerID >= 0 && h.baseSequence < 0:
		return fmt.Errorf("producer id %d without a sequence: %w", h.producerID, ErrInvalid)
	}
	return nil
}

func validateRecords(recs []byte, count int32) error {
	for i := int32(0); i < count; i++ {
		v, rest, err := readRecord(recs)
		if err != nil {
			return fmt.Errorf("record %d of %d: %w", i, count, err)
		}
		if v.offsetDelta != i {
			return fmt.Errorf("record %d has offset delta %d: %w", i, v.offsetDelta, ErrInvalid)
		}
		recs = rest
	}
	if len(recs) != 0 {
		return fmt.Errorf("%d bytes after %d records: %w", len(recs), count, ErrCorrupt)
	}
	return nil
}
