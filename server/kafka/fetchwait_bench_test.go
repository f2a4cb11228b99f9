package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkFetchManyPartitionsWokenByProduce: a Kafka Fetch over 64
// partitions (MinBytes=1, MaxWait=5s), each holding a batch already read
// (the fetch offsets are at the log ends), is woken by a produce to one of
// them: the waiting cost grows with the partitions a fetch names.
func BenchmarkFetchManyPartitionsWokenByProduce(b *testing.B) {
	const parts = 64
	ts := newTestServer(b)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "many", Partitions: parts, ReplicationFactor: 1}); err != nil {
		b.Fatal(err)
	}
	c, other := ts.dial(b), ts.dial(b)
	data := batch(b, records.BatchOptions{}, string(make([]byte, 100)))
	offsets := make([]int64, parts)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 5000, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "many"
		for p := range int32(parts) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		corr := c.send(withVersion(req, 12))
		target := int32(i % parts)
		do[*kmsg.ProduceResponse](other, produceReq("many", target, 1, data), 9)
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		c.recv(corr, resp)
		got := 0
		for _, rp := range resp.Topics[0].Partitions {
			if len(rp.RecordBatches) > 0 {
				got++
				offsets[rp.Partition] = rp.HighWatermark
			}
		}
		if got == 0 {
			b.Fatal(fmt.Sprintf("fetch returned no data for produce to %d", target))
		}
		i++
	}
}

// BenchmarkProduceWakesConsumer is one step of `ferry bench e2e` in
// process: a consumer's Fetch of 4 partitions waits at their ends, an
// acks=all Produce of 13 records of 100 bytes to one of them wakes it, and
// the op ends when the consumer has the records (the produce answer read
// too). Its time is the broker's share of end-to-end latency.
func BenchmarkProduceWakesConsumer(b *testing.B) {
	const parts = 4
	ts := newTestServer(b)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "e2e", Partitions: parts, ReplicationFactor: 1}); err != nil {
		b.Fatal(err)
	}
	consumer, producer := ts.dial(b), ts.dial(b)
	values := make([]string, 13)
	for i := range values {
		values[i] = string(make([]byte, 100))
	}
	data := batch(b, records.BatchOptions{}, values...)
	offsets := make([]int64, parts)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 5000, 1, 50<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "e2e"
		for p := range int32(parts) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		corr := consumer.send(withVersion(req, 12))
		if p := do[*kmsg.ProduceResponse](producer, produceReq("e2e", int32(i%parts), -1, data), 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
			b.Fatalf("produce: error %d", p.ErrorCode)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		consumer.recv(corr, resp)
		got := 0
		for _, rp := range resp.Topics[0].Partitions {
			if len(rp.RecordBatches) > 0 {
				got++
				offsets[rp.Partition] = rp.HighWatermark
			}
		}
		if got == 0 {
			b.Fatalf("fetch returned no data for the produce to %d", i%parts)
		}
		i++
	}
}
