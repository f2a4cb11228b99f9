package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// oldMessage is one message of a legacy message set as an old client sees it.
type oldMessage struct {
	offset     int64
	magic      int8
	attrs      int8
	timestamp  int64
	key, value []byte
}

// parseMessageSet decodes a legacy message set with kmsg's MessageV0/V1 (not
// with this package's reader) and checks each CRC, as an old client does.
func parseMessageSet(t testing.TB, set []byte) []oldMessage {
	t.Helper()
	var out []oldMessage
	for len(set) > 0 {
		if len(set) < 17 {
			t.Fatalf("%d bytes left, too few for a message", len(set))
		}
		end := 12 + int(binary.BigEndian.Uint32(set[8:]))
		if end > len(set) {
			t.Fatalf("message of %d bytes, %d left", end, len(set))
		}
		entry := set[:end]
		if got, want := crc32.ChecksumIEEE(entry[16:]), binary.BigEndian.Uint32(entry[12:]); got != want {
			t.Fatalf("message at %d: crc %#x, computed %#x", binary.BigEndian.Uint64(entry), want, got)
		}
		var m oldMessage
		switch entry[16] {
		case 0:
			var v kmsg.MessageV0
			if err := v.ReadFrom(entry); err != nil {
				t.Fatalf("MessageV0: %v", err)
			}
			m = oldMessage{v.Offset, v.Magic, v.Attributes, -1, v.Key, v.Value}
		case 1:
			var v kmsg.MessageV1
			if err := v.ReadFrom(entry); err != nil {
				t.Fatalf("MessageV1: %v", err)
			}
			m = oldMessage{v.Offset, v.Magic, v.Attributes, v.Timestamp, v.Key, v.Value}
		default:
			t.Fatalf("magic %d", entry[16])
		}
		out = append(out, m)
		set = set[end:]
	}
	return out
}

