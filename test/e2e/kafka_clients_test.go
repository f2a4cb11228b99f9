package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// TestKafkaSarama produces with sarama's sync producer (each codec, and
// idempotent) and consumes by partition with its partition consumer.
func TestKafkaSarama(t *testing.T) {
	node := kafkaNode(t)
	codecs := map[string]sarama.CompressionCodec{"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD}
	for name, codec := range codecs {
		for _, idempotent := range []bool{false, true} {
			topic := fmt.Sprintf("sarama-%s-%v", name, idempotent)
			createTopic(t, node, topic, 2)
			cfg := sarama.NewConfig() // the default protocol version (2.1) without idempotence
			if idempotent || codec == sarama.CompressionZSTD {
				cfg.Version = sarama.V2_8_0_0
			}
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Compression = codec
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			if idempotent {
				cfg.Producer.Idempotent = true
				cfg.Net.MaxOpenRequests = 1
			}
			producer, err := sarama.NewSyncProducer([]string{node.KafkaAddr}, cfg)
			if err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			const n = 30
			var msgs []*sarama.ProducerMessage
			for i := 0; i < n; i++ {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 1, Value: sarama.StringEncoder(fmt.Sprintf("v-%d", i))})
			}
			if err := producer.SendMessages(msgs); err != nil {
				t.Fatalf("%s: send: %v", topic, err)
			}
			producer.Close()
			for i, m := range msgs {
				if m.Offset != int64(i) {
					t.Fatalf("%s: message %d at offset %d", topic, i, m.Offset)
				}
			}
			consumeSarama(t, node.KafkaAddr, cfg, topic, 1, n)
		}
	}
}

func consumeSarama(t *testing.T, addr string, cfg *sarama.Config, topic string, partition int32, n int) {
	t.Helper()
	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	timeout := time.After(30 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(i) || string(m.Value) != fmt.Sprintf("v-%d", i) {
				t.Fatalf("%s: message %d: offset %d value %q", topic, i, m.Offset, m.Value)
			}
		case err := <-pc.Errors():
			t.Fatalf("%s: %v", topic, err)
		case <-timeout:
			t.Fatalf("%s: got %d of %d messages", topic, i, n)
		}
	}
}

// TestKafkaSegmentio produces with kafka-go's Writer (each codec) and
// reads by partition with its Reader.
func TestKafkaSegmentio(t *testing.T) {
	node := kafkaNode(t)
	codecs := map[string]compress.Compression{"none": 0, "gzip": compress.Gzip, "snappy": compress.Snappy,
		"lz4": compress.Lz4, "zstd": compress.Zstd}
	for name, codec := range codecs {
		topic := "kafkago-" + name
		createTopic(t, node, topic, 2)
		// a Transport per writer: the shared default caches metadata from before the topic existed
		w := &kafkago.Writer{Addr: kafkago.TCP(node.KafkaAddr), Topic: topic, Balancer: fixedPartition(1), Transport: &kafkago.Transport{},
			RequiredAcks: kafkago.RequireAll, Compression: codec, BatchTimeout: 10 * time.Millisecond}
		const n = 30
		var msgs []kafkago.Message
		for i := 0; i < n; i++ {
			msgs = append(msgs, kafkago.Message{Value: fmt.Appendf(nil, "v-%d", i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("%s: write: %v", topic, err)
		}
		w.Close()
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{node.KafkaAddr}, Topic: topic, Partition: 1, MaxWait: 200 * time.Millisecond})
		for i := 0; i < n; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("%s: read %d: %v", topic, i, err)
			}
			if m.Offset != int64(i) || string(m.Value) != fmt.Sprintf("v-%d", i) {
				t.Fatalf("%s: message %d: offset %d value %q", topic, i, m.Offset, m.Value)
			}
		}
		r.Close()
		cancel()
	}
}

// fixedPartition is a kafka-go Balancer that always picks one partition.
type fixedPartition int

func (p fixedPartition) Balance(_ kafkago.Message, partitions ...int) int { return int(p) }
