package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/metrics/metricstest"
	"github.com/ferry-mq/ferry/server/records"
)

// multiPartitionProduce is one acks=all request with data for each of
// partitions 0..len(data)-1 of topic.
func multiPartitionProduce(topic string, data [][]byte) *kmsg.ProduceRequest {
	req := produceReq(topic, 0, -1, data[0])
	for i := 1; i < len(data); i++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(i), data[i]
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	return req
}

// A small request (appended on the reader) and a large one (appended on
// several goroutines) over the same partitions both append every
// partition once, in the order of the log, and answer each partition.
func TestProduceSmallAndLargeRequestsAppendEveryPartition(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "inline", Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	large := strings.Repeat("x", parallelAppendBytes/4+1)
	for round, value := range []string{"small", large, "small again"} {
		data := make([][]byte, 4)
		for i := range data {
			data[i] = batch(t, records.BatchOptions{}, value)
		}
		resp := do[*kmsg.ProduceResponse](c, multiPartitionProduce("inline", data), 9)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 4 {
			t.Fatalf("round %d: response %+v", round, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.BaseOffset != int64(round) {
				t.Fatalf("round %d: partition %d: error %d, base offset %d (want %d)", round, p.Partition, p.ErrorCode, p.BaseOffset, round)
			}
		}
	}
	for i := range int32(4) {
		p, err := ts.broker.Partition("inline", i)
		if err != nil {
			t.Fatal(err)
		}
		if hw := p.HighWatermark(); hw != 3 {
			t.Fatalf("partition %d: high watermark %d, want 3", i, hw)
		}
	}
}

// BenchmarkProduceAppendsInline appends one batch to each of four
// partitions (acks=all, one replica), as a request carrying a batch per
// partition does: on the caller (off) and on GOMAXPROCS goroutines (on).
// cost-% is what the handoff to other goroutines adds (negative: what
// the parallel appends save), for a 100-byte record per partition and for
// the request size parallelAppendBytes starts at.
func BenchmarkProduceAppendsInline(b *testing.B) {
	for _, size := range []int{100, parallelAppendBytes / 4} {
		b.Run(fmt.Sprintf("record=%dB", size), func(b *testing.B) { benchmarkProduceAppendsInline(b, size) })
	}
}

func benchmarkProduceAppendsInline(b *testing.B, size int) {
	ts := newTestServer(b)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "appends", Partitions: 4}); err != nil {
		b.Fatal(err)
	}
	var fns []func()
	for i := range int32(4) {
		data := batch(b, records.BatchOptions{}, strings.Repeat("v", size))
		sent := make([]byte, len(data)) // Append rewrites the base offset
		fns = append(fns, func() {
			copy(sent, data)
			if _, err := ts.broker.AppendBatch(context.Background(), server.BatchProduce{Topic: "appends", Partition: i, Batches: sent, Acks: -1}); err != nil {
				b.Fatal(err)
			}
		})
	}
	metricstest.Paired(b, func() { appendInParallel(fns, false) }, func() { appendInParallel(fns, true) })
}