// legacySet encodes messages with kmsg, the way a pre-0.11 client frames
// them, computing sizes and CRCs.
func legacySet(msgs ...oldMessage) []byte {
	var out []byte
	for _, m := range msgs {
		var entry []byte
		if m.magic == 0 {
			v := kmsg.MessageV0{Offset: m.offset, Magic: 0, Attributes: m.attrs, Key: m.key, Value: m.value}
			entry = v.AppendTo(nil)
		} else {
			v := kmsg.MessageV1{Offset: m.offset, Magic: 1, Attributes: m.attrs, Timestamp: m.timestamp, Key: m.key, Value: m.value}
			entry = v.AppendTo(nil)
		}
		binary.BigEndian.PutUint32(entry[8:], uint32(len(entry)-12))
		binary.BigEndian.PutUint32(entry[12:], crc32.ChecksumIEEE(entry[16:]))
		out = append(out, entry...)
	}
	return out
}

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
		got := parseMessageSet(t, set)
		if len(got) != len(recs)-1 {
			t.Fatalf("magic %d: %d messages, want %d (from offset 1)", magic, len(got), len(recs)-1)
		}
		for i, m := range got {
			want := recs[i+1]
			wantTS := want.Timestamp
			if magic == 0 {
				wantTS = -1
			}
			if m.offset != int64(i+1) || m.magic != magic || m.attrs != 0 || m.timestamp != wantTS ||
				!bytes.Equal(m.key, want.Key) || (m.key == nil) != (want.Key == nil) ||
				!bytes.Equal(m.value, want.Value) || (m.value == nil) != (want.Value == nil) {
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
	h := readHeader(stored)
	for _, m := range parseMessageSet(t, set) {
		if m.attrs != legacyAttrLogAppendTime || m.timestamp != h.maxTime {
			t.Fatalf("%+v: want LogAppendTime %d", m, h.maxTime)
		}
	}
}

func TestAppendLegacyStopsAtMaxBytesButSendsOne(t *testing.T) {
	stored := buildBatch(t, []Record{{Value: make([]byte, 100)}, {Value: make([]byte, 100)}, {Value: make([]byte, 100)}}, BatchOptions{})
	one := len(legacySet(oldMessage{magic: 1, value: make([]byte, 100)}))
	for _, tc := range []struct{ max, want int }{{1, 1}, {one, 1}, {2*one - 1, 1}, {2 * one, 2}, {0, 3}} {
		set, err := AppendLegacy(nil, stored, 1, 0, tc.max, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(parseMessageSet(t, set)); got != tc.want {
			t.Fatalf("max %d: %d messages, want %d", tc.max, got, tc.want)
		}
	}
}

func TestUpConvertMagic0And1(t *testing.T) {
	const now = 1_800_000_000_000
	plain0 := legacySet(
		oldMessage{offset: 0, magic: 0, key: []byte("k0"), value: []byte("v0")},
		oldMessage{offset: 1, magic: 0, key: nil, value: nil},
	)
	plain1 := legacySet(
		oldMessage{offset: 0, magic: 1, timestamp: 1000, key: []byte("k1"), value: []byte("v1")},
		oldMessage{offset: 1, magic: 1, timestamp: -1, value: []byte("no ts")},
	)
	inner := legacySet( // magic 1 inner offsets are relative
		oldMessage{offset: 0, magic: 1, timestamp: 2000, value: []byte("a")},
		oldMessage{offset: 1, magic: 1, timestamp: 3000, value: []byte("b")},
	)
	gz, err := Compress(Gzip, nil, inner)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := legacySet(oldMessage{offset: 1, magic: 1, attrs: int8(Gzip), timestamp: 3000, value: gz})
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
		if h := readHeader(batch); h.codec() != tc.codec {
			t.Fatalf("%s: codec %v, want %v", tc.name, h.codec(), tc.codec)
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
	good := legacySet(oldMessage{magic: 1, timestamp: 5, value: []byte("x")})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	huge := bytes.Clone(good)
	binary.BigEndian.PutUint32(huge[8:], 1<<31-1)
	badMagic := bytes.Clone(good)
	badMagic[16] = 2
	binary.BigEndian.PutUint32(badMagic[12:], crc32.ChecksumIEEE(badMagic[16:]))
	longKey := legacySet(oldMessage{magic: 0, key: []byte("kk")})
	binary.BigEndian.PutUint32(longKey[18:], 1000) // key length past the message
	binary.BigEndian.PutUint32(longKey[12:], crc32.ChecksumIEEE(longKey[16:]))
	gzInner, _ := Compress(Gzip, nil, good)
	nestedInner, _ := Compress(Gzip, nil, legacySet(oldMessage{magic: 1, attrs: int8(Gzip), value: gzInner}))
	nested := legacySet(oldMessage{magic: 1, attrs: int8(Gzip), value: nestedInner})
	bomb, _ := Compress(Gzip, nil, make([]byte, 1<<20))
	bombSet := legacySet(oldMessage{magic: 1, attrs: int8(Gzip), value: bomb})
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
	f.Add(legacySet(oldMessage{magic: 0, key: []byte("k"), value: []byte("v")}))
	f.Add(legacySet(oldMessage{magic: 1, timestamp: 9, value: []byte("v")}, oldMessage{magic: 1, value: nil}))
	inner := legacySet(oldMessage{magic: 1, timestamp: 9, value: []byte("v")})
	for _, c := range []Codec{Gzip, Snappy, LZ4} {
		comp, _ := Compress(c, nil, inner)
		f.Add(legacySet(oldMessage{magic: 1, attrs: int8(c), value: comp}))
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
	var msgs []oldMessage
	for i := range 500 {
		msgs = append(msgs, oldMessage{offset: int64(i), magic: 1, timestamp: int64(i), key: []byte("key"), value: bytes.Repeat([]byte("v"), 200)})
	}
	set := legacySet(msgs...)
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
