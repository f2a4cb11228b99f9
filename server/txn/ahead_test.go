package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

// transaction.version 2, markers ahead of the next transaction: a
// partition leader's add for the producer's next transaction, arriving
// while the previous transaction's markers are written, is decided at
// once, the markers kept pending beside the next transaction.

func TestAheadOfMarkersDecision(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	addNext := func(tx *Txn) Outcome { return tx.AddPartitions(7, 1, []TopicPartition{tpB}, 2000) }
	out, ok := prepared.AheadOfMarkers(2000, 5, addNext)
	if !ok || !out.Write || out.Markers || out.Next.State != Ongoing || !slices.Equal(out.Next.Partitions, []TopicPartition{tpB}) {
		t.Fatalf("ahead: %v %+v", ok, out)
	}
	want := PendingMarkers{ProducerID: 7, ProducerEpoch: 1, TxnEpoch: 0, Commit: true, CoordinatorEpoch: 5, Partitions: []TopicPartition{tpA}}
	if pm := out.Next.Pending; pm == nil || pm.ProducerID != want.ProducerID || pm.ProducerEpoch != want.ProducerEpoch ||
		pm.TxnEpoch != want.TxnEpoch || pm.Commit != want.Commit || pm.CoordinatorEpoch != want.CoordinatorEpoch ||
		!slices.Equal(pm.Partitions, want.Partitions) {
		t.Fatalf("pending %+v, want %+v", out.Next.Pending, want)
	}
	// The record holds both and reads back the same.
	back := reload(t, out.Next)
	if back.State != Ongoing || back.Pending == nil || !slices.Equal(back.Pending.Partitions, want.Partitions) ||
		back.Pending.TxnEpoch != 0 || back.Pending.ProducerEpoch != 1 || !back.Pending.Commit {
		t.Fatalf("reloaded %+v (pending %+v)", back, back.Pending)
	}
	// Its end carries the pending markers along until they are written.
	end := out.Next.EndTxnV2(7, 1, false, 3000, noIDs)
	if end.Next.State != PrepareAbort || end.Next.Pending != out.Next.Pending {
		t.Fatalf("end of the next transaction: %+v", end.Next)
	}
	if epoch, known := end.Next.MarkersTxnEpoch(); !known || epoch != 1 {
		t.Fatalf("the next end's markers end epoch %d (%v), want 1", epoch, known)
	}

	for _, c := range []struct {
		name   string
		t      Txn
		decide Decision
	}{
		{"the old epoch", prepared, func(tx *Txn) Outcome { return tx.AddPartitions(7, 0, []TopicPartition{tpB}, 2000) }},
		{"not an add", prepared, func(tx *Txn) Outcome { return tx.EndTxnV2(7, 1, false, 2000, noIDs) }},
		{"markers pending already", end.Next, addNext},
		{"not prepared", out.Next, addNext},
		{"a version 1 end", func() Txn { p := prepared; p.ClientTransactionVersion = 0; return p }(), addNext},
		{"a rotation to a new producer id", func() Txn { p := prepared; p.NextProducerID = 8; return p }(), addNext},
	} {
		if _, ok := c.t.AheadOfMarkers(2000, 5, c.decide); ok {
			t.Errorf("%s: decided ahead of the markers", c.name)
		}
	}
}

func TestPendingMarkersDecoderRefusesBadBytes(t *testing.T) {
	good := encodePendingMarkers(&PendingMarkers{ProducerID: 7, ProducerEpoch: 1, Partitions: []TopicPartition{tpA, tpB}})
	if _, err := decodePendingMarkers(good); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":        nil,
		"truncated":    good[:len(good)-1],
		"trailing":     append(slices.Clone(good), 0),
		"huge count":   append(slices.Clone(good[:17]), 0xff, 0xff, 0xff, 0xff),
		"bad outcome":  func() []byte { b := slices.Clone(good); b[12] = 2; return b }(),
		"negative pid": func() []byte { b := slices.Clone(good); b[0] = 0x80; return b }(),
	} {
		if _, err := decodePendingMarkers(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// beginV2 starts a transaction.version 2 producer with one partition
// added by its leader and commits it while the leaders refuse markers.
func beginV2(t *testing.T, n *node, ml *markerLog) (pid int64, next int16) {
	t.Helper()
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "leader's add", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	ml.fail(errors.New("leader slow"))
	_, next, code = n.c.EndTxnV2(ctx, "tx", pid, epoch, true)
	must(t, "commit", code)
	return pid, next
}

// markersOf lists the markers written, as producer epoch, data epoch and
// partition, in order.
func markersOf(ml *markerLog) []server.TxnMarker {
	written, _ := ml.snapshot()
	return written
}

func wantMarkers(t *testing.T, got []server.TxnMarker, want ...server.TxnMarker) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ProducerEpoch != w.ProducerEpoch || g.Partition != w.Partition || g.Commit != w.Commit ||
			g.HasTxnEpoch != w.HasTxnEpoch || g.TxnEpoch != w.TxnEpoch {
			t.Fatalf("marker %d: %+v, want %+v (all: %+v)", i, g, w, got)
		}
	}
}

