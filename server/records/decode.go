package records

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// codecOf is the codec a batch header names.
func codecOf(h *recordbatch.Header) Codec { return Codec(h.Codec()) }

// check verifies what must hold before any record is trusted: the format
// version and the checksum over everything after the CRC field. batch is
// exactly the batch h was read from (recordbatch.Next split it off).
func check(h *recordbatch.Header, batch []byte) error {
	if h.Magic != recordbatch.Magic {
		return fmt.Errorf("magic %d, only v2 is supported: %w", h.Magic, ErrCorrupt)
	}
	if err := h.VerifyCRC(batch); err != nil {
		return err
	}
	if h.RecordCount < 0 {
		return fmt.Errorf("record count %d: %w", h.RecordCount, ErrCorrupt)
	}
	return nil
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
func (d *decoder) payload(h *recordbatch.Header, batch []byte, maxDecompressed int) ([]byte, error) {
	recs := batch[recordbatch.HeaderSize:]
	if codecOf(h) == None {
		return recs, nil
	}
	out, err := Decompress(codecOf(h), d.buf[:0], recs, maxDecompressed)
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
		batch, rest, err := recordbatch.Next(batches)
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
	h := recordbatch.ReadHeader(batch)
	if h.LastOffset() < minOffset || h.IsControl() {
		return true, nil // checked by whoever reads it; not ours to fail on
	}
	if err := check(&h, batch); err != nil {
		return false, err
	}
	recs, err := d.payload(&h, batch, maxDecompressed)
	if err != nil {
		return false, err
	}
	for i := int32(0); i < h.RecordCount; i++ {
		var v recordView
		if v, recs, err = readRecord(recs); err != nil {
			return false, fmt.Errorf("record %d of %d: %w", i, h.RecordCount, err)
		}
		rec := d.record(&h, &v)
		if rec.Offset >= minOffset && !fn(rec) {
			return false, nil
		}
	}
	if len(recs) != 0 {
		return false, fmt.Errorf("%d bytes after %d records: %w", len(recs), h.RecordCount, ErrCorrupt)
	}
	return true, nil
}

// record turns a parsed record into the caller's view of it.
func (d *decoder) record(h *recordbatch.Header, v *recordView) Record {
	return makeRecord(h, v, &d.headers)
}

// makeRecord is a record of the batch h as the caller sees it, its headers
// decoded into *headers (reused: valid until the next record).
func makeRecord(h *recordbatch.Header, v *recordView, headers *[]Header) Record {
	rec := Record{
		Key:       v.key,
		Value:     v.value,
		Offset:    h.BaseOffset + int64(v.offsetDelta),
		Timestamp: h.BaseTimestamp + v.tsDelta,
	}
	if h.LogAppendTime() {
		rec.Timestamp, rec.TimestampType = h.MaxTimestamp, 1
	}
	if v.headerCount > 0 {
		*headers = appendHeaders((*headers)[:0], v)
		rec.Headers = *headers
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
	one, rest, err := recordbatch.Next(batch)
	switch {
	case err != nil:
		return err
	case one == nil:
		return fmt.Errorf("truncated: %d bytes: %w", len(batch), ErrCorrupt)
	case len(rest) != 0:
		return fmt.Errorf("%d bytes after the batch: %w", len(rest), ErrInvalid)
	}
	h := recordbatch.ReadHeader(one)
	p := producedPool.Get().(*Produced)
	defer p.Release()
	_, err = p.check(&h, one, maxDecompressed)
	return err
}

// checkProduced applies the header rules Kafka enforces on producers.
func checkProduced(h *recordbatch.Header) error {
	switch {
	case h.IsControl():
		return fmt.Errorf("control batch from a producer: %w", ErrInvalid)
	case h.BaseOffset != 0:
		return fmt.Errorf("base offset %d, producers send 0: %w", h.BaseOffset, ErrInvalid)
	case h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1:
		return fmt.Errorf("record count %d with last offset delta %d: %w", h.RecordCount, h.LastOffsetDelta, ErrInvalid)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("producer id %d without a sequence: %w", h.ProducerID, ErrInvalid)
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
