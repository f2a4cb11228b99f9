package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// BenchmarkTxnVersusIdempotentAppend: the partition side's cost of a
// transaction (one batch of n records and its commit marker, acks=all on
// one replica) against the same batch from an idempotent producer; one
// op is one batch.
func BenchmarkTxnVersusIdempotentAppend(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, txn := range []bool{false, true} {
			name := fmt.Sprintf("records=%d/idempotent", n)
			if txn {
				name = fmt.Sprintf("records=%d/transactional", n)
			}
			b.Run(name, func(b *testing.B) {
				br := newTestBroker(b)
				if err := br.CreateTopic(TopicSpec{Name: "bench", Partitions: 1}); err != nil {
					b.Fatal(err)
				}
				id, _, err := br.InitProducerID(-1, -1)
				if err != nil {
					b.Fatal(err)
				}
				var builder records.Builder
				seq := int32(0)
				b.ReportAllocs()
				b.SetBytes(int64(n * 100))
				b.ResetTimer()
				for range b.N {
					batch := benchIdemBatch(b, &builder, id, seq, n)
					if txn {
						h := recordbatch.ReadHeader(batch)
						h.Attributes |= recordbatch.AttrTransactional
						h.Put(batch)
					}
					if _, err := br.produceBatch(context.Background(), BatchProduce{Topic: "bench", Batches: batch, Acks: AcksAll}); err != nil {
						b.Fatal(err)
					}
					seq += int32(n)
					if txn {
						if err := br.WriteTxnMarkers(context.Background(), []TxnMarker{{ProducerID: id, Commit: true, Topic: "bench"}})[0]; err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