// The add is answered while the markers cannot be written; the next
// transaction's own markers wait for them, and go out after, each
// saying the epoch of the data it ends.
func TestLeaderAddAnsweredAheadOfTheMarkers(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml)
	appends := n.c.stateAppends.Load()
	must(t, "next transaction's add while the markers fail", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	if d := n.c.stateAppends.Load() - appends; d != 1 {
		t.Fatalf("%d state appends for the add, want 1", d)
	}
	tx, _ := n.c.Describe("tx")
	if tx.State != Ongoing || tx.ProducerEpoch != epoch || tx.Pending == nil || tx.Pending.Partitions[0].Partition != 0 {
		t.Fatalf("after the add: %+v (pending %+v)", tx, tx.Pending)
	}
	// A second leader of the same transaction: an ordinary add.
	must(t, "another leader", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}))
	_, _, code := n.c.EndTxnV2(ctx, "tx", pid, epoch, false)
	must(t, "abort the next transaction", code)
	awaitOnlyPendingTried(t, ml, 0)
	ml.fail(nil)
	n.waitState("tx", CompleteAbort)
	got := markersOf(ml)
	wantMarkers(t, got,
		server.TxnMarker{ProducerEpoch: 1, Partition: 0, Commit: true, TxnEpoch: 0, HasTxnEpoch: true},
		server.TxnMarker{ProducerEpoch: 2, Partition: 1, TxnEpoch: 1, HasTxnEpoch: true},
		server.TxnMarker{ProducerEpoch: 2, Partition: 2, TxnEpoch: 1, HasTxnEpoch: true})
	if tx, _ := n.c.Describe("tx"); tx.Pending != nil {
		t.Fatalf("pending markers after the completion: %+v", tx.Pending)
	}
}

// A coordinator that loads a record with pending markers (its
// predecessor answered the add and stopped) sends them, and the next
// transaction goes on; its end's markers come after them.
func TestPendingMarkersResentAfterFailover(t *testing.T) {
	ml := &markerLog{}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, ml, clk)
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml)
	must(t, "next transaction's add", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	n.stop()

	ml2 := &markerLog{failing: errors.New("leader slow")}
	n = newNode(t, dir, ml2, clk)
	tx := n.waitState("tx", Ongoing)
	if tx.Pending == nil {
		t.Fatalf("loaded without its pending markers: %+v", tx)
	}
	must(t, "an add of the next transaction while they are resent", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}))
	_, _, code := n.c.EndTxnV2(ctx, "tx", pid, epoch, true)
	must(t, "commit the next transaction", code)
	ml2.fail(nil)
	n.waitState("tx", CompleteCommit)
	// The loaded record carried partition 0 (the first transaction's)
	// for the next one, which the coordinator before could have let its
	// leader add without a write: its end marks it too.
	wantMarkers(t, markersOf(ml2),
		server.TxnMarker{ProducerEpoch: 1, Partition: 0, Commit: true, TxnEpoch: 0, HasTxnEpoch: true},
		server.TxnMarker{ProducerEpoch: 2, Partition: 0, Commit: true, TxnEpoch: 1, HasTxnEpoch: true},
		server.TxnMarker{ProducerEpoch: 2, Partition: 1, Commit: true, TxnEpoch: 1, HasTxnEpoch: true},
		server.TxnMarker{ProducerEpoch: 2, Partition: 2, Commit: true, TxnEpoch: 1, HasTxnEpoch: true})
	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	if tx := n.waitState("tx", CompleteCommit); tx.Pending != nil {
		t.Fatalf("reloaded with pending markers: %+v", tx.Pending)
	}
}

