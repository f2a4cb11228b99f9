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
	"github.com/ferry-mq/ferry/server/records"
)

// transaction.version 2, carried partitions: an EndTxn v5 records the
// ended transaction's partitions for the producer's next one, whose
// leaders' adds of them are then answered with nothing written.

func TestCarriedPartitionsAddedQuietly(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA, tpB), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	if !slices.Equal(prepared.Carried, []TopicPartition{tpA, tpB}) {
		t.Fatalf("carried %v, want the ended transaction's partitions", prepared.Carried)
	}

	// Ahead of the markers: the next transaction begins in memory only.
	out, ok := prepared.AheadOfMarkers(2000, 5, func(tx *Txn) Outcome { return tx.AddPartitions(7, 1, []TopicPartition{tpA}, 2000) })
	if !ok || !out.Quiet || out.Write || out.Next.State != Ongoing || out.Next.Pending == nil ||
		!slices.Equal(out.Next.Partitions, []TopicPartition{tpA}) {
		t.Fatalf("ahead of the markers: %v %+v", ok, out)
	}

	// After the markers, within the transaction and beyond the carried set.
	next := run(t, out.Next, []step{
		{name: "the other carried partition", do: add(7, 1, tpB), quiet: true, state: Ongoing, epoch: 1},
		{name: "the same again", do: add(7, 1, tpA, tpB)},
		{name: "a partition not carried", do: add(7, 1, tpC), write: true, state: Ongoing, epoch: 1},
		{name: "an old epoch", do: add(7, 0, tpA), code: codeFenced},
		{name: "its commit", do: endV2(7, 1, true), write: true, state: PrepareCommit, epoch: 2, marker: true},
	})
	if !slices.Equal(next.Partitions, []TopicPartition{tpC, tpA, tpB}) || !slices.Equal(next.Carried, next.Partitions) {
		t.Fatalf("prepared %v carrying %v, want audit-3, orders-0, orders-1 both", next.Partitions, next.Carried)
	}

	// Parked for the completion: one record, the add carried anyway.
	done, answers := prepared.CompleteThen(2000, []Decision{decision(add(7, 1, tpB), 2000)})
	if answers[0].Code != 0 || done.Next.State != Ongoing || !slices.Equal(done.Next.Partitions, []TopicPartition{tpB}) {
		t.Fatalf("completed with the add: %+v %+v", done.Next, answers)
	}

	// Completed alone: nothing carried, the next add is written.
	idle := run(t, prepared, []step{
		{name: "completed alone", do: complete, write: true, state: CompleteCommit, epoch: 1},
		{name: "the next add, later", do: add(7, 1, tpA), write: true, state: Ongoing, epoch: 1},
	})
	if idle.Carried != nil {
		t.Fatalf("carried %v after an idle completion", idle.Carried)
	}
	if again, _ := prepared.CompleteThen(2000, nil); again.Next.Carried != nil {
		t.Fatalf("carried %v after a completion with no request", again.Next.Carried)
	}
}

