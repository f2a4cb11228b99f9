package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// steadyProducer writes numbered records one at a time (acks=all,
// idempotent, retried through leader changes) until stop, recording each
// acknowledged offset and the longest time between two acknowledgements.
type steadyProducer struct {
	cl      *kgo.Client
	stopped chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	acked   map[int64]string
	lastAck time.Time
	maxGap  time.Duration
	err     error
}

// ackedSince reports whether a record was acknowledged after since.
func (sp *steadyProducer) ackedSince(since time.Time) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.lastAck.After(since)
}

func startSteadyProducer(cl *kgo.Client) *steadyProducer {
	sp := &steadyProducer{cl: cl, stopped: make(chan struct{}), done: make(chan struct{}), acked: map[int64]string{}, lastAck: time.Now()}
	go func() {
		defer close(sp.done)
		for n := 0; ; n++ {
			select {
			case <-sp.stopped:
				return
			default:
			}
			v := fmt.Sprint(n)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)})
			cancel()
			sp.mu.Lock()
			if err := res.FirstErr(); err != nil {
				sp.err = fmt.Errorf("produce %s: %w", v, err)
				sp.mu.Unlock()
				return
			}
			now := time.Now()
			sp.maxGap = max(sp.maxGap, now.Sub(sp.lastAck))
			sp.lastAck = now
			sp.acked[res[0].Record.Offset] = v
			sp.mu.Unlock()
			time.Sleep(10 * time.Millisecond) // a steady trickle, not a flood, on 2 cores
		}
	}()
	return sp
}

// stop ends the producer and returns what it acknowledged and its longest
// gap between acknowledgements.
func (sp *steadyProducer) stop(t *testing.T) (map[int64]string, time.Duration) {
	t.Helper()
	close(sp.stopped)
	<-sp.done
	if sp.err != nil {
		t.Fatal(sp.err)
	}
	return sp.acked, sp.maxGap
}

// checkAcked reads topic's partition 0 from the start and fails when an
// acknowledged record is not at its acknowledged offset.
func checkAcked(t *testing.T, nodes []*harness.Node, topic string, acked map[int64]string) {
	t.Helper()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var last int64 = -1
	for off := range acked {
		last = max(last, off)
	}
	seen := map[int64]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(seen) <= int(last) && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[r.Offset] = string(r.Value) })
	}
	for off, v := range acked {
		if seen[off] != v {
			t.Fatalf("acknowledged %q at offset %d; the log has %q there", v, off, seen[off])
		}
	}
	t.Logf("all %d acknowledged records read back at their offsets", len(acked))
}

// isrOf is topic's partition 0's ISR in the Metadata of the broker at
// addr (its controller's view), or nil.
func isrOf(addr, topic string) []int32 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil || len(md.Topics[topic].Partitions) != 1 {
		return nil
	}
	return md.Topics[topic].Partitions[0].ISR
}

// A replica frozen (SIGSTOP) past its ZooKeeper session timeout, a
// follower or the leader, is removed from the ISR by the controller; once
// thawed it re-registers, is told its role, truncates, catches up and
// rejoins the ISR. Issue 23 asks for ≤ 3 s from the heal; the bound here
// is generous (2 cores shared with other clusters), the figures are
// logged: the leader's own ISR (its GET /topics/{t}) and the Metadata of
// a broker that neither leads nor was frozen (the controller's view).
func TestHealedReplicaRejoinsTheISR(t *testing.T) {
	for _, frozenRole := range []string{"follower", "leader"} {
		t.Run(frozenRole, func(t *testing.T) { testRejoin(t, frozenRole) })
	}
}

func testRejoin(t *testing.T, frozenRole string) {
	nodes := startCluster(t, 3)
	topic := "rejoin-" + frozenRole
	cl, adm := replicatedProducer(t, nodes, topic)
	produceNumbered(t, cl, 0, 5)
	leader := leaderOf(t, adm, topic)
	controller := controllerOf(t, nodes)
	frozen := leader
	if frozenRole == "follower" {
		for id := int32(1); id <= 3; id++ {
			if id != leader && (id != controller || frozen == leader) {
				frozen = id
			}
		}
	}
	all := []int32{1, 2, 3}
	harness.WaitFor(t, "an ISR of 3", 30*time.Second, func() bool { return sameSet(isrOf(nodes[0].KafkaAddr, topic), all) })
	sp := startSteadyProducer(cl)
	nodes[frozen-1].Freeze()
	var newLeader int32
	harness.WaitFor(t, "the frozen broker leaves the ISR (its session expired)", 40*time.Second, func() bool {
		for id := int32(1); id <= 3; id++ {
			if id == frozen {
				continue
			}
			isr := isrOf(nodes[id-1].KafkaAddr, topic)
			if len(isr) > 0 && !slices.Contains(isr, frozen) {
				newLeader = leaderOf(t, adm, topic)
				return newLeader > 0 && newLeader != frozen
			}
		}
		return false
	})
	shrunk := time.Now()
	harness.WaitFor(t, "an ack under the new ISR", 30*time.Second, func() bool { return sp.ackedSince(shrunk) })
	thawed := time.Now()
	nodes[frozen-1].Thaw()
	var bystander int32
	for id := int32(1); id <= 3; id++ {
		if id != frozen && id != newLeader {
			bystander = id
		}
	}
	var inLeader, inView time.Duration
	harness.WaitFor(t, "the thawed broker rejoins the ISR, in the leader's and the controller's view", 30*time.Second, func() bool {
		if inLeader == 0 {
			if p, ok := partitionOf(nodes[newLeader-1], topic); ok && p.Leader == newLeader && slices.Contains(p.ISR, frozen) {
				inLeader = time.Since(thawed)
			}
		}
		if inView == 0 && slices.Contains(isrOf(nodes[bystander-1].KafkaAddr, topic), frozen) {
			inView = time.Since(thawed)
		}
		return inLeader > 0 && inView > 0
	})
	acked, gap := sp.stop(t)
	t.Logf("%s %d thawed: in the leader's (%d) ISR after %v, in the Metadata of broker %d after %v; longest produce stall %v",
		frozenRole, frozen, newLeader, inLeader.Round(time.Millisecond), bystander, inView.Round(time.Millisecond), gap.Round(time.Millisecond))
	if bound := 10 * time.Second; inLeader > bound || inView > bound {
		t.Errorf("rejoined after %v (leader) and %v (Metadata); want both within %v (issue 23's goal: 3 s)", inLeader, inView, bound)
	}
	checkAcked(t, nodes, topic, acked)
}