// The record holding the next transaction and the pending markers fails:
// the add is refused (retriable) though memory holds the next
// transaction (as an early write's, writeEarly); the markers complete the
// previous one, the retried add writes the state again before it is
// answered, and a restart reads the next transaction with its partition.
func TestAheadRecordFailing(t *testing.T) {
	ml := &markerLog{}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, ml, clk)
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml)
	g := gateReplication(n.c)
	g.loseRecords(true)
	if code := n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code == 0 {
		t.Fatal("the add was answered though its record failed")
	}
	g.loseRecords(false)
	ml.fail(nil)
	harness.WaitFor(t, "the previous markers written", 5*time.Second, func() bool { return len(markersOf(ml)) == 1 })
	appends := n.c.stateAppends.Load()
	must(t, "the add again", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	if n.c.stateAppends.Load() == appends {
		t.Fatal("the retried add was answered without a record holding its partition")
	}
	wantMarkers(t, markersOf(ml), server.TxnMarker{ProducerEpoch: 1, Partition: 0, Commit: true, TxnEpoch: 0, HasTxnEpoch: true})
	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	if tx := n.waitState("tx", Ongoing); !tx.Has(TopicPartition{"orders", 1}) || tx.ProducerEpoch != epoch {
		t.Fatalf("reloaded: %+v", tx)
	}
}

// Leaders' adds of the next transaction arriving together do not wait
// for each other's record to be decided: the second is decided on the
// first's state in memory and its record queued (sharing the next append
// with any others queued meanwhile).
func TestLeaderAddsAheadDoNotWaitForEachOther(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml)
	g := gateReplication(n.c)
	release := g.HoldAcks()
	appends := n.c.stateAppends.Load()
	answers := make(chan int16, 2)
	go func() { answers <- n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "the first add's record appended", 5*time.Second, func() bool { return n.c.stateAppends.Load() > appends })
	go func() { answers <- n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}}) }()
	harness.WaitFor(t, "the second add's record queued", 5*time.Second, func() bool {
		e, _ := n.c.lookup("tx", false)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.earlyWrites == 2
	})
	if _, ok := answered(answers, 20*time.Millisecond); ok {
		t.Fatal("an add was answered before its record was acknowledged")
	}
	release()
	for range 2 {
		must(t, "add", <-answers)
	}
	if d := n.c.stateAppends.Load() - appends; d > 2 {
		t.Fatalf("%d appends for two adds", d)
	}
	if tx, _ := n.c.Describe("tx"); len(tx.Partitions) != 2 || tx.Pending == nil {
		t.Fatalf("after both adds: %+v", tx)
	}
}

// The next transaction times out, or a new producer instance fences it,
// while the previous markers are pending: its abort's markers go out
// only after them.
func TestNextTransactionAbortedWhileMarkersPending(t *testing.T) {
	for _, how := range []string{"timeout", "fence"} {
		t.Run(how, func(t *testing.T) {
			ml := &markerLog{}
			clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
			n := newNode(t, t.TempDir(), ml, clk)
			ctx := context.Background()
			pid, epoch := beginV2(t, n, ml)
			must(t, "next transaction's add", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
			switch how {
			case "timeout":
				clk.advance(2 * time.Minute)
				n.c.AbortTimedOut()
			case "fence":
				_, _, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
				if code != kerr.ConcurrentTransactions.Code {
					t.Fatalf("fencing init: %v", kerr.ErrorForCode(code))
				}
			}
			tx, _ := n.c.Describe("tx")
			if tx.State != PrepareAbort || tx.Pending == nil {
				t.Fatalf("after the %s: %+v", how, tx)
			}
			awaitOnlyPendingTried(t, ml, 0)
			ml.fail(nil)
			n.waitState("tx", CompleteAbort)
			wantMarkers(t, markersOf(ml),
				server.TxnMarker{ProducerEpoch: 1, Partition: 0, Commit: true, TxnEpoch: 0, HasTxnEpoch: true},
				server.TxnMarker{ProducerEpoch: 2, Partition: 1}) // the coordinator's own abort: as Kafka's
		})
	}
}

// The markers are written while the ahead record is in flight: the state
// landing after drops them (nothing left to send).
func TestAheadRecordLandingAfterTheMarkers(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml)
	g := gateReplication(n.c)
	release := g.HoldAcks()
	answer := make(chan int16, 1)
	go func() { answer <- n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}) }()
	harness.WaitFor(t, "the ahead record is written", 5*time.Second, func() bool {
		e, _ := n.c.lookup("tx", false)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.earlyWrites > 0
	})
	ml.fail(nil)
	harness.WaitFor(t, "the markers are written", 5*time.Second, func() bool { return len(markersOf(ml)) == 1 })
	release()
	must(t, "add", <-answer)
	harness.WaitFor(t, "the pending markers dropped", 5*time.Second, func() bool {
		tx, _ := n.c.Describe("tx")
		return tx.State == Ongoing && tx.Pending == nil
	})
}

