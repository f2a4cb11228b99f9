package records

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Cleaner gives the log cleaner (storage's RecordCodec) what it needs of
// the records inside a batch, which storage treats as opaque: each record's
// offset, key and whether its value is null, and a copy of a batch holding
// only the records it keeps. The zero value is ready to use.
type Cleaner struct {
	// MaxDecompressed caps a batch's decompressed size (<= 0:
	// DefaultMaxDecompressed).
	MaxDecompressed int
}

// Records calls fn for each record of one batch, in offset order. key
// aliases the batch or a buffer and is valid only during the call.
// Control batches are walked like the others (their keys are the marker).
func (c Cleaner) Records(batch []byte, fn func(offset int64, key []byte, null bool)) error {
	d := getDecoder()
	defer putDecoder(d)
	h, recs, err := c.open(d, batch)
	if err != nil {
		return err
	}
	for i := int32(0); i < h.RecordCount; i++ {
		var v recordView
		if v, recs, err = readRecord(recs); err != nil {
			return fmt.Errorf("record %d of %d: %w", i, h.RecordCount, err)
		}
		fn(h.BaseOffset+int64(v.offsetDelta), v.key, v.value == nil)
	}
	return nil
}

// open checks batch and returns its header and decompressed records.
func (c Cleaner) open(d *decoder, batch []byte) (recordbatch.Header, []byte, error) {
	h, err := recordbatch.Check(batch)
	if err != nil {
		return h, nil, err
	}
	if err := check(&h, batch[:h.Size()]); err != nil {
		return h, nil, err
	}
	recs, err := d.payload(&h, batch[:h.Size()], c.MaxDecompressed)
	return h, recs, err
}

// Filter appends to dst a copy of batch holding only the records for which
// keep (called once per record, in offset order) returns true, and returns
// how many it kept; with none kept dst comes back unextended. The copy
// keeps what Kafka keeps: baseOffset and lastOffsetDelta (so the batch's
// last offset, which producer state and followers rely on, survives a
// removed last record), each record's offset delta, the producer fields,
// the leader epoch and the codec. With deleteHorizon >= 0 the batch is
// stamped with it as KIP-534 does (attribute bit 6, baseTimestamp holding
// the horizon, record timestamp deltas taken from it, so timestamps do not
// change); otherwise the records' bytes are copied as they are.
func (c Cleaner) Filter(dst, batch []byte, keep func(offset int64) bool, deleteHorizon int64) ([]byte, int, error) {
	d := getDecoder()
	defer putDecoder(d)
	h, recs, err := c.open(d, batch)
	if err != nil {
		return dst, 0, err
	}
	body, kept, maxTs, err := filterRecords(nil, &h, recs, keep, deleteHorizon)
	if err != nil || kept == 0 {
		return dst, 0, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	if dst, err = Compress(codecOf(&h), dst, body); err != nil {
		return dst[:start], 0, fmt.Errorf("recompress cleaned batch at %d: %w", h.BaseOffset, err)
	}
	out := dst[start:]
	if len(out)-recordbatch.LogOverhead > math.MaxInt32 {
		return dst[:start], 0, fmt.Errorf("cleaned batch of %d bytes: %w", len(out), ErrTooLarge)
	}
	nh := h
	nh.RecordCount = int32(kept)
	if !h.LogAppendTime() {
		nh.MaxTimestamp = maxTs
	}
	if deleteHorizon >= 0 {
		nh.Attributes |= recordbatch.AttrDeleteHorizon
		nh.BaseTimestamp = deleteHorizon
	}
	nh.Put(out)
	return dst, kept, nil
}

// filterRecords appends the kept records of recs to dst, re-encoding
// their timestamp deltas against a new base when the horizon is set.
func filterRecords(dst []byte, h *recordbatch.Header, recs []byte, keep func(int64) bool, horizon int64) ([]byte, int, int64, error) {
	kept, maxTs := 0, int64(-1)
	for i := int32(0); i < h.RecordCount; i++ {
		raw := recs
		v, rest, err := readRecord(recs)
		if err != nil {
			return dst, 0, 0, fmt.Errorf("record %d of %d: %w", i, h.RecordCount, err)
		}
		recs = rest
		if !keep(h.BaseOffset + int64(v.offsetDelta)) {
			continue
		}
		ts := h.BaseTimestamp + v.tsDelta
		maxTs = max(maxTs, ts)
		kept++
		if horizon < 0 {
			dst = append(dst, raw[:len(raw)-len(rest)]...)
			continue
		}
		dst = appendRecordView(dst, &v, ts-horizon)
	}
	if len(recs) != 0 {
		return dst, 0, 0, fmt.Errorf("%d bytes after %d records: %w", len(recs), h.RecordCount, ErrCorrupt)
	}
	return dst, kept, maxTs, nil
}

// appendRecordView re-encodes a parsed record with a new timestamp delta,
// its headers copied as encoded.
func appendRecordView(dst []byte, v *recordView, tsDelta int64) []byte {
	n := 1 + varintLen(tsDelta) + varintLen(int64(v.offsetDelta)) +
		nullableBytesLen(v.key) + nullableBytesLen(v.value) +
		varintLen(int64(v.headerCount)) + len(v.headers)
	dst = binary.AppendVarint(dst, int64(n))
	dst = append(dst, 0)
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(v.offsetDelta))
	dst = appendNullableBytes(dst, v.key)
	dst = appendNullableBytes(dst, v.value)
	dst = binary.AppendVarint(dst, int64(v.headerCount))
	return append(dst, v.headers...)
}
