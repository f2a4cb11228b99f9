package records

import (
	"fmt"
	"testing"
)

func benchRecords(n, size int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		recs[i] = Record{Key: fmt.Appendf(nil, "key-%d", i), Value: v, Timestamp: 1700000000000 + int64(i)}
	}
	return recs
}

func BenchmarkBuild10x100B(b *testing.B) {
	recs := benchRecords(10, 100)
	for _, codec := range allCodecs {
		b.Run(codec.String(), func(b *testing.B) {
			var bld Builder
			var dst []byte
			b.SetBytes(10 * 100)
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset()
				for _, r := range recs {
					bld.Add(r)
				}
				var err error
				if dst, err = bld.AppendBatch(dst[:0], BatchOptions{Codec: codec}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode10x100B(b *testing.B) {
	recs := benchRecords(10, 100)
	for _, codec := range allCodecs {
		b.Run(codec.String(), func(b *testing.B) {
			batch := buildBatch(b, recs, BatchOptions{Codec: codec})
			var n int
			count := func(Record) bool { n++; return true }
			b.SetBytes(10 * 100)
			b.ReportAllocs()
			for b.Loop() {
				if err := Decode(batch, 0, 0, count); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
