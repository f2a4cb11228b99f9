package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// Transaction markers (KIP-98): a control batch (AttrControl|
// AttrTransactional, uncompressed, the producer's id and epoch, sequence
// -1) holding one control record, Kafka's EndTxnMarker:
//
//	key    version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
//	value  version int16 (0) | coordinatorEpoch int32
//
// The record is framed as every v2 record is (varint length, attributes,
// timestamp and offset deltas, key, value, header count), with both
// deltas 0 and no headers.

// EndTxnMarker is the content of a commit or abort marker.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// Control record types (the key's type field).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
	controlKeySize    = 4
	markerValueSize   = 6
	// markerRecordBody is the record after its length varint: attributes,
	// timestampDelta 0, offsetDelta 0, keyLength, key, valueLength, value,
	// headerCount 0; every varint one byte.
	markerRecordBody = 1 + 1 + 1 + 1 + controlKeySize + 1 + markerValueSize + 1
)

// AppendEndTxnMarker appends to dst a whole control batch (base offset 0,
// to be assigned by the log) ending producerID's transaction.
func AppendEndTxnMarker(dst []byte, producerID int64, producerEpoch int16, m EndTxnMarker, timestampMs int64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = binary.AppendVarint(dst, markerRecordBody)
	dst = append(dst, 0)              // attributes
	dst = binary.AppendVarint(dst, 0) // timestampDelta
	dst = binary.AppendVarint(dst, 0) // offsetDelta
	dst = binary.AppendVarint(dst, controlKeySize)
	typ := uint16(controlTypeAbort)
	if m.Commit {
		typ = controlTypeCommit
	}
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, typ)
	dst = binary.AppendVarint(dst, markerValueSize)
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
	dst = binary.AppendVarint(dst, 0) // headers
	Header{
		Magic:         Magic,
		Attributes:    AttrControl | AttrTransactional,
		BaseTimestamp: timestampMs,
		MaxTimestamp:  timestampMs,
		ProducerID:    producerID,
		ProducerEpoch: producerEpoch,
		BaseSequence:  -1,
		RecordCount:   1,
	}.Put(dst[start:])
	return dst
}

// IsTxnMarker reports whether h is a transaction marker's header: a
// control batch of a transactional producer.
func (h Header) IsTxnMarker() bool {
	const both = AttrControl | AttrTransactional
	return h.Attributes&both == both
}

// IsTransactional reports a batch written inside a transaction (data or
// marker).
func (h Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// ParseEndTxnMarker reads the marker in the control batch at the start of
// batch (whose framing and CRC the caller has checked, or not: every
// length is bounded by the bytes present). Errors wrap ErrCorrupt.
func ParseEndTxnMarker(batch []byte) (EndTxnMarker, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return EndTxnMarker{}, err
	}
	switch {
	case !h.IsTxnMarker():
		return EndTxnMarker{}, fmt.Errorf("%w: attributes %#x are not a transaction marker's", ErrCorrupt, h.Attributes)
	case h.Codec() != 0:
		return EndTxnMarker{}, fmt.Errorf("%w: compressed control batch", ErrCorrupt)
	case h.RecordCount != 1:
		return EndTxnMarker{}, fmt.Errorf("%w: control batch with %d records, want 1", ErrCorrupt, h.RecordCount)
	case h.Size() > int64(len(batch)):
		return EndTxnMarker{}, fmt.Errorf("%w: control batch of %d bytes truncated to %d", ErrCorrupt, h.Size(), len(batch))
	}
	key, value, err := controlRecord(batch[HeaderSize:h.Size()])
	if err != nil {
		return EndTxnMarker{}, err
	}
	if len(key) < controlKeySize || int16(binary.BigEndian.Uint16(key)) < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, len(key))
	}
	var m EndTxnMarker
	switch binary.BigEndian.Uint16(key[2:]) {
	case controlTypeAbort:
	case controlTypeCommit:
		m.Commit = true
	default:
		return EndTxnMarker{}, fmt.Errorf("%w: control record type %d is not a transaction marker", ErrCorrupt, binary.BigEndian.Uint16(key[2:]))
	}
	if len(value) < markerValueSize || int16(binary.BigEndian.Uint16(value)) < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker value of %d bytes", ErrCorrupt, len(value))
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(value[2:]))
	return m, nil
}

// controlRecord splits the one record in b into its key and value.
func controlRecord(b []byte) (key, value []byte, err error) {
	bad := func(what string) ([]byte, []byte, error) {
		return nil, nil, fmt.Errorf("%w: control record: %s", ErrCorrupt, what)
	}
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || length > int64(len(b)-n) {
		return bad("length")
	}
	r := b[n : n+int(length)]
	if len(r) < 1 {
		return bad("no attributes")
	}
	r = r[1:]
	for range 2 { // timestampDelta, offsetDelta
		if _, n := binary.Varint(r); n <= 0 {
			return bad("deltas")
		} else {
			r = r[n:]
		}
	}
	if key, r, err = varintBytes(r); err != nil {
		return bad("key")
	}
	if value, _, err = varintBytes(r); err != nil {
		return bad("value")
	}
	return key, value, nil
}

// varintBytes reads a varint length and that many bytes (a null, -1,
// reads as empty).
func varintBytes(b []byte) (field, rest []byte, err error) {
	l, n := binary.Varint(b)
	if n <= 0 || l < -1 || l > int64(len(b)-n) {
		return nil, nil, ErrCorrupt
	}
	if l < 0 {
		return nil, b[n:], nil
	}
	return b[n : n+int(l)], b[n+int(l):], nil
}
