package storage_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Benchmark batches hold 10 records of the named size, so allocations per
// op are per batch.
var benchRecordSizes = []struct {
	name string
	size int
}{{"100B", 100}, {"1KiB", 1024}}

// benchConfig keeps the disk use of a long benchmark bounded.
var benchConfig = storage.Config{SegmentBytes: 64 << 20, RetentionBytes: 256 << 20, RetentionTime: -1}

func benchLog(b *testing.B) *storage.Log {
	l, err := storage.Open(b.TempDir(), benchConfig, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func BenchmarkAppend(b *testing.B) {
	for _, rs := range benchRecordSizes {
		b.Run(rs.name, func(b *testing.B) {
			l := benchLog(b)
			batch := makeBatch(10, rs.size, time.Now().UnixMilli())
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Append rewrites the base offset in place; the CRC does
				// not cover it, so the same buffer stays valid.
				if _, err := l.Append(batch, storage.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
				if i%4096 == 4095 {
					b.StopTimer()
					l.EnforceRetention(time.Now())
					b.StartTimer()
				}
			}
		})
	}
	b.Run("32writers-nosync", func(b *testing.B) { benchParallelAppend(b, false) })
}

func BenchmarkAppendSync(b *testing.B) {
	b.Run("32writers", func(b *testing.B) { benchParallelAppend(b, true) })
	b.Run("1writer", func(b *testing.B) {
		l := benchLog(b)
		batch := makeBatch(1, 1024-recordbatch.HeaderSize, 1)
		b.SetBytes(int64(len(batch)))
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := l.Append(batch, storage.AppendOptions{Sync: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	})
}

// benchParallelAppend runs 32 goroutines appending ~1 KiB batches.
func benchParallelAppend(b *testing.B, sync bool) {
	l := benchLog(b)
	b.SetParallelism(max(1, 32/runtimeProcs()))
	b.ReportAllocs()
	b.SetBytes(1024)
	var n atomic.Int64
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		batch := makeBatch(1, 1024-recordbatch.HeaderSize, 1)
		for pb.Next() {
			if _, err := l.Append(batch, storage.AppendOptions{Sync: sync}); err != nil {
				b.Error(err)
				return
			}
			if n.Add(1)%8192 == 0 {
				l.EnforceRetention(time.Now()) // bound the disk a long run uses
			}
		}
	})
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "appends/s")
}

func BenchmarkRead(b *testing.B) {
	for _, rs := range benchRecordSizes {
		b.Run(rs.name, func(b *testing.B) {
			l := benchLog(b)
			batch := makeBatch(10, rs.size, 1)
			const batches = 2000
			for i := 0; i < batches; i++ {
				if _, err := l.Append(batch, storage.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			end := l.LogEndOffset()
			dst := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			b.ResetTimer()
			var total int64
			for i := 0; i < b.N; i++ {
				off := int64(i*7919) % end
				res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 64 << 10, MinOneBatch: true}, dst[:0])
				if err != nil || res.Batches == 0 {
					b.Fatal(err)
				}
				total += int64(len(res.Data))
			}
			b.SetBytes(total / int64(b.N))
		})
	}
}

// BenchmarkReadTail is a consumer that keeps up: it reads the last few
// batches, asking for sendfile chunks as the Kafka listener does, which a
// small tail answers with bytes (CopyBelow).
func BenchmarkReadTail(b *testing.B) {
	l := benchLog(b)
	batch := makeBatch(10, 100, 1)
	for i := 0; i < 2000; i++ {
		if _, err := l.Append(batch, storage.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	from := l.LogEndOffset() - 30 // three batches
	dst := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		res, err := l.Read(storage.ReadOptions{Offset: from, MaxBytes: 1 << 20, MinOneBatch: true, ChunksOnly: true, CopyBelow: 32 << 10}, dst[:0])
		if err != nil || res.Batches != 3 || len(res.Data) == 0 {
			b.Fatal(res.Batches, err)
		}
	}
}

func TestAppendAndReadAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	defer l.Close()
	batch := makeBatch(10, 100, 1)
	appends := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(batch, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	dst := make([]byte, 0, 1<<20)
	reads := testing.AllocsPerRun(200, func() {
		if _, err := l.Read(storage.ReadOptions{Offset: 100, MaxBytes: 64 << 10}, dst[:0]); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations: %.1f per append, %.1f per read", appends, reads)
	if appends > 2 || reads > 4 {
		t.Errorf("allocations crept up: %.1f per append, %.1f per read", appends, reads)
	}
}

func runtimeProcs() int { return max(1, runtime.GOMAXPROCS(0)) }
