package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaFranzAcksAndCodecs produces with every acks setting and every
// compression codec through franz-go and consumes each partition back.
func TestKafkaFranzAcksAndCodecs(t *testing.T) {
	node := kafkaNode(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	acks := map[string]kgo.Acks{"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks()}
	const n = 50
	for acksName, ack := range acks {
		for codecName, codec := range codecs {
			topic := fmt.Sprintf("franz-acks%s-%s", acksName, codecName)
			createTopic(t, node, topic, 2)
			cl := franz(t, node, kgo.RequiredAcks(ack), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var recs []*kgo.Record
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: fmt.Appendf(nil, "v-%d", i)})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", topic, err)
			}
			if acksName != "0" {
				for i, r := range recs {
					if r.Offset != int64(i) {
						t.Fatalf("%s: record %d acknowledged at offset %d", topic, i, r.Offset)
					}
				}
			}
			checkSequence(t, consumeFranz(t, node, topic, 1, n), "v")
		}
	}
}

// TestKafkaFranzIdempotentProducer uses franz-go's default producer
// (idempotent, acks=all) and checks the broker tracks it.
func TestKafkaFranzIdempotentProducer(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "idem", 3)
	cl := franz(t, node, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	const n = 200
	for i := 0; i < n; i++ {
		cl.Produce(context.Background(), &kgo.Record{Topic: "idem", Partition: int32(i % 3), Value: fmt.Appendf(nil, "v-%d", i/3)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		want := n / 3
		if int(p) < n%3 {
			want++
		}
		checkSequence(t, consumeFranz(t, node, "idem", p, want), "v")
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "idem", Partitions: []int32{0, 1, 2}}}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || len(p.ActiveProducers) != 1 || p.ActiveProducers[0].LastSequence < 0 {
			t.Fatalf("partition %d producers: %+v", p.Partition, p)
		}
	}
}