// Between ferry brokers the markers' data epoch travels in a tagged field
// of WriteTxnMarkers v1; a marker without one carries no tag.
func TestMarkersRequestCarriesTheTxnEpoch(t *testing.T) {
	req := MarkersRequest([]server.TxnMarker{
		{ProducerID: 7, ProducerEpoch: 2, Commit: true, Topic: "orders", Partition: 0, TxnEpoch: 1, HasTxnEpoch: true},
		{ProducerID: 7, ProducerEpoch: 2, Commit: true, Topic: "orders", Partition: 1, TxnEpoch: 1, HasTxnEpoch: true},
		{ProducerID: 8, ProducerEpoch: 0, Topic: "orders", Partition: 2},
	})
	req.Version = 1
	var back = kmsg.NewPtrWriteTxnMarkersRequest()
	back.Version = 1
	if err := back.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if len(back.Markers) != 2 {
		t.Fatalf("%d marker entries, want 2", len(back.Markers))
	}
	for i, want := range []struct {
		epoch int16
		has   bool
	}{{1, true}, {0, false}} {
		var got int16
		has := false
		back.Markers[i].UnknownTags.Each(func(tag uint32, v []byte) {
			if tag == server.TxnEpochTag {
				got, has = server.DecodeTxnEpochTag(v)
			}
		})
		if has != want.has || got != want.epoch {
			t.Errorf("entry %d: epoch %d (%v), want %d (%v)", i, got, has, want.epoch, want.has)
		}
	}
}

// A transaction.version 2 producer's partition leaders ask for the
// next transaction's adds at once, right after its commit. An add
// decided on the committing state while another leader's add moved the
// transaction on, ahead of the markers, is decided again on the new
// state: answering it CONCURRENT_TRANSACTIONS made the producer back off
// 200 ms or more (BenchmarkTxnTimeline's transactions of 1,000 records,
// over three partitions, took 44 ms instead of 4 in one run of five).
func TestConcurrentLeaderAddsAfterACommitAreAllTaken(t *testing.T) {
	// What is tested is that an add is decided again on the state another
	// add moved on, not how long it may wait: on a loaded machine a state
	// write (fsynced on a single node) took over the 200 ms an add waits
	// for it (one CI run: an add answered CONCURRENT_TRANSACTIONS, and
	// the commit after it INVALID_TXN_STATE).
	n, pid, epoch := patientProducer(t)
	ctx := context.Background()
	for i := range 300 {
		answers := make(chan int16, 3)
		for p := range int32(3) {
			go func() { answers <- n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", p}}) }()
		}
		for range 3 {
			must(t, fmt.Sprintf("transaction %d: a leader's add", i), <-answers)
		}
		_, next, code := n.c.EndTxnV2(ctx, "tx", pid, epoch, i%2 == 0)
		must(t, fmt.Sprintf("transaction %d: end", i), code)
		epoch = next
	}
}

// awaitOnlyPendingTried waits, while ml fails every marker, for the
// coordinator to try its markers twice more, then fails the test if any
// marker tried meanwhile is not for partition pending: the next
// transaction's markers must wait for the earlier ones.
func awaitOnlyPendingTried(t *testing.T, ml *markerLog, pending int32) {
	t.Helper()
	_, calls := ml.snapshot()
	harness.WaitFor(t, "the pending markers retried", 5*time.Second, func() bool {
		_, now := ml.snapshot()
		return now >= calls+2
	})
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if len(ml.written) != 0 {
		t.Fatalf("markers written while the first ones fail: %+v", ml.written)
	}
	for _, mk := range ml.tried {
		if mk.Partition != pending {
			t.Fatalf("marker for partition %d tried before the pending one (partition %d) was written: %+v", mk.Partition, pending, ml.tried)
		}
	}
}
