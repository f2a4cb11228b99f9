package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// saramaHandler records what each claim delivers and marks it for commit.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]int
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	sess.Commit() // before the partitions go to another member
	return nil
}

// ConsumeClaim commits every 20 records and whenever it has caught up (a
// commit is an fsync on the broker; one per record is slow on a busy disk).
func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	n := 0
	for msg := range claim.Messages() {
		h.mu.Lock()
		h.seen[fmt.Sprintf("%d:%d", msg.Partition, msg.Offset)]++
		h.mu.Unlock()
		sess.MarkMessage(msg, "")
		if n++; n%20 == 0 || msg.Offset+1 >= claim.HighWaterMarkOffset() {
			sess.Commit()
		}
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sarama-e2e"
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	return cfg
}

// runSarama consumes as a sarama group member until ctx ends.
func runSarama(ctx context.Context, t *testing.T, addr, group, topic string, version sarama.KafkaVersion, h *saramaHandler) <-chan struct{} {
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, saramaConfig(version))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cg.Close()
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				t.Errorf("sarama consume: %v", err)
				return
			}
		}
	}()
	return done
}

// TestSaramaConsumerGroup: two sarama members (Kafka 2.8 and 3.0 protocol
// versions) share a topic; every record is consumed and committed; after
// both leave, a new member resumes from the committed offsets and reads
// only what was produced since.
func TestSaramaConsumerGroup(t *testing.T) {
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"sar","partitions":4}`, 201)
	produceN(t, node.KafkaAddr, "sar", 0, 200)

	h := &saramaHandler{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	d1 := runSarama(ctx, t, node.KafkaAddr, "sg", "sar", sarama.V2_8_0_0, h)
	d2 := runSarama(ctx, t, node.KafkaAddr, "sg", "sar", sarama.V3_0_0_0, h)
	start := time.Now()
	harness.WaitFor(t, "sarama to consume 200 records", 60*time.Second, func() bool { return h.count() >= 200 })

	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	harness.WaitFor(t, "sarama's commits to reach the end", 30*time.Second, func() bool {
		offs, err := admin.FetchOffsets(context.Background(), "sg")
		if err != nil {
			return false
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum == 200
	})
	t.Logf("consumed and committed after %v", time.Since(start))
	cancel()
	<-d1
	<-d2
	for key, n := range h.seen {
		if n != 1 {
			t.Errorf("record %s read %d times", key, n)
		}
	}

	produceN(t, node.KafkaAddr, "sar", 200, 10)
	h2 := &saramaHandler{seen: map[string]int{}}
	ctx2, cancel2 := context.WithCancel(context.Background())
	d3 := runSarama(ctx2, t, node.KafkaAddr, "sg", "sar", sarama.V2_8_0_0, h2)
	harness.WaitFor(t, "the new member to read the 10 new records", 60*time.Second, func() bool { return h2.count() >= 10 })
	time.Sleep(500 * time.Millisecond) // anything older would arrive with them
	cancel2()
	<-d3
	if n := h2.count(); n != 10 {
		t.Fatalf("resumed member read %d records, want the 10 new ones: %v", n, h2.seen)
	}
}
