package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// kafkaNode starts a node and waits for its Kafka listener.
func kafkaNode(t *testing.T) *harness.Node {
	t.Helper()
	node := harness.Start(t)
	node.WaitKafka()
	return node
}

// createTopic creates a topic over HTTP.
func createTopic(t *testing.T, node *harness.Node, name string, partitions int) {
	t.Helper()
	mustPost(t, node.URL+"/topics", "application/json",
		fmt.Sprintf(`{"name":%q,"partitions":%d}`, name, partitions), 201)
}

// franz returns a franz-go client bootstrapped from node, closed at cleanup.
func franz(t *testing.T, node *harness.Node, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(node.KafkaAddr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeFranz reads n records of one partition from offset 0 with a
// direct (group-less) franz-go consumer; opts add to its options.
func consumeFranz(t *testing.T, node *harness.Node, topic string, partition int32, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := franz(t, node, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().AtStart()},
	}), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: got %d of %d records before the timeout", topic, partition, len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("%s-%d: %d records, want %d", topic, partition, len(out), n)
	}
	return out
}

// checkSequence asserts records carry offsets 0..n-1 and values prefix-i.
func checkSequence(t *testing.T, recs []*kgo.Record, prefix string) {
	t.Helper()
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("%s-%d", prefix, i) {
			t.Fatalf("record %d: offset %d value %q, want offset %d value %s-%d", i, r.Offset, r.Value, i, prefix, i)
		}
	}
}
