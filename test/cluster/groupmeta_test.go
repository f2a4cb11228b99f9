package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// A consumer group whose coordinator is killed (kill -9) keeps its
// generation: the new leader of the group's __consumer_offsets partition
// loads the group's metadata with its offsets, so the member's heartbeats
// and commits of its generation are accepted there and it never rejoins
// (no partitions revoked, lost or assigned again), and what is produced
// after the kill is read once and committed.
func TestConsumerGroupKeepsGenerationWhenCoordinatorKilled(t *testing.T) {
	nodes := startCluster(t, 3, "--offsets-topic-num-partitions", "3", "--group-initial-rebalance-delay-ms", "0")
	const topic, groupID = "metered", "metering"
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(producer).CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	produceValues(ctx, t, producer, 0, 100)

	var assigned, revoked, lost atomic.Int32
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.RetryTimeout(60*time.Second),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Add(1) }),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { revoked.Add(1) }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { lost.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	reader := startReader(ctx, t, consumer)
	defer func() {
		reader.stop()
		consumer.Close()
	}()

	reader.waitFor(t, 100)
	adm := kadm.NewClient(producer)
	harness.WaitFor(t, "the first 100 records are committed", 30*time.Second, func() bool {
		return committedTotal(ctx, t, adm, groupID) == 100
	})
	memberBefore, genBefore := consumer.GroupMetadata()
	described := describeGroup(ctx, t, adm, groupID)
	if described.State != "Stable" || len(described.Members) != 1 || described.Members[0].MemberID != memberBefore {
		t.Fatalf("group before the kill: %+v (client is %s generation %d)", described, memberBefore, genBefore)
	}
	coordinator := coordinatorOf(ctx, t, adm, groupID)
	if coordinator < 1 {
		t.Fatal("no coordinator")
	}

	nodes[coordinator-1].Kill()
	// A new admin client: franz-go keeps dialling a coordinator it has
	// cached until the broker answers.
	after, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	afterAdm := kadm.NewClient(after)
	var next int32
	harness.WaitFor(t, "another broker coordinates the group", 60*time.Second, func() bool {
		next = coordinatorOf(ctx, t, afterAdm, groupID)
		return next > 0 && next != coordinator
	})
	harness.WaitFor(t, "the new coordinator serves the group", 30*time.Second, func() bool {
		d := describeGroup(ctx, t, afterAdm, groupID)
		return d.Err == nil && d.State == "Stable"
	})
	described = describeGroup(ctx, t, afterAdm, groupID)
	if len(described.Members) != 1 || described.Members[0].MemberID != memberBefore {
		t.Fatalf("group loaded by broker %d: %+v, want member %s", next, described, memberBefore)
	}

	produceValues(ctx, t, producer, 100, 100)
	reader.waitFor(t, 200)
	harness.WaitFor(t, "all 200 records are committed at the new coordinator", 30*time.Second, func() bool {
		return committedTotal(ctx, t, afterAdm, groupID) == 200
	})
	memberAfter, genAfter := consumer.GroupMetadata()
	described = describeGroup(ctx, t, afterAdm, groupID)
	if memberAfter != memberBefore || genAfter != genBefore {
		t.Fatalf("the client is %s generation %d after the coordinator moved from %d to %d, was %s generation %d",
			memberAfter, genAfter, coordinator, next, memberBefore, genBefore)
	}
	if described.State != "Stable" || len(described.Members) != 1 || described.Members[0].MemberID != memberBefore {
		t.Fatalf("group after the move: %+v", described)
	}
	if a, r, l := assigned.Load(), revoked.Load(), lost.Load(); a != 1 || r != 0 || l != 0 {
		t.Fatalf("partitions assigned %d, revoked %d, lost %d times; want one assignment and nothing else", a, r, l)
	}
	if d := reader.duplicates(); len(d) > 0 {
		t.Fatalf("records read twice: %v", d)
	}
	t.Logf("coordinator %d killed, broker %d took the group over at generation %d; member %s kept its assignment",
		coordinator, next, genAfter, memberAfter)
}

func describeGroup(ctx context.Context, t *testing.T, adm *kadm.Client, groupID string) kadm.DescribedGroup {
	t.Helper()
	gs, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return kadm.DescribedGroup{Err: err}
	}
	return gs[groupID]
}

// groupReader polls a group consumer on its own goroutine and commits
// after every poll, as an application that commits what it processed.
type groupReader struct {
	mu     sync.Mutex
	seen   map[string]int
	cancel context.CancelFunc
	done   chan struct{}
}

func startReader(ctx context.Context, t *testing.T, cl *kgo.Client) *groupReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &groupReader{seen: map[string]int{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) { r.seen[string(rec.Value)]++ })
			r.mu.Unlock()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Logf("commit (retried with the next poll): %v", err)
			}
		}
	}()
	return r
}

func (r *groupReader) stop() {
	r.cancel()
	<-r.done
}

func (r *groupReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *groupReader) waitFor(t *testing.T, n int) {
	t.Helper()
	harness.WaitFor(t, fmt.Sprintf("the group reads %d records", n), 60*time.Second, func() bool { return r.count() >= n })
}

func (r *groupReader) duplicates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for v, n := range r.seen {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s×%d", v, n))
		}
	}
	return out
}
