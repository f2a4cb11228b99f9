package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sarama with PLAIN, over SaslAuthenticate (handshake v1) and over bare
// tokens after a v0 handshake, as clients before Kafka 1.0 did.
func TestSaslSarama(t *testing.T) {
	node := saslNode(t)
	for _, hs := range []int16{sarama.SASLHandshakeV1, sarama.SASLHandshakeV0} {
		topic := fmt.Sprintf("sasl-sarama-v%d", hs)
		createTopicAs(t, node, aliceScram, topic)
		cfg := sarama.NewConfig()
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism, cfg.Net.SASL.Version = true, sarama.SASLTypePlaintext, hs
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "bob", bobPassword
		cfg.Producer.Return.Successes = true
		if hs == sarama.SASLHandshakeV0 { // a pre-1.0 client: no ApiVersions either
			cfg.ApiVersionsRequest, cfg.Version = false, sarama.V0_10_2_0
		}
		producer, err := sarama.NewSyncProducer([]string{node.KafkaAddr}, cfg)
		if err != nil {
			t.Fatalf("handshake v%d: %v", hs, err)
		}
		for i := range 3 {
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", topic, i))}); err != nil {
				t.Fatalf("handshake v%d: send: %v", hs, err)
			}
		}
		producer.Close()
		checkSequence(t, consumeFranz(t, node, topic, 0, 3, kgo.SASL(aliceScram)), topic)
	}
}

// segmentio/kafka-go with PLAIN (its SCRAM needs a module ferry does
// not otherwise use).
func TestSaslKafkaGo(t *testing.T) {
	node := saslNode(t)
	createTopicAs(t, node, aliceScram, "sasl-kafkago")
	mech := plain.Mechanism{Username: "alice", Password: alicePassword}
	w := &kafkago.Writer{Addr: kafkago.TCP(node.KafkaAddr), Topic: "sasl-kafkago",
		Transport: &kafkago.Transport{SASL: mech}, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := w.WriteMessages(ctx, kafkago.Message{Value: []byte(fmt.Sprintf("sasl-kafkago-%d", i))}); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	checkSequence(t, consumeFranz(t, node, "sasl-kafkago", 0, 3, kgo.SASL(aliceScram)), "sasl-kafkago")
}
