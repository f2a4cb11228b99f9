package txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/txn/txntest"
	"github.com/ferry-mq/ferry/test/harness"
)

// replicationGate stands between the coordinator and its state appends on
// a single node, where the replicas would otherwise acknowledge a record
// as it is appended: it holds the acknowledgement back, or loses the
// record (it reaches no log, as when the coordinator dies before its
// followers fetch it).
type replicationGate struct {
	txntest.AckGate
	real func(context.Context, *server.ProduceRequest) error
	mu   sync.Mutex
	lose bool // the record is "appended" but reaches no log
}

var errRecordLost = fmt.Errorf("%w: the record did not reach the replicas", server.ErrNotEnoughReplicasAfterAppend)

func gateReplication(c *Coordinator) *replicationGate {
	g := &replicationGate{real: c.appendState}
	c.appendState = g.append
	return g
}

func (g *replicationGate) append(ctx context.Context, req *server.ProduceRequest) error {
	g.mu.Lock()
	lose := g.lose
	g.mu.Unlock()
	if lose {
		if req.OnAppended != nil {
			req.OnAppended()
		}
		return errRecordLost
	}
	err := g.real(ctx, req)
	g.Wait()
	return err
}

func (g *replicationGate) loseRecords(lose bool) {
	g.mu.Lock()
	g.lose = lose
	g.mu.Unlock()
}

// answered returns what ch delivers within d, or false: the call is still
// waiting.
func answered(ch <-chan int16, d time.Duration) (int16, bool) {
	select {
	case code := <-ch:
		return code, true
	case <-time.After(d):
		return 0, false
	}
}

// startTxn opens a transaction on orders-0, acknowledged.
func startTxn(t *testing.T, n *node) (int64, int16) {
	t.Helper()
	pid, epoch, code := n.c.InitProducerID(context.Background(), "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "first add", n.c.AddProducerPartitions(context.Background(), "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	return pid, epoch
}

// A partition joining an ongoing transaction is answered once its record
// is appended; its leader's verification, a leader's own add of it and
// EndTxn wait until the replicas acknowledge it, and the commit's markers
// include it.
func TestEarlyAddAnsweredBeforeTheReplicasAcknowledge(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	g := gateReplication(n.c)
	ctx := context.Background()
	pid, epoch := startTxn(t, n)

	release := g.HoldAcks()
	defer release()
	must(t, "early add", n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	if got, _ := n.c.Describe("tx"); !got.Has(TopicPartition{"orders", 1}) {
		t.Fatalf("the early add is not in the transaction: %+v", got)
	}
	must(t, "verify a partition acknowledged before", n.c.VerifyTxnPartition(ctx, "tx", pid, epoch, "orders", 0))

	verified, added, ended := make(chan int16, 1), make(chan int16, 1), make(chan int16, 1)
	go func() { verified <- n.c.VerifyTxnPartition(ctx, "tx", pid, epoch, "orders", 1) }()
	go func() { added <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	if code, ok := answered(verified, 100*time.Millisecond); ok {
		t.Fatalf("the verification answered %v before the replicas acknowledged the add", kerr.ErrorForCode(code))
	}
	if code, ok := answered(added, 0); ok {
		t.Fatalf("a leader's add answered %v before the replicas acknowledged the early add", kerr.ErrorForCode(code))
	}
	release()
	must(t, "verification once acknowledged", <-verified)
	must(t, "leader's add once acknowledged", <-added)

	// EndTxn waits too. (Not asked beside the verification above: once
	// the commit is prepared a verification answers
	// CONCURRENT_TRANSACTIONS, and which comes first is a race no
	// client makes, as it ends a transaction after its produces.)
	release = g.HoldAcks()
	defer release()
	must(t, "another early add", n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}))
	go func() { ended <- n.c.EndTxn(ctx, "tx", pid, epoch, true) }()
	if code, ok := answered(ended, 50*time.Millisecond); ok {
		t.Fatalf("EndTxn answered %v before the replicas acknowledged", kerr.ErrorForCode(code))
	}
	release()
	must(t, "commit", <-ended)
	n.waitState("tx", CompleteCommit)
	got, _ := ml.snapshot()
	if len(got) != 3 || got[0].Partition != 0 || got[1].Partition != 1 || got[2].Partition != 2 {
		t.Fatalf("markers: %+v", got)
	}
}

// The first partitions of a transaction wait for their record: a
// coordinator that lost it would know no transaction to abort.
func TestFirstAddOfATransactionWaitsForTheReplicas(t *testing.T) {
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.UnixMilli(1_700_000_000_000)})
	g := gateReplication(n.c)
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	release := g.HoldAcks()
	defer release()
	added := make(chan int16, 1)
	go func() {
		added <- n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}})
	}()
	if code, ok := answered(added, 100*time.Millisecond); ok {
		t.Fatalf("the first add answered %v before the replicas acknowledged", kerr.ErrorForCode(code))
	}
	release()
	must(t, "first add", <-added)
}

