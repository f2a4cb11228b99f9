package e2e

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// readKafkaGoGroup reads n records as a segmentio/kafka-go group member,
// committing each one synchronously, and returns how often each value came.
func readKafkaGoGroup(t *testing.T, addr, group, topic string, n int) map[string]int {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: []string{addr}, GroupID: group, Topic: topic,
		MaxWait: 200 * time.Millisecond, StartOffset: kafkago.FirstOffset,
	})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]int{}
	for i := 0; i < n; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group read %d of %d: %v", i, n, err)
		}
		seen[string(m.Value)]++
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("kafka-go commit at %d/%d: %v", m.Partition, m.Offset, err)
		}
	}
	return seen
}

// TestKafkaGoConsumerGroup: segmentio/kafka-go's group reader consumes a
// 3-partition topic once, commits, and a later member of the same group
// resumes from the committed offsets with only the new records.
func TestKafkaGoConsumerGroup(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "kgo-group", 3)
	produceN(t, node.KafkaAddr, "kgo-group", 0, 90)

	seen := readKafkaGoGroup(t, node.KafkaAddr, "kg", "kgo-group", 90)
	if len(seen) != 90 {
		t.Fatalf("read %d distinct records of 90", len(seen))
	}
	for v, times := range seen {
		if times != 1 {
			t.Fatalf("record %s read %d times", v, times)
		}
	}

	produceN(t, node.KafkaAddr, "kgo-group", 90, 6)
	resumed := readKafkaGoGroup(t, node.KafkaAddr, "kg", "kgo-group", 6)
	for v := range resumed {
		if seen[v] > 0 {
			t.Fatalf("the resumed member read %s again: committed offsets were not used", v)
		}
	}
	if len(resumed) != 6 {
		t.Fatalf("the resumed member read %v, want the 6 new records", resumed)
	}
}
