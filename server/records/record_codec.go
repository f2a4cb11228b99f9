package records

import (
	"encoding/binary"
	"fmt"
	"math"
)

// recordView is one parsed record; its slices alias the input.
type recordView struct {
	tsDelta     int64
	offsetDelta int32
	key, value  []byte // nil when null
	headerCount int
	headers     []byte // the encoded headers, already checked by readRecord
}

// readRecord parses the record at the start of src and returns the rest.
// Every length is checked against the bytes actually present before use.
func readRecord(src []byte) (recordView, []byte, error) {
	var v recordView
	length, n := binary.Varint(src)
	if n <= 0 || length < 0 || length > int64(len(src)-n) {
		return v, nil, fmt.Errorf("record length: %w", ErrCorrupt)
	}
	r := reader{b: src[n : n+int(length)]}
	rest := src[n+int(length):]
	r.skip(1) // record attributes: unused by Kafka
	v.tsDelta = r.varint()
	v.offsetDelta = r.varint32()
	v.key = r.nullableBytes()
	v.value = r.nullableBytes()
	v.headerCount = int(r.varint32())
	v.headers = r.b
	r.skipHeaders(v.headerCount)
	if r.bad || len(r.b) != 0 {
		return v, nil, fmt.Errorf("record framing: %w", ErrCorrupt)
	}
	return v, rest, nil
}

// appendHeaders decodes v's headers, which readRecord has checked, into dst.
// Keys are copied into strings: a string aliasing a reused buffer would
// silently change under a caller that kept it.
func appendHeaders(dst []Header, v *recordView) []Header {
	r := reader{b: v.headers}
	for range v.headerCount {
		key := r.bytes()
		dst = append(dst, Header{Key: string(key), Value: r.nullableBytes()})
	}
	return dst
}

// reader consumes Kafka primitives from b. Once a read fails, bad is set and
// every later read returns zero values, so callers check once at the end.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) fail() {
	r.bad, r.b = true, nil
}

func (r *reader) skip(n int) {
	if len(r.b) < n {
		r.fail()
		return
	}
	r.b = r.b[n:]
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint32() int32 {
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail()
		return 0
	}
	return int32(v)
}

// nullableBytes reads a varint length (-1 for null) and that many bytes.
func (r *reader) nullableBytes() []byte {
	if len(r.b) > 0 && r.b[0] == 1 { // zigzag -1: null
		r.b = r.b[1:]
		return nil
	}
	return r.bytes()
}

// bytes reads a non-null varint-length byte string; the result is capped so
// an append by the caller cannot overwrite the next field.
func (r *reader) bytes() []byte {
	n := r.varint32()
	if n < 0 || int(n) > len(r.b) {
		r.fail()
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// skipHeaders checks n headers. Each takes at least two bytes, so a count the
// input cannot hold fails before the loop runs.
func (r *reader) skipHeaders(n int) {
	if n < 0 || n > len(r.b)/2 {
		r.fail()
		return
	}
	for i := 0; i < n && !r.bad; i++ {
		r.bytes() // key: Kafka forbids null header keys
		r.nullableBytes()
	}
}
