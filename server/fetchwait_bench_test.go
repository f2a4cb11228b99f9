package server

import (
	"context"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkWaitingFetchWokenByProduce: a long-polling fetch at the log end
// is woken by one produce and returns it; one round trip per iteration.
func BenchmarkWaitingFetchWokenByProduce(b *testing.B) {
	br := newTestBroker(b)
	if err := br.CreateTopic(TopicSpec{Name: "w", Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	rec := []ProduceRecord{{Partition: 0, Record: records.Record{Value: make([]byte, 100)}}}
	ctx := context.Background()
	b.ReportAllocs()
	offset := int64(0)
	for b.Loop() {
		got := make(chan error, 1)
		go func() {
			res, err := br.Fetch(ctx, FetchRequest{Topic: "w", Offset: offset, MaxBytes: 1 << 20, MaxWait: 5 * time.Second}, nil)
			if err == nil && len(res.Data) == 0 {
				err = context.DeadlineExceeded
			}
			got <- err
		}()
		if _, err := br.Produce(ctx, &ProduceRequest{Topic: "w", Records: rec}); err != nil {
			b.Fatal(err)
		}
		if err := <-got; err != nil {
			b.Fatal(err)
		}
		offset++
	}
}
