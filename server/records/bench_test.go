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

// BenchmarkProduceChecks is what the core does with a client's batch on a
// topic with record rules and compression.type set (validate, walk the
// records twice, recompress): separately, as before CheckProduced, each
// pass parsing and decompressing again; and once, through a Produced.
func BenchmarkProduceChecks(b *testing.B) {
	var bld Builder
	for _, r := range benchRecords(10, 100) {
		bld.Add(r)
	}
	for _, codec := range []Codec{None, LZ4, Zstd} {
		data, err := bld.AppendBatch(nil, BatchOptions{Codec: codec})
		if err != nil {
			b.Fatal(err)
		}
		walk := func(Record) bool { return true }
		var out []byte
		b.Run(codec.String()+"/separate", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(data, 0); err != nil {
					b.Fatal(err)
				}
				Decode(data, 0, 0, walk)
				Decode(data, 0, 0, walk)
				out, _ = Recompress(out[:0], data, Gzip, 1, 0)
			}
		})
		b.Run(codec.String()+"/once", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := CheckProduced(data, 0)
				if err != nil {
					b.Fatal(err)
				}
				p.Records(walk)
				p.Records(walk)
				out, _ = p.Recompress(out[:0], Gzip, 1)
				p.Release()
			}
		})
		b.Run(codec.String()+"/validate-only", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := CheckProduced(data, 0)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
		})
	}
}