// A producer whose partitioner moves over a topic's partitions finds the
// ones it comes back to carried: an end carries its own partitions and
// those it could have added quietly, up to maxCarried; past that, its
// own only.
func TestCarriedPartitionsAccumulateUpToTheirBound(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA, tpB), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	begun, answers := prepared.CompleteThen(2000, []Decision{decision(add(7, 1, tpC), 2000)})
	if answers[0].Code != 0 || begun.Next.State != Ongoing {
		t.Fatalf("the next transaction's first add: %+v %+v", begun.Next, answers)
	}
	moved := run(t, begun.Next, []step{
		{name: "one of the carried too", do: add(7, 1, tpB), quiet: true, state: Ongoing, epoch: 1},
		{name: "commit", do: endV2(7, 1, true), write: true, state: PrepareCommit, epoch: 2, marker: true},
	})
	if want := []TopicPartition{tpC, tpA, tpB}; !slices.Equal(moved.Carried, want) {
		t.Fatalf("carried %v after writing to %v, having carried %v; want %v", moved.Carried, moved.Partitions, begun.Next.Carried, want)
	}
	if want := []TopicPartition{tpC, tpB}; !slices.Equal(moved.Partitions, want) {
		t.Fatalf("the markers go to %v, want only the partitions written to, %v", moved.Partitions, want)
	}
	back, answers := moved.CompleteThen(3000, []Decision{decision(add(7, 2, tpA), 3000)})
	if answers[0].Code != 0 || !slices.Equal(back.Next.Partitions, []TopicPartition{tpA}) || !slices.Equal(back.Next.Carried, moved.Carried) {
		t.Fatalf("back to a partition two transactions later: %+v %+v", back.Next, answers)
	}

	many := func(from, n int32) []TopicPartition {
		var tps []TopicPartition
		for i := range n {
			tps = append(tps, TopicPartition{"wide", from + i})
		}
		return tps
	}
	first := many(0, maxCarried/2+1)
	wide := run(t, NewTxn("wide", 8, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(8, 0, first...), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(8, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	second := many(maxCarried/2+1, maxCarried/2+1)
	next, _ := wide.CompleteThen(2000, []Decision{decision(add(8, 1, second...), 2000)})
	over := run(t, next.Next, []step{
		{name: "commit", do: endV2(8, 1, true), write: true, state: PrepareCommit, epoch: 2, marker: true},
	})
	if !slices.Equal(over.Carried, second) {
		t.Fatalf("carried %d partitions past the bound of %d, want the end's own %d", len(over.Carried), maxCarried, len(second))
	}
}

// Nothing is carried past a fencing, a timeout abort, a version 1 end,
// an empty abort or a rotation of the producer id.
func TestCarriedPartitionsDroppedWhereTheEpochMovesOtherwise(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 100, 1000), []step{
		{name: "init", do: initPID(100), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	begun, _ := prepared.CompleteThen(2000, []Decision{decision(add(7, 1, tpA), 2000)})
	for _, c := range []struct {
		name string
		out  Outcome
	}{
		{"a new producer instance", begun.Next.InitProducerID(100, ProducerIDAndEpoch{ID: -1}, 3000, noIDs)},
		{"a timeout abort", begun.Next.AbortTimedOut(3000)},
		{"a version 1 end", begun.Next.EndTxn(7, 1, true, 3000)},
		{"an empty abort", prepared.CompleteIdle(2000).Next.EndTxnV2(7, 1, false, 3000, noIDs)},
	} {
		if !c.out.Write || c.out.Next.Carried != nil {
			t.Errorf("%s: write %v, carried %v", c.name, c.out.Write, c.out.Next.Carried)
		}
	}
	exhausted := begun.Next
	exhausted.ProducerEpoch = 32766
	rotated := exhausted.EndTxnV2(7, 32766, true, 3000, func() (int64, error) { return 8, nil })
	if rotated.Code != 0 || rotated.Next.NextProducerID != 8 || rotated.Next.Carried != nil {
		t.Fatalf("rotation: %+v", rotated.Next)
	}
}

// A coordinator loading a record that carries partitions cannot know
// whether the coordinator before let the next transaction add them: it
// treats them as added for that transaction's end, fencing and timeout,
// and still answers the end's retry as done.
func TestCarriedPartitionsAfterFailover(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 100, 1000), []step{
		{name: "init", do: initPID(100), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	loaded := reload(t, prepared)
	if !loaded.CarriedUnknown() || !slices.Equal(loaded.Carried, []TopicPartition{tpA}) {
		t.Fatalf("loaded %+v", loaded)
	}
	completed := run(t, loaded, []step{
		{name: "the end retried", do: endV2(7, 0, true)},
		{name: "markers written", do: complete, write: true, state: CompleteCommit, epoch: 1},
	})
	if !completed.CarriedUnknown() || completed.Carried == nil {
		t.Fatalf("the completion dropped the carried partitions: %+v", completed)
	}
	for name, tx := range map[string]Txn{"in memory": completed, "loaded again": reload(t, completed)} {
		run(t, tx, []step{
			{name: name + ": the end retried after the completion", do: endV2(7, 0, true)},
			{name: name + ": the abort retried is not the end decided", do: endV2(7, 0, false), code: codeTxnState},
		})
		commit := tx.EndTxnV2(7, 1, true, 5000, noIDs)
		if commit.Code != 0 || commit.Next.State != PrepareCommit || !slices.Equal(commit.Next.Partitions, []TopicPartition{tpA}) {
			t.Fatalf("%s: the next transaction's commit with no add at this coordinator: %+v", name, commit)
		}
		if v1 := tx.EndTxn(7, 1, false, 5000); v1.Code != 0 || v1.Next.State != PrepareAbort ||
			!slices.Equal(v1.Next.Partitions, []TopicPartition{tpA}) {
			t.Fatalf("%s: a version 1 abort of the next transaction: %+v", name, v1)
		}
		if v1 := tx.EndTxn(7, 1, true, 5000); v1.Code != 0 || v1.Write {
			t.Fatalf("%s: a version 1 commit is the completed end answered again: %+v", name, v1)
		}
		fence := tx.InitProducerID(100, ProducerIDAndEpoch{ID: -1}, 5000, noIDs)
		if fence.Code != codeConcurrent || fence.Next.State != PrepareAbort || !slices.Equal(fence.Next.Partitions, []TopicPartition{tpA}) {
			t.Fatalf("%s: a new instance: %+v", name, fence)
		}
		if tx.Expired(1<<40, 1) {
			t.Fatalf("%s: expired while its transaction may be open", name)
		}
		if !tx.TimedOut(tx.StartMs + 101) {
			t.Fatalf("%s: never times out", name)
		}
		if abort := tx.AbortTimedOut(9000); abort.Next.State != PrepareAbort || !slices.Equal(abort.Next.Partitions, []TopicPartition{tpA}) {
			t.Fatalf("%s: timeout abort: %+v", name, abort.Next)
		}
		more := tx.AddPartitions(7, 1, []TopicPartition{tpB}, 5000)
		if !more.Write || !slices.Equal(more.Next.Partitions, []TopicPartition{tpA, tpB}) {
			t.Fatalf("%s: an add beyond the carried set: %+v", name, more)
		}
	}

	// An ongoing transaction's record: its carried partitions count as added.
	ongoing, _ := prepared.CompleteThen(2000, []Decision{decision(add(7, 1, tpB), 2000)})
	if back := reload(t, ongoing.Next); !slices.Equal(back.Partitions, []TopicPartition{tpA, tpB}) || back.CarriedUnknown() {
		t.Fatalf("ongoing reloaded: %+v", back)
	}
}

func TestCarriedPartitionsDecoderRefusesBadBytes(t *testing.T) {
	good := appendPartitions(nil, []TopicPartition{tpA, tpC})
	if got, err := readAllPartitions(good); err != nil || len(got) != 2 {
		t.Fatal(got, err)
	}
	for name, b := range map[string][]byte{
		"empty":      nil,
		"truncated":  good[:len(good)-1],
		"trailing":   append(slices.Clone(good), 0),
		"huge count": append([]byte{0xff, 0xff, 0xff, 0xff}, good[4:]...),
		"no topic":   appendPartitions(nil, []TopicPartition{{"", 1}}),
		"negative":   appendPartitions(nil, []TopicPartition{{"t", -1}}),
	} {
		if _, err := readAllPartitions(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.TimeoutMillis = 1, 7, 100
	v.UnknownTags.Set(carriedTag, []byte{0, 0})
	if _, err := decodeValue("tx", v.AppendTo(nil)); err == nil {
		t.Fatal("a record with unreadable carried partitions was read")
	}
}

// On a coordinator: the next transaction's add of a carried partition
// writes nothing, and a coordinator loading the log after it marks that
// partition when the transaction ends.
func TestCarriedAddWritesNothingAndSurvivesFailover(t *testing.T) {
	ml := &markerLog{}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, ml, clk)
	ctx := context.Background()
	pid, epoch := beginV2(t, n, ml) // orders-0 committed, its markers failing
	records := stateRecords(t, n)
	if records == 0 {
		t.Fatal("no state records after a committed transaction")
	}
	must(t, "the next transaction's add of orders-0", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	if got := stateRecords(t, n); got != records {
		t.Fatalf("%d state records after a carried add, want %d", got, records)
	}
	if tx, _ := n.c.Describe("tx"); tx.State != Ongoing || tx.ProducerEpoch != epoch {
		t.Fatalf("after the add: %+v", tx)
	}
	n.stop()

	ml2 := &markerLog{}
	n = newNode(t, dir, ml2, clk)
	// The loaded commit carries orders-0, so the next transaction may
	// have begun there: described and listed as the coordinator acts on
	// it, ongoing with it since the load.
	tx := n.waitState("tx", Ongoing)
	if !slices.Equal(tx.Partitions, []TopicPartition{{"orders", 0}}) || tx.StartMs != clk.Now().UnixMilli() {
		t.Fatalf("loaded: described as %+v, want ongoing on orders-0 since the load", tx)
	}
	if listed := n.c.List(ListFilter{States: []State{Ongoing}}); len(listed) != 1 || listed[0].ID != "tx" {
		t.Fatalf("ongoing transactions listed after the load: %+v", listed)
	}
	_, _, code := n.c.EndTxnV2(ctx, "tx", pid, epoch, true)
	must(t, "commit the next transaction at the new coordinator", code)
	n.waitState("tx", CompleteCommit)
	got := markersOf(ml2)
	if !slices.ContainsFunc(got, func(m server.TxnMarker) bool {
		return m.ProducerEpoch == epoch+1 && m.Partition == 0 && m.Commit && m.TxnEpoch == epoch
	}) {
		t.Fatalf("no commit marker of the next transaction on orders-0: %+v", got)
	}
}

// stateRecords counts the records of __transaction_state's partitions.
func stateRecords(t *testing.T, n *node) int {
	t.Helper()
	count := 0
	for p := range int32(4) {
		if err := n.c.state.ReadRecords(p, func(records.Record) { count++ }); err != nil && !errors.Is(err, server.ErrUnknownTopic) {
			t.Fatal(err)
		}
	}
	return count
}

// A coordinator loading a record that carries partitions probes their
// leaders when the transaction it took as begun on them times out
// without a request from its producer: nothing open there, the producer
// never began it, and it goes on at its epoch instead of being fenced;
// open somewhere, the transaction is aborted as any timed out; a leader
// not answering is asked again at the next check.
func TestLoadedCarriedStateOfAnIdleProducerIsProbed(t *testing.T) {
	for _, c := range []struct {
		name    string
		answer  error // the probe's, on orders-0
		open    bool
		failing bool
	}{
		{name: "nothing open"},
		{name: "open on the carried partition", answer: server.ErrTxnOpen, open: true},
		{name: "open on a remote leader", answer: fmt.Errorf("broker 2, orders-0: %w", kerr.ConcurrentTransactions), open: true},
		{name: "the partition deleted", answer: ErrPartitionGone},
		{name: "leader away, then nothing open", failing: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ml := &markerLog{}
			clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
			dir := t.TempDir()
			n := newNode(t, dir, ml, clk)
			ctx := context.Background()
			pid, epoch := beginV2(t, n, ml) // orders-0 committed and carried, its markers failing
			n.stop()

			ml2 := &markerLog{probeAnswers: map[TopicPartition]error{{"orders", 0}: c.answer}}
			n = newNode(t, dir, ml2, clk)
			n.waitState("tx", Ongoing) // loaded, its markers written, taken as begun on orders-0
			if c.failing {
				ml2.fail(errors.New("leader away"))
			}
			clk.advance(61 * time.Second) // past the producer's 60 s timeout
			n.c.Tick()
			ml2.mu.Lock()
			probes := slices.Clone(ml2.probes)
			ml2.mu.Unlock()
			if c.failing {
				if tx, _ := n.c.Describe("tx"); tx.State != Ongoing || tx.ProducerEpoch != epoch {
					t.Fatalf("decided with the leader away: %+v", tx)
				}
				ml2.fail(nil)
				n.c.Tick()
				ml2.mu.Lock()
				probes = slices.Clone(ml2.probes)
				ml2.mu.Unlock()
			}
			if len(probes) != 1 || probes[0].Topic != "orders" || probes[0].Partition != 0 || probes[0].ProducerID != pid {
				t.Fatalf("probes %+v, want one of orders-0 for producer %d", probes, pid)
			}
			if c.open {
				tx := n.waitState("tx", CompleteAbort)
				if tx.ProducerEpoch != epoch+1 {
					t.Fatalf("aborted at epoch %d, want %d (fenced)", tx.ProducerEpoch, epoch+1)
				}
				if !slices.ContainsFunc(markersOf(ml2), func(m server.TxnMarker) bool {
					return !m.Commit && m.Partition == 0 && m.ProducerEpoch == epoch+1
				}) {
					t.Fatalf("no abort marker on orders-0: %+v", markersOf(ml2))
				}
				return
			}
			tx, _ := n.c.Describe("tx")
			if tx.State != CompleteCommit || tx.ProducerEpoch != epoch || tx.Carried != nil {
				t.Fatalf("after the probe: %+v, want CompleteCommit at epoch %d carrying nothing", tx, epoch)
			}
			for _, m := range markersOf(ml2) {
				if !m.Commit {
					t.Fatalf("an abort marker for a transaction never begun: %+v", m)
				}
			}
			// The producer comes back at its epoch; its next add is written.
			records := stateRecords(t, n)
			must(t, "the producer's next add", n.c.AddLeaderPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
			if stateRecords(t, n) == records {
				t.Fatal("an add after the settling wrote nothing: the carried set is still trusted")
			}
			_, _, code := n.c.EndTxnV2(ctx, "tx", pid, epoch, true)
			must(t, "its commit", code)
			n.waitState("tx", CompleteCommit)
			n.stop()

			// The settling is in the log: loaded again, nothing is taken as begun.
			n = newNode(t, dir, &markerLog{}, clk)
			if tx := n.waitState("tx", CompleteCommit); tx.ProducerEpoch != epoch+1 {
				t.Fatalf("loaded again: %+v", tx)
			}
		})
	}
}
