package server

import (
	"context"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"

	"github.com/ferry-mq/ferry/test/harness"
)

// An append that completes a waiting fetch moves WokenMark (so the
// listeners let the woken consumer run before answering the producer);
// one that wakes nobody leaves it, and YieldToWoken then costs nothing.
func TestAppendThatWakesAFetchMovesTheMark(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "w", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec := []ProduceRecord{{Partition: 0, Record: records.Record{Value: []byte("v")}}}
	mark := b.WokenMark()
	if _, err := b.Produce(ctx, &ProduceRequest{Topic: "w", Records: rec}); err != nil {
		t.Fatal(err)
	}
	if b.WokenMark() != mark {
		t.Fatal("the mark moved with nobody waiting")
	}
	got := make(chan FetchResult, 1)
	go func() {
		res, err := b.Fetch(ctx, FetchRequest{Topic: "w", Offset: 1, MaxBytes: 1 << 20, MaxWait: 10 * time.Second}, nil)
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	harness.WaitFor(t, "the fetch to wait", 10*time.Second, func() bool { return b.WaitingFetches("w", 0) == 1 })
	if _, err := b.AppendBatch(ctx, BatchProduce{Topic: "w", Partition: 0, Batches: oneBatch(t, "wakes"), Acks: AcksAll}); err != nil {
		t.Fatal(err)
	}
	if b.WokenMark() == mark {
		t.Fatal("the mark did not move when the append completed a waiting fetch")
	}
	if res := <-got; len(res.Data) == 0 {
		t.Fatal("the woken fetch returned no records")
	}
}
