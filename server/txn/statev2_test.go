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

// reload is t as a coordinator elected after a failover has it: written
// to __transaction_state and read back.
func reload(tb testing.TB, t Txn) Txn {
	tb.Helper()
	loaded, err := decodeValue(t.ID, stateValue(&t))
	if err != nil {
		tb.Fatal(err)
	}
	return loaded.Loaded(t.UpdateMs + 1)
}

// An EndTxn v5 retried after the coordinator failed over (its answer
// lost with the old coordinator) is answered as the retry it is, from
// what the log holds, at every point of the end: while its markers are
// written, after they are, and across a rotation of the producer id. What
// is not a retry of a version-2 end stays fenced after the load: a
// version-1 end, the coordinator's own abort, the next transaction begun.
func TestTV2EndRetryAfterFailover(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
	})
	tx = run(t, reload(t, tx), []step{
		{name: "commit retried at the new coordinator while committing", do: endV2(7, 0, true)},
		{name: "abort retried is not the end decided", do: endV2(7, 0, false), code: codeTxnState},
		{name: "markers written", do: complete, write: true, state: CompleteCommit, epoch: 1},
	})
	tx = run(t, reload(t, tx), []step{
		{name: "commit retried after completion", do: endV2(7, 0, true)},
		{name: "an older epoch is fenced", do: endV2(7, -1, true), code: codeFenced},
		{name: "next transaction", do: add(7, 1, tpB), write: true, state: Ongoing, epoch: 1},
	})
	tx = run(t, reload(t, tx), []step{
		{name: "the old end's retry once the next began", do: endV2(7, 0, true), code: codeFenced},
		{name: "commit v4 of the next", do: end(7, 1, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
		{name: "markers", do: complete, write: true, state: CompleteCommit, epoch: 1},
	})
	run(t, reload(t, tx), []step{
		{name: "a version-1 end leaves no version-2 retry", do: endV2(7, 0, true), code: codeFenced},
	})
}

// The coordinator's abort of a timed-out version-2 transaction is not a
// client's end: after a failover the fenced producer is still fenced.
func TestTV2TimeoutAbortNotARetryAfterFailover(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 100, 1000), []step{
		{name: "init", do: initPID(100), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: endV2(7, 0, true), write: true, state: PrepareCommit, epoch: 1, marker: true},
		{name: "markers", do: complete, write: true, state: CompleteCommit, epoch: 1},
		{name: "next", do: add(7, 1, tpA), write: true, state: Ongoing, epoch: 1},
		{name: "timed out", do: func(t Txn, now int64) Outcome { return t.AbortTimedOut(now) }, write: true, state: PrepareAbort, epoch: 2, marker: true},
	})
	run(t, reload(t, tx), []step{
		{name: "the fenced producer's abort", do: endV2(7, 1, false), code: codeFenced},
	})
}

// Across a rotation of the producer id: the retry under the old id at
// its last epoch is answered, during the markers and after.
func TestTV2RotationRetryAfterFailover(t *testing.T) {
	tx := NewTxn("tx", 7, 60000, 1000)
	tx.ProducerEpoch = math.MaxInt16 - 1
	tx = run(t, tx, []step{{name: "add", do: add(7, math.MaxInt16-1, tpA), write: true, state: Ongoing, epoch: math.MaxInt16 - 1}})
	out := tx.EndTxnV2(7, math.MaxInt16-1, false, 2000, func() (int64, error) { return 9, nil })
	if !out.Write {
		t.Fatalf("the prepare: %+v", out)
	}
	tx = run(t, reload(t, out.Next), []step{
		{name: "retry during the markers", do: endV2(7, math.MaxInt16-1, false)},
		{name: "markers written", do: complete, write: true, state: CompleteAbort, epoch: 0},
	})
	tx = reload(t, tx)
	if tx.ProducerID != 9 || tx.PrevProducerID != 7 {
		t.Fatalf("loaded after the rotation: %+v", tx)
	}
	run(t, tx, []step{
		{name: "retry after the rotation", do: endV2(7, math.MaxInt16-1, false)},
		{name: "the new id's transaction", do: add(9, 0, tpA), write: true, state: Ongoing, epoch: 0},
	})
}
