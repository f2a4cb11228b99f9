package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/ferry-mq/ferry/server/records/legacytest"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func TestAppendLegacyKeepsOffsetsKeysValuesTimestamps(t *testing.T) {
	recs := sampleRecords()
	stored := buildBatch(t, recs[:2], BatchOptions{})
	second := buildBatch(t, recs[2:], BatchOptions{Codec: Zstd})
	binary.BigEndian.PutUint64(second, 2) // the log's offsets: 0-1, then 2-4
	stored = append(stored, second...)
	for _, magic := range []int8{0, 1} {
		set, err := AppendLegacy(nil, stored, magic, 1, 0, 0)
		if err != nil {
			t.Fatalf("magic %d: %v", magic, err)
		}
		got := legacytest.Parse(t, set)
		if len(got) != len(recs)-1 {
			t.Fatalf("magic %d: %d messages, want %d (from offset 1)", magic, len(got), len(recs)-1)
		}
		for i, m := range got {
			want := recs[i+1]
			wantTS := want.Timestamp
			if magic == 0 {
				wantTS = -1
			}
			if m.Offset != int64(i+1) || m.Magic != magic || m.Attrs != 0 || m.Timestamp != wantTS ||
				!bytes.Equal(m.Key, want.Key) || (m.Key == nil) != (want.Key == nil) ||
				!bytes.Equal(m.Value, want.Value) || (m.Value == nil) != (want.Value == nil) {
				t.Fatalf("magic %d message %d: %+v, want offset %d of %+v", magic, i, m, i+1, want)
			}
		}
	}
}

func TestAppendLegacyMarksLogAppendTime(t *testing.T) {
	stored := kmsgBatch(t, 7, sampleRecords()[:2], Gzip, attrLogAppendTime)
	set, err := AppendLegacy(nil, stored, 1, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(stored)
	for _, m := range legacytest.Parse(t, set) {
		if m.Attrs != legacyAttrLogAppendTime || m.Timestamp != h.MaxTimestamp {
			t.Fatalf("%+v: want LogAppendTime %d", m, h.MaxTimestamp)
		}
	}
}

func TestAppendLegacyStopsAtMaxBytesButSendsOne(t *testing.T) {
	stored := buildBatch(t, []Record{{Value: make([]byte, 100)}, {Value: make([]byte, 100)}, {Value: make([]byte, 100)}}, BatchOptions{})
	one := len(legacytest.Set(legacytest.Message{Magic: 1, Value: make([]byte, 100)}))
	for _, tc := range []struct{ max, want int }{{1, 1}, {one, 1}, {2*one - 1, 1}, {2 * one, 2}, {0, 3}} {
		set, err := AppendLegacy(nil, stored, 1, 0, tc.max, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(legacytest.Parse(t, set)); got != tc.want {
			t.Fatalf("max %d: %d messages, want %d", tc.max, got, tc.want)
		}
	}
}

func TestUpConvertMagic0And1(t *testing.T) {
	const now = 1_800_000_000_000
	plain0 := legacytest.Set(
		legacytest.Message{Offset: 0, Magic: 0, Key: []byte("k0"), Value: []byte("v0")},
		legacytest.Message{Offset: 1, Magic: 0, Key: nil, Value: nil},
	)
	plain1 := legacytest.Set(
		legacytest.Message{Offset: 0, Magic: 1, Timestamp: 1000, Key: []byte("k1"), Value: []byte("v1")},
		legacytest.Message{Offset: 1, Magic: 1, Timestamp: -1, Value: []byte("no ts")},
	)
	inner := legacytest.Set( // magic 1 inner offsets are relative
		legacytest.Message{Offset: 0, Magic: 1, Timestamp: 2000, Value: []byte("a")},
		legacytest.Message{Offset: 1, Magic: 1, Timestamp: 3000, Value: []byte("b")},
	)
	gz, err := Compress(Gzip, nil, inner)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := legacytest.Set(legacytest.Message{Offset: 1, Magic: 1, Attrs: int8(Gzip), Timestamp: 3000, Value: gz})
	for _, tc := range []struct {
		name  string
		set   []byte
		codec Codec
		want  []Record
	}{
		{"magic 0", plain0, None, []Record{{Key: []byte("k0"), Value: []byte("v0"), Timestamp: now}, {Timestamp: now}}},
		{"magic 1", plain1, None, []Record{{Key: []byte("k1"), Value: []byte("v1"), Timestamp: 1000}, {Value: []byte("no ts"), Timestamp: now}}},
		{"gzip wrapper", wrapped, Gzip, []Record{{Value: []byte("a"), Timestamp: 2000}, {Value: []byte("b"), Timestamp: 3000}}},
	} {
		batch, err := UpConvert(nil, tc.set, now, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := Validate(batch, 0); err != nil {
			t.Fatalf("%s: converted batch does not validate: %v", tc.name, err)
		}
		if h := recordbatch.ReadHeader(batch); Codec(h.Codec()) != tc.codec {
			t.Fatalf("%s: codec %v, want %v", tc.name, Codec(h.Codec()), tc.codec)
		}
		got := decodeAll(t, batch, 0)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d records, want %d", tc.name, len(got), len(tc.want))
		}
		for i, r := range got {
			w := tc.want[i]
			if r.Offset != int64(i) || r.Timestamp != w.Timestamp || !slices.Equal(r.Key, w.Key) ||
				(r.Key == nil) != (w.Key == nil) || !slices.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
				t.Fatalf("%s: record %d %+v, want %+v", tc.name, i, r, w)
			}
		}
	}
}

func TestUpConvertRefusesBadSets(t *testing.T) {
	good := legacytest.Set(legacytest.Message{Magic: 1, Timestamp: 5, Value: []byte("x")})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	huge := bytes.Clone(good)
	binary.BigEndian.PutUint32(huge[8:], 1<<31-1)
	badMagic := bytes.Clone(good)
	badMagic[16] = 2
	binary.BigEndian.PutUint32(badMagic[12:], crc32.ChecksumIEEE(badMagic[16:]))
	longKey := legacytest.Set(legacytest.Message{Magic: 0, Key: []byte("kk")})
	binary.BigEndian.PutUint32(longKey[18:], 1000) // key length past the message
	binary.BigEndian.PutUint32(longKey[12:], crc32.ChecksumIEEE(longKey[16:]))
	gzInner, _ := Compress(Gzip, nil, good)
	nestedInner, _ := Compress(Gzip, nil, legacytest.Set(legacytest.Message{Magic: 1, Attrs: int8(Gzip), Value: gzInner}))
	nested := legacytest.Set(legacytest.Message{Magic: 1, Attrs: int8(Gzip), Value: nestedInner})
	bomb, _ := Compress(Gzip, nil, make([]byte, 1<<20))
	bombSet := legacytest.Set(legacytest.Message{Magic: 1, Attrs: int8(Gzip), Value: bomb})
	for _, tc := range []struct {
		name string
		set  []byte
		want error
	}{
		{"empty", nil, ErrInvalid},
		{"bad crc", badCRC, ErrCorrupt},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"size past the data", huge, ErrCorrupt},
		{"magic 2 inside", badMagic, ErrCorrupt},
		{"key past the message", longKey, ErrCorrupt},
		{"nested wrappers", nested, ErrCorrupt},
		{"decompression bomb", bombSet, ErrTooLarge},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0), ErrCorrupt},
	} {
		out, err := UpConvert([]byte("keep"), tc.set, 0, 64<<10)
		if !errors.Is(err, tc.want) || string(out) != "keep" {
			t.Fatalf("%s: %q, %v; want dst unchanged and %v", tc.name, out, err, tc.want)
		}
	}
}

