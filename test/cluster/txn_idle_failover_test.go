package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
func TestTxnIdleProducerSurvivesCoordinatorKill(t *testing.T) {
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3",
		"--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500")
	const topic, id = "txn-idle-failover", "idle"
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	createFullISRTopic(ctx, t, adm, topic)
	// Each attempt has a client of its own, made once every broker
	// advertises transaction.version 2, with one transaction before the
	// one the kill follows. franz-go keeps the versions a connection's
	// ApiVersions said, a broker advertises EndTxn v5 only once it has read
	// the finalized level, and franz-go's first transaction runs before it
	// has heard any broker: an end at version 1 (EndTxn v4: no epoch bump,
	// nothing carried) is not what this test is about. The coordinator
	// writes the completion a few milliseconds after the markers; a kill
	// sent as the commit returns lands before it. If the new coordinator
	// still loads no carried partitions, the node comes back and the round
	// repeats.
	var committed []string
	var cl *kgo.Client
	commit := func(v string) {
		t.Helper()
		if err := commitOne(ctx, cl, v); err != nil {
			t.Fatal(err)
		}
		committed = append(committed, v)
	}
	var coord int32
	for attempt := 1; ; attempt++ {
		waitAllAdvertise(t, nodes, 2)
		cl = txnClient(t, nodes, id, topic, kgo.TransactionTimeout(3*time.Second))
		commit(fmt.Sprintf("first-%d", attempt))
		coord = txnCoordinatorOf(t, adm, id)
		commit(fmt.Sprintf("before-kill-%d", attempt))
		nodes[coord-1].Kill()

		state, sawOngoing := describeUntilSettled(t, nodes, coord, id)
		switch {
		case state == "CompleteAbort":
			t.Fatal("the new coordinator aborted the idle producer's transaction it never began (fenced)")
		case sawOngoing:
			t.Logf("attempt %d: the new coordinator took the next transaction as begun, then settled it as %s", attempt, state)
		case attempt < 5:
			t.Logf("attempt %d: the new coordinator loaded nothing carried; again", attempt)
			cl.Close()
			nodes[coord-1].Restart()
			waitControllerSeesAll(t, nodes)
			waitISR(t, adm, topic, 3)
			continue
		default:
			t.Fatal("five kills and no carried partitions loaded")
		}
		break
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
