package storage_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

// BenchmarkCleaner measures one pass over a freshly written log on the
// real disk (a temp dir): 64 MiB (FERRY_BENCH_CLEANER_BYTES: `make
// bench-cleaner` sets 1 GiB) in 16 MiB segments, batches of 10 records
// with 100-byte values, with 1% and 50% of the records' keys unique.
// MB/s is over the bytes of the log cleaned (the pass reads them twice:
// to build the map, then to copy what survives); with more keys than the
// 128 MiB map holds, the pass cleans the part it mapped (cleaned/log).
func BenchmarkCleaner(b *testing.B) {
	total := int64(64 << 20)
	if v, err := strconv.ParseInt(os.Getenv("FERRY_BENCH_CLEANER_BYTES"), 10, 64); err == nil && v > 0 {
		total = v
	}
	for _, unique := range []float64{0.01, 0.5} {
		b.Run(fmt.Sprintf("unique=%g", unique), func(b *testing.B) {
			const perBatch = 10
			value := make([]byte, 100)
			// About 128 bytes a record: total/128 records, a share unique.
			distinct := max(1, int(unique*float64(total/128)))
			m := storage.NewOffsetMap(128 << 20)
			for range b.N {
				b.StopTimer()
				l := openLog(b, b.TempDir(), storage.Config{SegmentBytes: 16 << 20}, nil)
				var rb records.Builder
				n := 0
				for l.Size() < total {
					rb.Reset()
					for range perBatch {
						rb.Add(records.Record{Key: fmt.Appendf(nil, "key-%09d", n%distinct), Value: value, Timestamp: 1})
						n++
					}
					batch, err := rb.AppendBatch(nil, records.BatchOptions{})
					if err != nil {
						b.Fatal(err)
					}
					// The last append fsyncs, so the timed pass does not.
					if _, err := l.Append(batch, storage.AppendOptions{Sync: l.Size() >= total-int64(len(batch))}); err != nil {
						b.Fatal(err)
					}
				}
				size := l.Size()
				b.SetBytes(size)
				b.StartTimer()
				res, err := l.Clean(storage.CleanOptions{Codec: records.Cleaner{}, Map: m,
					UpperBound: l.LogEndOffset(), DeleteRetention: time.Hour})
				b.StopTimer()
				if err != nil || res.CleanedTo == 0 {
					b.Fatalf("pass %+v: %v", res, err)
				}
				b.ReportMetric(float64(res.BytesWritten)/float64(size), "kept/log")
				b.ReportMetric(float64(res.CleanedTo)/float64(l.LogEndOffset()), "cleaned/log")
				l.Close()
				b.StartTimer()
			}
		})
	}
}