// A coordinator that dies before its replicas have the early add's
// record: the next one, reading the log, refuses the partition's data
// (INVALID_TXN_STATE, abortable) and aborts the transaction it knows,
// with no marker for the partition; the old one never answered the
// partition's verification.
func TestEarlyAddLostWithItsCoordinator(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, &markerLog{}, clk)
	g := gateReplication(n.c)
	ctx := context.Background()
	pid, epoch := startTxn(t, n)

	g.loseRecords(true)
	must(t, "early add", n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	vctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if code := n.c.VerifyTxnPartition(vctx, "tx", pid, epoch, "orders", 1); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("verification of a partition whose record is lost: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	n.stop()

	ml := &markerLog{}
	n = newNode(t, dir, ml, clk)
	got := n.waitState("tx", Ongoing)
	if got.Has(TopicPartition{"orders", 1}) || !got.Has(TopicPartition{"orders", 0}) {
		t.Fatalf("the new coordinator's transaction: %+v", got)
	}
	if code := n.c.VerifyTxnPartition(ctx, "tx", pid, epoch, "orders", 1); code != kerr.InvalidTxnState.Code {
		t.Fatalf("verification at the new coordinator: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	must(t, "abort", n.c.EndTxn(ctx, "tx", pid, epoch, false))
	n.waitState("tx", CompleteAbort)
	markers, _ := ml.snapshot()
	if len(markers) != 1 || markers[0].Partition != 0 || markers[0].Commit {
		t.Fatalf("markers: %+v", markers)
	}
}

// An early add whose record failed is written again when its partition's
// leader asks: the verification passes once a record holding it is
// acknowledged, and a restarted coordinator reads it.
func TestEarlyAddRewrittenWhenItsRecordFailed(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, &markerLog{}, clk)
	g := gateReplication(n.c)
	ctx := context.Background()
	pid, epoch := startTxn(t, n)

	g.loseRecords(true)
	must(t, "early add", n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}))
	waitEarlyWritesSettled(t, n.c, "tx")
	g.loseRecords(false)
	appends := n.c.stateAppends.Load()
	must(t, "verification", n.c.VerifyTxnPartition(ctx, "tx", pid, epoch, "orders", 2))
	if d := n.c.stateAppends.Load() - appends; d != 1 {
		t.Fatalf("%d state appends for the verification, want 1 (the state written again)", d)
	}
	must(t, "verification again", n.c.VerifyTxnPartition(ctx, "tx", pid, epoch, "orders", 2))
	if d := n.c.stateAppends.Load() - appends; d != 1 {
		t.Fatalf("%d state appends after a second verification, want still 1", d)
	}
	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	if got := n.waitState("tx", Ongoing); !got.Has(TopicPartition{"orders", 2}) {
		t.Fatalf("after the restart: %+v", got)
	}
}

// An early add whose record cannot be appended at all is answered with
// the write's error.
func TestEarlyAddRefusedWhenTheAppendFails(t *testing.T) {
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch := startTxn(t, n)
	n.c.appendState = func(context.Context, *server.ProduceRequest) error {
		return fmt.Errorf("%w: leader moved", server.ErrNotLeader)
	}
	if code := n.c.AddProducerPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code != kerr.NotCoordinator.Code {
		t.Fatalf("early add whose append failed: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
}

func waitEarlyWritesSettled(t *testing.T, c *Coordinator, id string) {
	t.Helper()
	harness.WaitFor(t, "the early writes of "+id+" settled", 10*time.Second, func() bool {
		e, _ := c.lookup(id, false)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.earlyWrites == 0
	})
}
