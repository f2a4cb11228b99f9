package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// fuzzCap keeps each fuzzed batch's decompression small.
const fuzzCap = 1 << 20

func addSeeds(f *testing.F) {
	for _, codec := range allCodecs {
		b := buildBatch(f, sampleRecords(), BatchOptions{Codec: codec})
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(kmsgBatch(f, 0, sampleRecords(), codec, 0))
	}
	f.Add(kmsgBatch(f, 3, sampleRecords(), None, attrLogAppendTime))
	f.Add(recordBatch(1, 0, rawRecord(0, -1, -1, 1<<30)))
	f.Add([]byte{})
}

// withValidCRCs returns a copy of data with every complete batch's CRC
// recomputed, so the fuzzer reaches record parsing instead of stopping at
// checksums it cannot forge.
func withValidCRCs(data []byte) []byte {
	out := bytes.Clone(data)
	for rest := out; ; {
		batch, next, err := recordbatch.Next(rest)
		if err != nil || batch == nil {
			return out
		}
		fixCRC(batch)
		rest = next
	}
}

// FuzzDecode: no input panics, loops long or allocates beyond the cap, and
// every record handed out is consistent with the walk.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data)
		fuzzDecode(t, withValidCRCs(data))
	})
}

func fuzzDecode(t *testing.T, data []byte) {
	err := Decode(data, 0, fuzzCap, func(r Record) bool {
		if r.Offset < 0 || len(r.Key)+len(r.Value) > fuzzCap+len(data) {
			t.Fatalf("record out of range: offset %d, %d+%d bytes", r.Offset, len(r.Key), len(r.Value))
		}
		return true
	})
	if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("error outside the package's sentinels: %v", err)
	}
}

// FuzzValidate: no input panics, and whatever Validate accepts, Decode reads
// back as exactly recordCount records at offsets 0..n-1.
func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzValidate(t, data)
		fuzzValidate(t, withValidCRCs(data))
	})
}

func fuzzValidate(t *testing.T, data []byte) {
	if err := Validate(data, fuzzCap); err != nil {
		return
	}
	want := int64(binary.BigEndian.Uint32(data[offRecordCount:]))
	var n int64
	err := Decode(data, 0, fuzzCap, func(r Record) bool {
		if r.Offset != n {
			t.Fatalf("record %d has offset %d", n, r.Offset)
		}
		n++
		return true
	})
	if err != nil || n != want {
		t.Fatalf("Validate accepted a batch Decode reads as %d of %d records: %v", n, want, err)
	}
}

// FuzzRoundTrip: any record survives Builder then Decode unchanged.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), "h", []byte("hv"), int64(1700000000000), int64(-5), uint8(0))
	f.Add([]byte{}, []byte(nil), "", []byte(nil), int64(0), int64(1<<40), uint8(4))
	f.Fuzz(func(t *testing.T, key, value []byte, hk string, hv []byte, ts, delta int64, codec uint8) {
		c := Codec(codec % 5)
		want := []Record{
			{Key: key, Value: value, Timestamp: ts, Headers: []Header{{Key: hk, Value: hv}}},
			{Key: nil, Value: key, Timestamp: ts + delta},
		}
		got := decodeAll(t, buildBatch(t, want, BatchOptions{Codec: c}), 0)
		if len(got) != 2 {
			t.Fatalf("%v: %d records", c, len(got))
		}
		for i := range want {
			want[i].Offset = int64(i)
			checkRecord(t, got[i], want[i])
		}
	})
}

// FuzzRecompress: no input panics, and a recompressed batch validates
// whenever its input did, with the same records.
func FuzzRecompress(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = withValidCRCs(data)
		out, err := Recompress(nil, data, LZ4, 0, fuzzCap)
		if err != nil || Validate(data, fuzzCap) != nil {
			return
		}
		if err := Validate(out, 4*fuzzCap); err != nil {
			t.Fatalf("input validates, recompressed does not: %v", err)
		}
	})
}

// FuzzCheckProduced: CheckProduced accepts what Validate accepts, one batch
// at a time, and then walks the records Decode reads.
func FuzzCheckProduced(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = withValidCRCs(data)
		p, err := CheckProduced(data, fuzzCap)
		if one, rest, _ := recordbatch.Next(data); one != nil && len(rest) == 0 {
			if verr := Validate(data, fuzzCap); (verr == nil) != (err == nil) {
				t.Fatalf("one batch: Validate %v, CheckProduced %v", verr, err)
			}
		}
		if err != nil {
			return
		}
		defer p.Release()
		var got []Record
		if err := p.Records(func(r Record) bool { got = append(got, cloneRecord(r)); return true }); err != nil {
			t.Fatalf("Records of checked batches: %v", err)
		}
		var want []Record
		if err := Decode(data, 0, fuzzCap, func(r Record) bool { want = append(want, cloneRecord(r)); return true }); err != nil {
			t.Fatalf("Decode of checked batches: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Records and Decode differ")
		}
	})
}
