package txn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/test/harness"
)

// A producer's next AddPartitionsToTxn sent while its last commit's
// markers are still being written waits for the completion and is
// answered once it is recorded, instead of CONCURRENT_TRANSACTIONS; while
// the markers cannot be written it is answered CONCURRENT_TRANSACTIONS
// after concurrentWait.
func TestAddPartitionsWaitsForTheCompletionInFlight(t *testing.T) {
	ml := &markerLog{failing: errors.New("leader slow")}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))

	start := time.Now()
	if code := n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the markers fail: %v", kerr.ErrorForCode(code))
	}
	if waited := time.Since(start); waited < concurrentWait {
		t.Fatalf("answered CONCURRENT_TRANSACTIONS after %v, before concurrentWait", waited)
	}

	added := make(chan int16, 1)
	go func() { added <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "the add waits for the markers", 5*time.Second, func() bool { return parkedCount(n.c, "tx") == 1 })
	ml.fail(nil)
	must(t, "add as the markers go through", <-added)
	if got, _ := n.c.Describe("tx"); got.State != Ongoing || len(got.Partitions) != 1 {
		t.Fatalf("after the wait: %+v", got)
	}
}

// parkedCount is how many requests wait for id's markers.
func parkedCount(c *Coordinator, id string) int {
	e, ok := c.lookup(id, false)
	if !ok {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.parked)
}

// The producer's next AddPartitionsToTxn, sent while the markers of its
// last commit are written, is answered after one state write: the
// completion and the new transaction are the same record, which a
// restarted coordinator reads as the new transaction (its predecessor
// completed, its markers written once).
func TestNextTransactionSharesTheCompletionsWrite(t *testing.T) {
	ml := &markerLog{failing: errors.New("leader slow")}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, ml, clk)
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))

	n.c.concurrentWait = time.Minute // the request stays parked however slow this machine
	answer := make(chan int16, 1)
	go func() { answer <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "the request parked", 5*time.Second, func() bool { return parkedCount(n.c, "tx") == 1 })
	appends := n.c.stateAppends.Load()
	ml.fail(nil)
	must(t, "add of the next transaction", <-answer)
	if d := n.c.stateAppends.Load() - appends; d != 1 {
		t.Fatalf("%d state appends for the completion and the next transaction, want 1", d)
	}
	tx, _ := n.c.Describe("tx")
	if tx.State != Ongoing || len(tx.Partitions) != 1 || tx.Partitions[0] != (TopicPartition{"orders", 1}) {
		t.Fatalf("after the merged write: %+v", tx)
	}
	if markers, _ := ml.snapshot(); len(markers) != 1 || !markers[0].Commit || markers[0].Partition != 0 {
		t.Fatalf("markers %+v: want the commit's one", markers)
	}

	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	tx = n.waitState("tx", Ongoing)
	if len(tx.Partitions) != 1 || tx.Partitions[0] != (TopicPartition{"orders", 1}) {
		t.Fatalf("reloaded: %+v", tx)
	}
	must(t, "commit the next transaction", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	n.waitState("tx", CompleteCommit)
	if markers, _ := n.markers.snapshot(); len(markers) != 1 || markers[0].Partition != 1 {
		t.Fatalf("markers after the reload: %+v, want only the next transaction's", markers)
	}
}

// Requests parked in order are decided in order on the completed
// transaction: the next transaction starts, then a new producer instance
// fences it, which prepares its abort; those markers follow, and the
// fencing producer is told to retry, as when it arrives during an ongoing
// transaction.
func TestParkedRequestsAreDecidedInOrder(t *testing.T) {
	ml := &markerLog{failing: errors.New("leader slow")}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))

	n.c.concurrentWait = time.Minute
	add, init := make(chan int16, 1), make(chan int16, 1)
	go func() { add <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "the add parked", 5*time.Second, func() bool { return parkedCount(n.c, "tx") == 1 })
	go func() {
		_, _, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
		init <- code
	}()
	harness.WaitFor(t, "the init parked", 5*time.Second, func() bool { return parkedCount(n.c, "tx") == 2 })
	ml.fail(nil)
	must(t, "add", <-add)
	if code := <-init; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init fencing the next transaction: %v", kerr.ErrorForCode(code))
	}
	tx := n.waitState("tx", CompleteAbort)
	if tx.ProducerEpoch != epoch+1 {
		t.Fatalf("after the fence: %+v", tx)
	}
	markers, _ := ml.snapshot()
	if len(markers) != 2 || !markers[0].Commit || markers[0].Partition != 0 ||
		markers[1].Commit || markers[1].Partition != 1 || markers[1].ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v: want the commit on orders-0, then the fenced abort on orders-1", markers)
	}
}