// FuzzUpConvert: no input panics or allocates past the cap, and whatever
// converts is a batch the log would accept.
func FuzzUpConvert(f *testing.F) {
	f.Add(legacytest.Set(legacytest.Message{Magic: 0, Key: []byte("k"), Value: []byte("v")}))
	f.Add(legacytest.Set(legacytest.Message{Magic: 1, Timestamp: 9, Value: []byte("v")}, legacytest.Message{Magic: 1, Value: nil}))
	inner := legacytest.Set(legacytest.Message{Magic: 1, Timestamp: 9, Value: []byte("v")})
	for _, c := range []Codec{Gzip, Snappy, LZ4} {
		comp, _ := Compress(c, nil, inner)
		f.Add(legacytest.Set(legacytest.Message{Magic: 1, Attrs: int8(c), Value: comp}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		batch, err := UpConvert(nil, fixLegacyCRCs(data), 1, fuzzCap)
		if err != nil {
			return
		}
		if err := Validate(batch, 2*fuzzCap); err != nil {
			t.Fatalf("converted batch does not validate: %v", err)
		}
	})
}

// fixLegacyCRCs recomputes each framed message's CRC so the fuzzer gets past
// the checksums.
func fixLegacyCRCs(data []byte) []byte {
	out := bytes.Clone(data)
	for rest := out; len(rest) >= 17; {
		end := 12 + int64(binary.BigEndian.Uint32(rest[8:]))
		if end > int64(len(rest)) || end < 17 {
			break
		}
		binary.BigEndian.PutUint32(rest[12:], crc32.ChecksumIEEE(rest[16:end]))
		rest = rest[end:]
	}
	return out
}

func BenchmarkAppendLegacy(b *testing.B) {
	recs := make([]Record, 500)
	for i := range recs {
		recs[i] = Record{Key: []byte("key"), Value: bytes.Repeat([]byte("v"), 200), Timestamp: int64(i)}
	}
	stored := buildBatch(b, recs, BatchOptions{Codec: LZ4})
	dst := make([]byte, 0, 256<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(recs) * 200))
	for b.Loop() {
		var err error
		if dst, err = AppendLegacy(dst[:0], stored, 1, 0, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpConvert(b *testing.B) {
	var msgs []legacytest.Message
	for i := range 500 {
		msgs = append(msgs, legacytest.Message{Offset: int64(i), Magic: 1, Timestamp: int64(i), Key: []byte("key"), Value: bytes.Repeat([]byte("v"), 200)})
	}
	set := legacytest.Set(msgs...)
	dst := make([]byte, 0, 256<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(set)))
	for b.Loop() {
		var err error
		if dst, err = UpConvert(dst[:0], set, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}
