package records

import (
	"bytes"
	"testing"
)

// sampleRecords covers null, empty and binary keys and values, headers with
// null and empty values, and timestamps that go backwards.
func sampleRecords() []Record {
	bin := []byte{0, 1, 0xff, 0x80, '\n'}
	return []Record{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: 1700000000000},
		{Key: nil, Value: []byte("null key"), Timestamp: 1700000000005},
		{Key: []byte{}, Value: []byte{}, Timestamp: 1699999999990},
		{Key: bin, Value: nil, Timestamp: 1700000000001},
		{Key: []byte("h"), Value: bytes.Repeat(bin, 1000), Timestamp: 1700000000002, Headers: []Header{
			{Key: "trace", Value: []byte("abc")},
			{Key: "", Value: []byte{}},
			{Key: "null", Value: nil},
		}},
	}
}

var allCodecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

func buildBatch(t testing.TB, recs []Record, opts BatchOptions) []byte {
	t.Helper()
	var b Builder
	for _, r := range recs {
		b.Add(r)
	}
	out, err := b.AppendBatch(nil, opts)
	if err != nil {
		t.Fatalf("AppendBatch(%v): %v", opts.Codec, err)
	}
	return out
}

// decodeAll copies every record Decode yields, since fields alias buffers.
func decodeAll(t testing.TB, batches []byte, minOffset int64) []Record {
	t.Helper()
	var out []Record
	err := Decode(batches, minOffset, 0, func(r Record) bool {
		out = append(out, cloneRecord(r))
		return true
	})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return out
}

func cloneRecord(r Record) Record {
	c := r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, Header{Key: h.Key, Value: cloneBytes(h.Value)})
	}
	return c
}

// cloneBytes keeps the nil/empty distinction, unlike bytes.Clone of empty.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func checkRecord(t *testing.T, got, want Record) {
	t.Helper()
	if !sameBytes(got.Key, want.Key) || !sameBytes(got.Value, want.Value) {
		t.Errorf("offset %d: key/value = %q/%q, want %q/%q", got.Offset, got.Key, got.Value, want.Key, want.Value)
	}
	if got.Timestamp != want.Timestamp || got.TimestampType != want.TimestampType {
		t.Errorf("offset %d: timestamp %d type %d, want %d type %d", got.Offset, got.Timestamp, got.TimestampType, want.Timestamp, want.TimestampType)
	}
	if got.Offset != want.Offset {
		t.Errorf("offset %d, want %d", got.Offset, want.Offset)
	}
	if len(got.Headers) != len(want.Headers) {
		t.Fatalf("offset %d: %d headers, want %d", got.Offset, len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || !sameBytes(g.Value, w.Value) {
			t.Errorf("offset %d header %d = %q:%q, want %q:%q", got.Offset, i, g.Key, g.Value, w.Key, w.Value)
		}
	}
}
