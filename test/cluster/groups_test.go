package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// A consumer group on three brokers: its coordinator is the leader of its
// __consumer_offsets partition (created with replication factor 3 by the
// first lookup), other brokers answer NOT_COORDINATOR, and when the
// coordinator is killed (kill -9) the new leader of that partition loads
// the committed offsets: the group resumes exactly where it committed.
func TestConsumerGroupSurvivesCoordinatorKill(t *testing.T) {
	nodes := startCluster(t, 3, "--offsets-topic-num-partitions", "3", "--group-initial-rebalance-delay-ms", "0")
	const topic, groupID = "events", "billing"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	produceValues(ctx, t, cl, 0, 300)

	consumed := consumeGroup(ctx, t, nodes, topic, groupID, 300)
	for i := range 300 {
		if !consumed[fmt.Sprintf("r%04d", i)] {
			t.Fatalf("the group did not read r%04d", i)
		}
	}
	coordinator := coordinatorOf(ctx, t, adm, groupID)
	committed := committedTotal(ctx, t, adm, groupID)
	if committed != 300 {
		t.Fatalf("committed offsets sum to %d, want 300", committed)
	}

	// A broker that is not the coordinator refuses the group's requests.
	other := nodes[coordinator%3] // ids are 1..3: this is the next one
	if code := offsetFetchCode(ctx, t, other.KafkaAddr, groupID); code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetFetch at broker %d (not the coordinator %d): error %d, want NOT_COORDINATOR", coordinator%3+1, coordinator, code)
	}

	nodes[coordinator-1].Kill()
	var next int32
	harness.WaitFor(t, "another broker coordinates the group", 60*time.Second, func() bool {
		next = coordinatorOf(ctx, t, adm, groupID)
		return next > 0 && next != coordinator
	})
	// A new client: franz-go keeps dialling a coordinator it has cached
	// until the broker answers.
	after, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	harness.WaitFor(t, "the new coordinator serves the committed offsets", 30*time.Second, func() bool {
		return committedTotal(ctx, t, kadm.NewClient(after), groupID) == 300
	})
	produceValues(ctx, t, cl, 300, 100)
	resumed := consumeGroup(ctx, t, nodes, topic, groupID, 100)
	for v := range resumed {
		var n int
		fmt.Sscanf(v, "r%d", &n)
		if n < 300 {
			t.Fatalf("after the coordinator moved from %d to %d the group read %s again: its commit was lost", coordinator, next, v)
		}
	}
	nodes[coordinator-1].Restart()
}

func produceValues(ctx context.Context, t *testing.T, cl *kgo.Client, from, count int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, count)
	for i := from; i < from+count; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("r%04d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeGroup joins groupID, reads want records, commits them and leaves;
// it returns the values read (failing on a value read twice).
func consumeGroup(ctx context.Context, t *testing.T, nodes []*harness.Node, topic, groupID string, want int) map[string]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	readCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(seen) < want && readCtx.Err() == nil {
		fs := cl.PollFetches(readCtx)
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("%s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	if len(seen) < want {
		t.Fatalf("the group read %d records, want %d", len(seen), want)
	}
	if err := cl.CommitUncommittedOffsets(readCtx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return seen
}

func liveSeeds(nodes []*harness.Node) []string {
	var live []string
	for _, n := range nodes {
		if n.Running() {
			live = append(live, n.KafkaAddr)
		}
	}
	return live
}

func coordinatorOf(ctx context.Context, t *testing.T, adm *kadm.Client, groupID string) int32 {
	t.Helper()
	cs := adm.FindGroupCoordinators(ctx, groupID)
	c, ok := cs[groupID]
	if !ok || c.Err != nil {
		return -1
	}
	return c.NodeID
}

func committedTotal(ctx context.Context, t *testing.T, adm *kadm.Client, groupID string) int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		return -1
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil {
			total += o.At
		}
	})
	return total
}

// offsetFetchCode sends OffsetFetch for groupID to one broker directly.
func offsetFetchCode(ctx context.Context, t *testing.T, addr, groupID string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The client sends the newest version both sides know (v8+: groups
	// in a list).
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = groupID
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version >= 8 && len(resp.Groups) == 1 {
		return resp.Groups[0].ErrorCode
	}
	return resp.ErrorCode
}
