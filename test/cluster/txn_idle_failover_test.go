package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/test/harness"
)

// TestTxnIdleProducerSurvivesCoordinatorKill: a transaction.version 2
// producer commits, its coordinator is killed (-9) before it records the
// completion, and the producer stays idle past its transaction timeout.
// The new coordinator loads a record carrying the committed transaction's
// partition, so it cannot know whether the producer's next transaction
// began there; it used to abort that transaction at the timeout and fence
// the producer. Now it probes the partition's leader, finds nothing open,
// and the producer commits its next transaction at its epoch.
//
// The kill is made to land before the completion, not raced against it:
// __transaction_state has two replicas (the coordinator and the one that
// takes over), the topic's one replica is the third broker, and that
// broker is frozen across the commit. The coordinator answers EndTxn once
// its PrepareCommit is acknowledged, and cannot write the completion
// until the frozen leader has taken the markers.
func TestTxnIdleProducerSurvivesCoordinatorKill(t *testing.T) {
	const topic, id, stateParts = "txn-idle-failover", "idle", 3
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", fmt.Sprint(stateParts),
		"--transaction-state-log-replication-factor", "2", "--transaction-state-log-min-isr", "1",
		"--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500")
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	coord := txnCoordinatorOf(t, adm, id) // creates __transaction_state
	stateReplicas := txnStateReplicas(t, nodes, ownership.JavaHashPartition(id, stateParts))
	if len(stateReplicas) != 2 || !slices.Contains(stateReplicas, coord) {
		t.Fatalf("%s's __transaction_state partition has replicas %v, coordinator %d", id, stateReplicas, coord)
	}
	var leader int32 // the broker holding no replica of id's state
	for b := int32(1); b <= 3; b++ {
		if !slices.Contains(stateReplicas, b) {
			leader = b
		}
	}
	createOn(t, nodes, topic, leader)

	// Only a transaction.version 2 end (EndTxn v5) carries partitions:
	// franz-go opts in at BeginTransaction once a broker's ApiVersions
	// said the finalized level, and that end bumps the epoch.
	waitAllAdvertise(t, nodes, 2)
	cl := txnClient(t, nodes, id, topic, kgo.TransactionTimeout(3*time.Second))
	committed := []string{"first", "before-kill"}
	if err := commitOne(ctx, cl, committed[0]); err != nil {
		t.Fatal(err)
	}
	if got := txnCoordinatorOf(t, adm, id); got != coord {
		t.Fatalf("the coordinator moved from %d to %d", coord, got)
	}
	if d, err := adm.DescribeTransactions(ctx, id); err != nil || d[id].Err != nil || d[id].ProducerEpoch < 1 {
		t.Fatalf("after one commit: %+v, %v; want an epoch bumped by a version 2 end", d[id], err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord(committed[1])).FirstErr(); err != nil {
		t.Fatal(err)
	}
	nodes[leader-1].Freeze()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		nodes[leader-1].Thaw()
		t.Fatalf("commit with the partition's leader frozen: %v", err)
	}
	nodes[coord-1].Kill()
	nodes[leader-1].Thaw()

	state, sawOngoing := describeUntilSettled(t, nodes, coord, id)
	switch {
	case state == "CompleteAbort":
		t.Fatal("the new coordinator aborted the idle producer's transaction it never began (fenced)")
	case !sawOngoing:
		t.Fatalf("the new coordinator settled the state as %s without taking the next transaction as begun: it loaded nothing carried", state)
	}
	if !anyLogs(nodes, "no transaction began on a loaded state's carried partitions") {
		t.Fatal("the new coordinator settled the state without probing")
	}

	// The producer was idle past its timeout; it goes on unfenced. The
	// killed broker is back first: franz-go may still hold it as the
	// coordinator, and gives up on an address that refuses connections,
	// where a live broker's NOT_COORDINATOR sends it to the new one.
	nodes[coord-1].Restart()
	waitControllerSeesAll(t, nodes)
	if err := commitOne(ctx, cl, "after-idle"); err != nil {
		t.Fatalf("the idle producer's next transaction: %v (fenced: %v)", err, isFencing(err))
	}
	want := append(slices.Clone(committed), "after-idle")
	slices.Sort(want)
	if got := readAllAt(t, nodes, topic, kgo.ReadCommitted(), len(want)); !slices.Equal(got, want) {
		t.Fatalf("read_committed holds %v, want %v", got, want)
	}
}

// txnStateReplicas is the replicas of __transaction_state's partition p.
func txnStateReplicas(t *testing.T, nodes []*harness.Node, p int32) []int32 {
	t.Helper()
	const topic = "__transaction_state"
	var replicas []int32
	harness.WaitFor(t, "the replicas of "+topic, 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes, topic)
		if err != nil || md.Topics[topic].Err != nil {
			return false
		}
		pd, ok := md.Topics[topic].Partitions[p]
		replicas = pd.Replicas
		return ok && len(replicas) > 0
	})
	return replicas
}

// commitOne writes v in a transaction of its own and commits it.
func commitOne(ctx context.Context, cl *kgo.Client, v string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// describeUntilSettled polls the transaction of id, once a broker other
// than the killed one coordinates it, until it is complete (committed or
// aborted); sawOngoing reports whether it was described as ongoing on
// the way, which a completed state is only when loaded from a record
// carrying partitions (the next transaction may have begun on them).
func describeUntilSettled(t *testing.T, nodes []*harness.Node, killed int32, id string) (state string, sawOngoing bool) {
	t.Helper()
	var live []*harness.Node
	for i, n := range nodes {
		if int32(i+1) != killed {
			live = append(live, n)
		}
	}
	adm := txnAdmin(t, live)
	harness.WaitFor(t, "the new coordinator to settle "+id, 90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r := adm.FindTxnCoordinators(ctx, id)[id]
		if r.Err != nil || r.NodeID == killed || r.NodeID <= 0 {
			return false
		}
		d, err := adm.DescribeTransactions(ctx, id)
		if err != nil || d[id].Err != nil {
			return false
		}
		state = d[id].State
		if state == "Ongoing" {
			sawOngoing = true
		}
		return state == "CompleteCommit" || state == "CompleteAbort"
	})
	return state, sawOngoing
}
