package records

import (
	"fmt"
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// TestCleanerFilterKeepsOffsetsAndProducer: a filtered batch keeps its
// base and last offsets, producer fields, codec and the kept records'
// offsets, keys, values, headers and timestamps; a delete horizon is
// stamped without changing any record's timestamp.
func TestCleanerFilterKeepsOffsetsAndProducer(t *testing.T) {
	for _, codec := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		for _, horizon := range []int64{-1, 5_000_000} {
			t.Run(fmt.Sprintf("%v/horizon=%d", codec, horizon), func(t *testing.T) {
				var b Builder
				for i := 0; i < 5; i++ {
					b.Add(Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)),
						Headers: []Header{{Key: "h", Value: []byte{byte(i)}}}, Timestamp: 1000 + int64(i)*10})
				}
				batch, err := b.AppendBatch(nil, BatchOptions{Codec: codec, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 30})
				if err != nil {
					t.Fatal(err)
				}
				recordbatch.SetBaseOffset(batch, 100)
				recordbatch.SetLeaderEpoch(batch, 4)
				var c Cleaner
				var seen []int64
				if err := c.Records(batch, func(off int64, key []byte, null bool) { seen = append(seen, off) }); err != nil || fmt.Sprint(seen) != "[100 101 102 103 104]" {
					t.Fatalf("Records: %v %v", seen, err)
				}
				keep := map[int64]bool{101: true, 103: true}
				out, kept, err := c.Filter([]byte("x"), batch, func(off int64) bool { return keep[off] }, horizon)
				if err != nil || kept != 2 || out[0] != 'x' {
					t.Fatalf("Filter: kept %d, %v", kept, err)
				}
				h, err := recordbatch.Check(out[1:])
				if err != nil {
					t.Fatal(err)
				}
				if h.BaseOffset != 100 || h.LastOffset() != 104 || h.RecordCount != 2 || h.ProducerID != 7 || h.ProducerEpoch != 2 ||
					h.BaseSequence != 30 || h.LeaderEpoch != 4 || Codec(h.Codec()) != codec || h.MaxTimestamp != 1030 {
					t.Fatalf("header %+v", h)
				}
				if hz, ok := h.DeleteHorizon(); ok != (horizon >= 0) || ok && hz != horizon {
					t.Fatalf("delete horizon %d %v, want %d", hz, ok, horizon)
				}
				var got []string
				err = Decode(out[1:], 0, 0, func(r Record) bool {
					got = append(got, fmt.Sprintf("%d %s=%s h%v t%d", r.Offset, r.Key, r.Value, r.Headers[0].Value, r.Timestamp))
					return true
				})
				if want := "[101 k1=v1 h[1] t1010 103 k3=v3 h[3] t1030]"; err != nil || fmt.Sprint(got) != want {
					t.Fatalf("decoded %v (%v), want %s", got, err, want)
				}
				if out, kept, err := c.Filter(nil, batch, func(int64) bool { return false }, horizon); err != nil || kept != 0 || len(out) != 0 {
					t.Fatalf("nothing kept: %d bytes, %d, %v", len(out), kept, err)
				}
			})
		}
	}
}
