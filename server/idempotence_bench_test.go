package server

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// benchIdemBatch encodes n records of 100 bytes from one idempotent producer.
func benchIdemBatch(tb testing.TB, b *records.Builder, id int64, seq int32, n int) []byte {
	value := make([]byte, 100)
	b.Reset()
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		b.Add(records.Record{Value: value, Timestamp: now})
	}
	data, err := b.AppendBatch(nil, records.BatchOptions{ProducerID: id, ProducerEpoch: 0, BaseSequence: seq})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkIdempotentProduceParallel: 8 goroutines, each an idempotent
// producer of its own partition of an 8-partition topic, through the
// core's produce path (what the Kafka listener calls per partition).
func BenchmarkIdempotentProduceParallel(b *testing.B) {
	const partitions = 8
	br := newTestBroker(b)
	if err := br.CreateTopic(TopicSpec{Name: "bench", Partitions: partitions}); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int32
	b.SetParallelism(max(1, partitions/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		part := next.Add(1) - 1
		id, _, err := br.InitProducerID(-1, -1)
		if err != nil {
			b.Error(err)
			return
		}
		var builder records.Builder
		seq := int32(0)
		for pb.Next() {
			batch := benchIdemBatch(b, &builder, id, seq, 1)
			if _, err := br.produceBatch(context.Background(), BatchProduce{Topic: "bench", Partition: part % partitions, Batches: batch}); err != nil {
				b.Error(err)
				return
			}
			seq++
		}
	})
}

// BenchmarkFirstIdempotentProduceAfterRestart: the time from a clean
// restart (Open) to the first idempotent batch acknowledged on a partition
// that holds 1M records (10,000 idempotent batches of 100): the producer
// state is loaded on that first produce.
func BenchmarkFirstIdempotentProduceAfterRestart(b *testing.B) {
	br := newTestBroker(b)
	id, _, _ := br.InitProducerID(-1, -1)
	var builder records.Builder
	seq := int32(0)
	for i := 0; i < 10_000; i++ {
		batch := benchIdemBatch(b, &builder, id, seq, 100)
		if _, err := br.produceBatch(context.Background(), BatchProduce{Topic: "big", Partition: 0, Batches: batch}); err != nil {
			b.Fatal(err)
		}
		seq += 100
	}
	cfg := br.cfg
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
		batch := benchIdemBatch(b, &builder, id, seq, 100)
		b.StartTimer()
		var err error
		if br, err = Open(cfg, testLogger(b)); err != nil {
			b.Fatal(err)
		}
		if _, err := br.produceBatch(context.Background(), BatchProduce{Topic: "big", Partition: 0, Batches: batch}); err != nil {
			b.Fatal(fmt.Errorf("first produce after restart: %w", err))
		}
		seq += 100
	}
	b.StopTimer()
	br.Close()
}
