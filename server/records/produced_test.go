package records

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// A Produced answers what Decode and Recompress answer on the same bytes,
// for every codec and for several batches at once.
func TestProducedMatchesDecodeAndRecompress(t *testing.T) {
	for _, codec := range allCodecs {
		data := buildBatch(t, sampleRecords(), BatchOptions{Codec: codec, ProducerID: 3, BaseSequence: 0})
		data = append(data, buildBatch(t, sampleRecords()[:2], BatchOptions{Codec: codec})...)
		p, err := CheckProduced(data, 0)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if p.Batches() != 2 || p.Header(0).ProducerID != 3 || p.Header(1).RecordCount != 2 {
			t.Fatalf("%v: %d batches, headers %+v %+v", codec, p.Batches(), p.Header(0), p.Header(1))
		}
		var got []Record
		if err := p.Records(func(r Record) bool { got = append(got, cloneRecord(r)); return true }); err != nil {
			t.Fatal(err)
		}
		if want := decodeAll(t, data, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: Records\n%+v\nDecode\n%+v", codec, got, want)
		}
		for _, to := range allCodecs {
			out, err := p.Recompress(nil, to, 0)
			want, werr := Recompress(nil, data, to, 0, 0)
			if err != nil || werr != nil || !bytes.Equal(out, want) {
				t.Fatalf("%v to %v: Produced.Recompress differs from Recompress (%v, %v)", codec, to, err, werr)
			}
		}
		p.Release()
	}
}

// CheckProduced refuses what Validate refuses, with the same sentinel.
func TestCheckProducedRefusesAsValidate(t *testing.T) {
	good := func() []byte { return buildBatch(t, sampleRecords(), BatchOptions{Codec: Zstd}) }
	bad := map[string][]byte{
		"truncated": good()[:100],
		"bad crc":   func() []byte { b := good(); b[70] ^= 0xff; return b }(),
		"control":   kmsgBatch(t, 0, sampleRecords(), None, attrControl),
		"magic 1":   func() []byte { b := good(); b[offMagic] = 1; return b }(),
	}
	for name, b := range bad {
		verr := Validate(b, 0)
		_, err := CheckProduced(b, 0)
		if verr == nil || err == nil {
			t.Fatalf("%s: Validate %v, CheckProduced %v", name, verr, err)
		}
		for _, sentinel := range []error{ErrCorrupt, ErrInvalid, ErrTooLarge, ErrUnsupportedCodec} {
			if errors.Is(verr, sentinel) != errors.Is(err, sentinel) {
				t.Fatalf("%s: Validate %v, CheckProduced %v", name, verr, err)
			}
		}
	}
}

// Checking a compressed batch, walking its records and recompressing them
// decompresses once and allocates per batch, not per record.
func TestProducedAllocatesPerBatch(t *testing.T) {
	var b Builder
	for i := range 200 {
		b.Add(Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte("v"), 100), Timestamp: int64(i)})
	}
	data, err := b.AppendBatch(nil, BatchOptions{Codec: LZ4})
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	allocs := testing.AllocsPerRun(50, func() {
		p, err := CheckProduced(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		p.Records(func(Record) bool { n++; return true })
		out, _ = p.Recompress(out[:0], None, 0)
		p.Release()
	})
	if allocs > 10 {
		t.Fatalf("%.0f allocations for one batch of 200 records", allocs)
	}
}
