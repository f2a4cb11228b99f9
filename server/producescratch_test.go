package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server/records"
)

// One request for several partitions encodes their batches one after
// another into the pooled scratch; a later batch that outgrows the buffer
// moves it. Every partition must still hold exactly its own records.
func TestProduceManyPartitionsWhileScratchGrows(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "spread", Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	for round := range 3 { // later rounds reuse pooled scratch
		req := &ProduceRequest{Topic: "spread"}
		want := map[int32][]string{}
		for i := range 40 {
			p := int32(i % 4)
			// Sizes rising with i: each partition's batch is larger than
			// the last, so the shared buffer reallocates mid-request.
			v := fmt.Sprintf("r%d-%d-%s", round, i, strings.Repeat("x", 50*i))
			want[p] = append(want[p], v)
			req.Records = append(req.Records, ProduceRecord{Partition: p, Record: records.Record{Value: []byte(v)}})
		}
		res, err := b.Produce(context.Background(), req)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, o := range res.Offsets {
			if o.Partition != int32(i%4) || o.Offset != int64(round*10+i/4) {
				t.Fatalf("round %d record %d: offset %+v", round, i, o)
			}
		}
		for p := range int32(4) {
			got := readValues(t, b, "spread", p, int64(round*10))
			if strings.Join(got, ",") != strings.Join(want[p], ",") {
				t.Fatalf("round %d partition %d: got %q, want %q", round, p, got, want[p])
			}
		}
	}
}

// A request refused for max.message.bytes writes nothing, and the scratch
// it leaves behind does not leak into the next request's batch.
func TestProduceAfterRefusedRequestKeepsOnlyItsRecords(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "small", Partitions: 1, Configs: map[string]string{CfgMaxMessageBytes: "2000"}}); err != nil {
		t.Fatal(err)
	}
	big := &ProduceRequest{Topic: "small", Records: []ProduceRecord{
		{Partition: 0, Record: records.Record{Value: []byte(strings.Repeat("a", 1500))}},
		{Partition: 0, Record: records.Record{Value: []byte(strings.Repeat("b", 1500))}},
	}}
	if _, err := b.Produce(context.Background(), big); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("want ErrRecordTooLarge, got %v", err)
	}
	produceValues(t, b, "small", 0, "one", "two")
	if got := readValues(t, b, "small", 0, 0); strings.Join(got, ",") != "one,two" {
		t.Fatalf("partition holds %q", got)
	}
}

// The produce path's allocations are counted so they do not creep back:
// 10 records to one partition of a single-node topic.
func TestProduceAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "allocs", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	req := &ProduceRequest{Topic: "allocs"}
	for i := range 10 {
		req.Records = append(req.Records, ProduceRecord{Partition: PartitionAuto,
			Record: records.Record{Key: fmt.Appendf(nil, "user-%d", i), Value: []byte(strings.Repeat("v", 100))}})
	}
	ctx := context.Background()
	n := testing.AllocsPerRun(200, func() {
		res, err := b.Produce(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req.Offsets = res.Offsets[:0] // as the gateway reuses them
	})
	// The log's published segment view remains (an index entry every few
	// appends adds a fraction, which AllocsPerRun's average rounds off).
	if n > 1 {
		t.Fatalf("Produce allocates %.1f times per request, want at most 1", n)
	}
}
