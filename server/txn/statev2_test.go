package txn

import (
	"errors"
	"math"
	"testing"
)

func endV2(pid int64, epoch int16, commit bool) func(Txn, int64) Outcome {
	return func(t Txn, now int64) Outcome { return t.EndTxnV2(pid, epoch, commit, now, noIDs) }
}

// transaction.version 2: every end bumps the epoch, the next transaction
// runs under it, and an end asked again at the epoch before is answered
// as done.
func TestTV2EndBumpsEpochEachTransaction(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "produce adds", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
		{name: "next transaction before the markers", do: add(7, 1, tpA), code: codeConcurrent},
		{name: "commit retried while committing", do: endV2(7, 0, true)},
		{name: "abort retried while committing", do: endV2(7, 0, false), code: codeTxnState},
		{name: "markers written", do: complete, write: true, state: CompleteCommit, epoch: 1},
		{name: "commit retried after", do: endV2(7, 0, true)},
		{name: "the old epoch adds nothing", do: add(7, 0, tpB), code: codeFenced},
		{name: "next transaction", do: add(7, 1, tpB), write: true, state: Ongoing, epoch: 1},
		{name: "old epoch's retry once the next began", do: endV2(7, 0, true), code: codeTxnState},
		{name: "abort", do: endV2(7, 1, false), write: true, state: PrepareAbort, epoch: 2, marker: true},
		{name: "aborted", do: complete, write: true, state: CompleteAbort, epoch: 2},
		{name: "abort retried", do: endV2(7, 1, false)},
		{name: "commit at the new epoch with nothing added", do: endV2(7, 2, true), code: codeTxnState},
		{name: "empty abort bumps", do: endV2(7, 2, false), write: true, state: PrepareAbort, epoch: 3, marker: true},
		{name: "empty abort completes", do: complete, write: true, state: CompleteAbort, epoch: 3},
		{name: "a fenced epoch", do: endV2(7, 1, false), code: codeFenced},
	})
	if len(tx.Partitions) != 0 || tx.ProducerEpoch != 3 {
		t.Fatalf("after the scenario: %+v", tx)
	}
}

// A transaction.version 1 end next to version 2's: no bump, the answer
// and the state as before.
func TestTV1EndKeepsEpoch(t *testing.T) {
	run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit v4", do: end(7, 0, true), write: true, state: PrepareCommit, epoch: 0, marker: true},
		{name: "markers", do: complete, write: true, state: CompleteCommit, epoch: 0},
		{name: "empty abort v4 is refused", do: end(7, 0, false), code: codeTxnState},
	})
}

// When the bump would run the epoch out, the producer is answered a new
// producer id at epoch 0; the markers go out under the old id at
// MaxInt16, and the new id is current once they are written.
func TestTV2EpochExhaustionRotates(t *testing.T) {
	tx := NewTxn("tx", 7, 60000, 1000)
	tx.ProducerEpoch = math.MaxInt16 - 1
	tx = run(t, tx, []step{{name: "add", do: add(7, math.MaxInt16-1, tpA), write: true, state: Ongoing, epoch: math.MaxInt16 - 1}})
	out := tx.EndTxnV2(7, math.MaxInt16-1, true, 2000, func() (int64, error) { return 0, errors.New("down") })
	if out.Code != errCoordinatorUnavailable || out.Write {
		t.Fatalf("a failed allocation: %+v", out)
	}
	out = tx.EndTxnV2(7, math.MaxInt16-1, true, 2000, func() (int64, error) { return 9, nil })
	if !out.Write || out.Next.ProducerID != 7 || out.Next.ProducerEpoch != math.MaxInt16 || !out.Markers {
		t.Fatalf("the prepare: %+v", out)
	}
	if pid, e := out.Next.ProducerAfterEnd(); pid != 9 || e != 0 {
		t.Fatalf("answered %d/%d, want 9/0", pid, e)
	}
	tx = run(t, out.Next, []step{
		{name: "the new id waits for the markers", do: add(9, 0, tpA), code: codeConcurrent},
		{name: "retry during the markers", do: endV2(7, math.MaxInt16-1, true)},
		{name: "markers written", do: complete, write: true, state: CompleteCommit, epoch: 0},
		{name: "retry after the rotation", do: endV2(7, math.MaxInt16-1, true)},
		{name: "the new id's transaction", do: add(9, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "the old id is gone", do: add(7, math.MaxInt16, tpA), code: codeMapping},
	})
	if tx.ProducerID != 9 || tx.PrevProducerID != 7 {
		t.Fatalf("after the rotation: %+v", tx)
	}
}