// A request parked for markers that never get written (this broker
// stopped coordinating) is answered CONCURRENT_TRANSACTIONS after
// concurrentWait and leaves nothing parked behind.
func TestParkedRequestGivesUp(t *testing.T) {
	ml := &markerLog{failing: errors.New("leader unreachable")}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	if code := n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the markers fail: %v", kerr.ErrorForCode(code))
	}
	if k := parkedCount(n.c, "tx"); k != 0 {
		t.Fatalf("%d requests still parked", k)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		harness.WaitFor(t, "parked", 5*time.Second, func() bool { return parkedCount(n.c, "tx") == 1 })
		cancel()
	}()
	if code := n.c.AddPartitions(cctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add canceled while parked: %v", kerr.ErrorForCode(code))
	}
	if k := parkedCount(n.c, "tx"); k != 0 {
		t.Fatalf("%d requests still parked after a cancel", k)
	}
}

// A commit prepared while the previous completion is still ending (its
// CompleteCommit written, the completer not yet done) gets its markers:
// at transaction.version 1 both transactions have the same producer id,
// epoch and state, and the ending completion took the new one for its
// own, leaving it prepared for good (a hanging transaction).
func TestCommitPreparedWhileTheLastCompletionEnds(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ending, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	n.c.endingCompletion = func() {
		holdOnce.Do(func() {
			close(ending)
			<-release
		})
	}
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "first commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	<-ending // the first commit's markers and CompleteCommit are written

	must(t, "next add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	must(t, "second commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	close(release)
	n.waitState("tx", CompleteCommit)
	markers, _ := ml.snapshot()
	if len(markers) != 2 || markers[0].Partition != 0 || markers[1].Partition != 1 || !markers[1].Commit {
		t.Fatalf("markers: %+v, want a commit of orders-0, then one of orders-1", markers)
	}
}

// A request refused CONCURRENT_TRANSACTIONS by a write in flight, which
// ends before the request looks at what to wait for, tries again at
// once. It used to wait for the next wake-up, which never came while a
// completion was under way with nothing else in flight: one CI run hung
// a completer so (its completion's write refused by another write) for
// concurrentWait, and behind it every leader's add of the producer's
// next transaction, waiting for that completion to end. Here the
// completion is the state a completer is in between its markers and its
// record (completing, markers done), set by hand.
func TestRefusedByAWriteThatEndsBeforeTheWaitTriesAgain(t *testing.T) {
	n, pid, epoch := patientProducer(t)
	ctx := context.Background()
	must(t, "the first add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	e, _ := n.c.lookup("tx", false)
	setCompleting := func(on bool) {
		e.mu.Lock()
		e.completing, e.markersDone = on, on
		e.mu.Unlock()
	}
	setCompleting(true)
	defer setCompleting(false)

	gate := gateReplication(n.c)
	release := gate.HoldAcks()
	inFlight := make(chan int16, 1)
	var endIt sync.Once
	n.c.refused = func() {
		endIt.Do(func() { // the last add met this one's write: end it
			release()
			must(t, "the add in flight", <-inFlight)
		})
	}
	go func() { inFlight <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "an add's write in flight", 5*time.Second, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.busy
	})
	last := make(chan int16, 1)
	go func() { last <- n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}) }()
	code, ok := answered(last, 10*time.Second)
	if !ok {
		t.Fatal("the last add still waits, 10 s after the write it met ended")
	}
	must(t, "the last add", code)
	if tx, _ := n.c.Describe("tx"); len(tx.Partitions) != 3 {
		t.Fatalf("the transaction holds %v, want orders-0, 1 and 2", tx.Partitions)
	}
}

// patientProducer is a node whose requests wait out a transition in
// flight for a minute (concurrentWait), so that what a test checks is
// what they decide, not how long a loaded machine makes them wait; and
// the producer id and epoch of its transactional id "tx".
func patientProducer(t *testing.T) (*node, int64, int16) {
	t.Helper()
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.UnixMilli(1_700_000_000_000)})
	n.c.concurrentWait = time.Minute
	pid, epoch, code := n.c.InitProducerID(context.Background(), "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	return n, pid, epoch
}
