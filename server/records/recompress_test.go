package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestRecompressKeepsHeaderAndRecords(t *testing.T) {
	var b Builder
	for i := range 5 {
		b.Add(Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte("v"), 100), Timestamp: int64(1000 + i)})
	}
	src, err := b.AppendBatch(nil, BatchOptions{ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []Codec{LZ4, Gzip, Snappy, Zstd, None} {
		out, err := Recompress(nil, src, codec, 5, 0)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if got, _ := BatchCodec(out); got != codec {
			t.Fatalf("codec %v, want %v", got, codec)
		}
		if err := Validate(out, 0); err != nil {
			t.Fatalf("%v: recompressed batch invalid: %v", codec, err)
		}
		// Offsets, timestamps and the producer fields are untouched.
		if !bytes.Equal(out[offLastDelta:offRecordCount+4], src[offLastDelta:offRecordCount+4]) {
			t.Fatalf("%v: header fields changed", codec)
		}
		var values int
		if err := Decode(out, 0, 0, func(r Record) bool { values++; return r.Timestamp == int64(1000+r.Offset) }); err != nil || values != 5 {
			t.Fatalf("%v: decoded %d records, err %v", codec, values, err)
		}
		back, err := Recompress(nil, out, None, 0, 0)
		if err != nil || !bytes.Equal(back, src) {
			t.Fatalf("%v: back to none differs (%v)", codec, err)
		}
	}
}

func TestRecompressRefusesCorruptInput(t *testing.T) {
	var b Builder
	b.Add(Record{Value: []byte("x")})
	src, _ := b.AppendBatch(nil, BatchOptions{})
	bad := append([]byte(nil), src...)
	binary.BigEndian.PutUint32(bad[offCRC:], 1)
	if _, err := Recompress(nil, bad, LZ4, 0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad crc: %v", err)
	}
	if _, err := Recompress(nil, src[:len(src)-1], LZ4, 0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestCompressLevelsRoundTrip(t *testing.T) {
	src := bytes.Repeat([]byte("ferry compresses at the topic's level; "), 2000)
	for _, c := range []struct {
		codec  Codec
		levels []int
	}{
		{Gzip, []int{-1, 0, 1, 9}},
		{LZ4, []int{0, 1, 3, 9, 17}},
		{Zstd, []int{-131072, 0, 3, 6, 22}},
	} {
		for _, level := range c.levels {
			out, err := CompressLevel(c.codec, level, nil, src)
			if err != nil {
				t.Fatalf("%v level %d: %v", c.codec, level, err)
			}
			back, err := Decompress(c.codec, nil, out, 0)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("%v level %d: round trip failed (%v)", c.codec, level, err)
			}
		}
	}
}
