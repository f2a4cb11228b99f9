package txn

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// step is one event fed to a transactional id's metadata, and what must
// come of it: the answer, and (when written) the state and epoch.
type step struct {
	name   string
	do     func(t Txn, now int64) Outcome
	code   int16
	write  bool
	state  State
	epoch  int16
	marker bool
	// quiet: answered at once and applied in memory, nothing written
	// (Outcome.Quiet); state is checked as for a write.
	quiet bool
}

// run feeds steps in order to t, applying each written outcome as the
// coordinator does once it is durable, and returns the last metadata.
func run(tb testing.TB, t Txn, steps []step) Txn {
	tb.Helper()
	now := int64(1000)
	for _, s := range steps {
		now += 10
		out := s.do(t, now)
		if out.Code != s.code {
			tb.Fatalf("%s: code %v, want %v", s.name, kerr.ErrorForCode(out.Code), kerr.ErrorForCode(s.code))
		}
		if out.Write != s.write || out.Quiet != s.quiet {
			tb.Fatalf("%s: write %v quiet %v, want %v %v", s.name, out.Write, out.Quiet, s.write, s.quiet)
		}
		if !out.Write && !out.Quiet {
			continue
		}
		if !ValidTransition(t.State, out.Next.State) {
			tb.Fatalf("%s: %v → %v is not one of Kafka's transitions", s.name, t.State, out.Next.State)
		}
		if out.Next.State != s.state || out.Next.ProducerEpoch != s.epoch || out.Markers != s.marker {
			tb.Fatalf("%s: state %v epoch %d markers %v, want %v %d %v", s.name, out.Next.State, out.Next.ProducerEpoch,
				out.Markers, s.state, s.epoch, s.marker)
		}
		t = out.Next
	}
	return t
}

var noIDs = func() (int64, error) { return 0, errors.New("no new id expected") }

func initPID(timeout int32) func(Txn, int64) Outcome {
	return func(t Txn, now int64) Outcome {
		return t.InitProducerID(timeout, ProducerIDAndEpoch{ID: -1, Epoch: -1}, now, noIDs)
	}
}

func initWith(id int64, epoch int16) func(Txn, int64) Outcome {
	return func(t Txn, now int64) Outcome {
		return t.InitProducerID(60000, ProducerIDAndEpoch{ID: id, Epoch: epoch}, now, noIDs)
	}
}

func add(pid int64, epoch int16, tps ...TopicPartition) func(Txn, int64) Outcome {
	return func(t Txn, now int64) Outcome { return t.AddPartitions(pid, epoch, tps, now) }
}

func end(pid int64, epoch int16, commit bool) func(Txn, int64) Outcome {
	return func(t Txn, now int64) Outcome { return t.EndTxn(pid, epoch, commit, now) }
}

// complete is the completion the coordinator writes when no request of
// the next transaction came meanwhile (recordCompletion).
func complete(t Txn, now int64) Outcome { return t.CompleteIdle(now) }

var (
	tpA = TopicPartition{"orders", 0}
	tpB = TopicPartition{"orders", 1}
	tpC = TopicPartition{"audit", 3}
)

const (
	codeConcurrent = 51 // CONCURRENT_TRANSACTIONS
	codeFenced     = 90 // PRODUCER_FENCED
	codeMapping    = 49 // INVALID_PRODUCER_ID_MAPPING
	codeTxnState   = 48 // INVALID_TXN_STATE
)

func TestErrorCodesAreKafkas(t *testing.T) {
	for code, want := range map[int16]*kerr.Error{codeConcurrent: kerr.ConcurrentTransactions, codeFenced: kerr.ProducerFenced,
		codeMapping: kerr.InvalidProducerIDMapping, codeTxnState: kerr.InvalidTxnState} {
		if want.Code != code {
			t.Errorf("%s is %d, the test says %d", want.Message, want.Code, code)
		}
	}
}

func TestCommitAndAbortCycle(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "first init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add two", do: add(7, 0, tpB, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "add again is free", do: add(7, 0, tpA)},
		{name: "add a third", do: add(7, 0, tpC), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: end(7, 0, true), write: true, state: PrepareCommit, epoch: 0, marker: true},
		{name: "add while committing", do: add(7, 0, tpA), code: codeConcurrent},
		{name: "commit again while committing", do: end(7, 0, true), code: codeConcurrent},
		{name: "abort while committing", do: end(7, 0, false), code: codeTxnState},
		{name: "init while committing", do: initPID(60000), code: codeConcurrent},
		{name: "markers written", do: complete, write: true, state: CompleteCommit, epoch: 0},
		{name: "commit answered again (Flink resume)", do: end(7, 0, true)},
		{name: "abort after commit", do: end(7, 0, false), code: codeTxnState},
		{name: "next transaction", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "abort", do: end(7, 0, false), write: true, state: PrepareAbort, epoch: 0, marker: true},
		{name: "aborted", do: complete, write: true, state: CompleteAbort, epoch: 0},
		{name: "abort answered again", do: end(7, 0, false)},
		{name: "commit after abort", do: end(7, 0, true), code: codeTxnState},
	})
	if len(tx.Partitions) != 0 {
		t.Fatalf("a completed transaction keeps partitions %v", tx.Partitions)
	}
}

func TestPartitionsSortedAndVerified(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpB, tpA, tpC, tpA), write: true, state: Ongoing, epoch: 0},
	})
	want := []TopicPartition{tpC, tpA, tpB}
	if len(tx.Partitions) != 3 || tx.Partitions[0] != want[0] || tx.Partitions[1] != want[1] || tx.Partitions[2] != want[2] {
		t.Fatalf("partitions %v, want %v", tx.Partitions, want)
	}
	for _, c := range []struct {
		pid   int64
		epoch int16
		tp    TopicPartition
		code  int16
	}{
		{7, 0, tpA, 0},
		{7, 0, TopicPartition{"orders", 9}, codeTxnState}, // KIP-890: not in the transaction
		{7, 1, tpA, codeFenced},
		{8, 0, tpA, codeMapping},
	} {
		if got := tx.VerifyPartition(c.pid, c.epoch, c.tp); got != c.code {
			t.Errorf("verify %d/%d %v: %d, want %d", c.pid, c.epoch, c.tp, got, c.code)
		}
	}
	tx = run(t, tx, []step{{name: "commit", do: end(7, 0, true), write: true, state: PrepareCommit, epoch: 0, marker: true}})
	if got := tx.VerifyPartition(7, 0, tpA); got != codeConcurrent {
		t.Fatalf("verify while committing: %d", got)
	}
}

// A second producer with the same id fences the first: its ongoing
// transaction is aborted under a bumped epoch, and the old epoch is
// refused everywhere after.
func TestZombieFencing(t *testing.T) {
	run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "old producer init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "old producer adds", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "new producer init fences", do: initPID(60000), code: codeConcurrent, write: true, state: PrepareAbort, epoch: 1, marker: true},
		{name: "new producer retries while aborting", do: initPID(60000), code: codeConcurrent},
		{name: "abort markers written", do: complete, write: true, state: CompleteAbort, epoch: 1},
		{name: "zombie commits", do: end(7, 0, true), code: codeFenced},
		{name: "zombie adds", do: add(7, 0, tpB), code: codeFenced},
		{name: "new producer's retry", do: initPID(60000), write: true, state: Empty, epoch: 2},
		{name: "new producer adds", do: add(7, 2, tpB), write: true, state: Ongoing, epoch: 2},
		{name: "zombie still fenced", do: add(7, 1, tpB), code: codeFenced},
		{name: "other producer id", do: end(8, 2, true), code: codeMapping},
	})
}

// KIP-360: a producer that knows its id and epoch bumps its own epoch; a
// retry of that bump is answered again; an older epoch is fenced.
func TestKIP360EpochBump(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "bump from 0", do: initWith(7, 0), write: true, state: Empty, epoch: 1},
		{name: "retry of that bump", do: initWith(7, 0)},
		{name: "stale epoch", do: initWith(7, 5), code: codeFenced},
		{name: "other id", do: initWith(99, 1), code: codeFenced},
	})
	if tx.LastProducerEpoch != 0 || tx.ProducerEpoch != 1 {
		t.Fatalf("epoch %d, last %d", tx.ProducerEpoch, tx.LastProducerEpoch)
	}
}

// An epoch about to overflow moves the id to a new producer id, epoch 0.
func TestEpochExhaustionRotatesProducerID(t *testing.T) {
	tx := NewTxn("tx", 7, 60000, 1000)
	tx.ProducerEpoch = math.MaxInt16 - 1
	out := tx.InitProducerID(60000, ProducerIDAndEpoch{ID: -1}, 2000, func() (int64, error) { return 8, nil })
	if out.Code != 0 || !out.Write || out.Next.ProducerID != 8 || out.Next.ProducerEpoch != 0 {
		t.Fatalf("outcome %+v", out)
	}
	out = tx.InitProducerID(60000, ProducerIDAndEpoch{ID: -1}, 2000, func() (int64, error) { return 0, errors.New("down") })
	if out.Code != kerr.CoordinatorNotAvailable.Code || out.Write {
		t.Fatalf("a failed allocation: %+v", out)
	}
}

func TestTimeoutAbortFencesProducer(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 100, 1000), []step{
		{name: "init", do: initPID(100), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
	})
	start := tx.StartMs
	if tx.TimedOut(start + 100) {
		t.Fatal("timed out at exactly its timeout")
	}
	if !tx.TimedOut(start + 101) {
		t.Fatal("not timed out after its timeout")
	}
	tx = run(t, tx, []step{
		{name: "coordinator aborts", do: func(t Txn, now int64) Outcome { return t.AbortTimedOut(now) }, write: true, state: PrepareAbort, epoch: 1, marker: true},
		{name: "producer commits late", do: end(7, 0, true), code: codeFenced},
		{name: "aborted", do: complete, write: true, state: CompleteAbort, epoch: 1},
	})
	if tx.TimedOut(start + 1_000_000) {
		t.Fatal("a completed transaction times out")
	}
}

func TestExpiryOfIdleIDs(t *testing.T) {
	tx := run(t, NewTxn("tx", 7, 100, 1000), []step{{name: "init", do: initPID(100), write: true, state: Empty, epoch: 0}})
	if tx.Expired(tx.UpdateMs+999, 1000) || !tx.Expired(tx.UpdateMs+1000, 1000) {
		t.Fatal("expiry boundary wrong")
	}
	tx = run(t, tx, []step{{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0}})
	if tx.Expired(tx.UpdateMs+1_000_000, 1000) {
		t.Fatal("an ongoing transaction expired")
	}
	run(t, tx, []step{{name: "dead from ongoing is refused", do: func(t Txn, now int64) Outcome { return t.Expire(now) }, code: codeTxnState}})
}

func TestStateNamesAndTransitions(t *testing.T) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		got, ok := ParseState(s.String())
		if !ok || got != s {
			t.Errorf("%v does not parse back", s)
		}
	}
	if _, ok := ParseState("Sleeping"); ok {
		t.Error("an unknown state parsed")
	}
	for _, c := range []struct {
		from, to State
		ok       bool
	}{
		{Ongoing, PrepareCommit, true}, {Empty, PrepareCommit, false}, {PrepareCommit, CompleteAbort, false},
		{CompleteCommit, Ongoing, true}, {Ongoing, Dead, false}, {PrepareEpochFence, PrepareAbort, true},
	} {
		if ValidTransition(c.from, c.to) != c.ok {
			t.Errorf("%v → %v: want %v", c.from, c.to, c.ok)
		}
	}
}

// decision binds a scripted step to the moment CompleteThen runs it.
func decision(do func(Txn, int64) Outcome, now int64) Decision {
	return func(t *Txn) Outcome { return do(*t, now) }
}

// CompleteThen: the producer's next transaction, asked for while the
// last commit's markers were written, starts from the completed state in
// the same record; each waiting request gets its own answer.
func TestCompleteThenStartsTheNextTransaction(t *testing.T) {
	prepared := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA, tpB), write: true, state: Ongoing, epoch: 0},
		{name: "commit", do: end(7, 0, true), write: true, state: PrepareCommit, epoch: 0, marker: true},
	})
	out, answers := prepared.CompleteThen(2000, []Decision{
		decision(add(7, 0, tpC), 2000),
		decision(add(7, 1, tpA), 2000), // a zombie's epoch: fenced, changes nothing
		decision(add(7, 0, tpA), 2000),
	})
	if !out.Write || out.Markers {
		t.Fatalf("outcome %+v: want a write without markers", out)
	}
	codes := answerCodes(answers)
	if want := []int16{0, codeFenced, 0}; codes[0] != want[0] || codes[1] != want[1] || codes[2] != want[2] {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if len(answers[0].Next.Partitions) != 1 || len(answers[1].Next.Partitions) != 1 || len(answers[2].Next.Partitions) != 2 {
		t.Fatalf("each answer's metadata: %+v", answers)
	}
	next := out.Next
	if next.State != Ongoing || next.ProducerEpoch != 0 || next.StartMs != 2000 ||
		len(next.Partitions) != 2 || next.Partitions[0] != tpC || next.Partitions[1] != tpA {
		t.Fatalf("next %+v: want Ongoing with [%v %v] only, started at 2000", next, tpC, tpA)
	}
	// The record written stands for CompleteCommit followed by the next
	// state: from there on the transaction goes on as usual.
	run(t, next, []step{
		{name: "commit the next", do: end(7, 0, true), write: true, state: PrepareCommit, epoch: 0, marker: true},
	})
}

// A completion with no decision waiting, or only refused ones, writes the
// Complete* state itself; a fence waiting behind the next transaction's
// start prepares that one's abort, whose markers are then due.
func TestCompleteThenScenarios(t *testing.T) {
	abort := run(t, NewTxn("tx", 7, 60000, 1000), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "add", do: add(7, 0, tpA), write: true, state: Ongoing, epoch: 0},
		{name: "abort", do: end(7, 0, false), write: true, state: PrepareAbort, epoch: 0, marker: true},
	})
	if out, answers := abort.CompleteThen(2000, nil); !out.Write || out.Next.State != CompleteAbort || len(answers) != 0 {
		t.Fatalf("no decision: %+v %v", out, answers)
	}
	out, answers := abort.CompleteThen(2000, []Decision{decision(end(7, 0, true), 2000), decision(end(7, 0, false), 2000)})
	if codes := answerCodes(answers); out.Next.State != CompleteAbort || codes[0] != codeTxnState || codes[1] != 0 {
		t.Fatalf("commit and abort answered on the completed abort: %+v %v", out.Next, codes)
	}
	out, answers = abort.CompleteThen(2000, []Decision{decision(add(7, 0, tpB), 2000), decision(initPID(60000), 2000)})
	codes := answerCodes(answers)
	if codes[0] != 0 || codes[1] != codeConcurrent || out.Next.State != PrepareAbort || out.Next.ProducerEpoch != 1 ||
		!out.Markers || len(out.Next.Partitions) != 1 || out.Next.Partitions[0] != tpB {
		t.Fatalf("a new producer fencing the next transaction: %+v markers %v codes %v", out.Next, out.Markers, codes)
	}
	ongoing := run(t, abort, []step{{name: "aborted", do: complete, write: true, state: CompleteAbort, epoch: 0}})
	if out, _ := ongoing.CompleteThen(2000, []Decision{decision(add(7, 0, tpB), 2000)}); out.Write || out.Code != codeTxnState {
		t.Fatalf("CompleteThen of a transaction not prepared: %+v", out)
	}
}

func answerCodes(answers []Outcome) []int16 {
	codes := make([]int16, len(answers))
	for i, a := range answers {
		codes[i] = a.Code
	}
	return codes
}

// Rewrite writes an ongoing transaction again as it stands (the repair of
// an early add whose record failed), and nothing in any other state.
func TestRewriteOnlyAnOngoingTransaction(t *testing.T) {
	tps := []TopicPartition{{"a", 0}, {"b", 1}}
	txn := run(t, NewTxn("tx", 7, 60000, 0), []step{
		{name: "init", do: initPID(60000), write: true, state: Empty, epoch: 0},
		{name: "empty: nothing to rewrite", do: func(t Txn, now int64) Outcome { return t.Rewrite(now) }},
		{name: "add", do: func(t Txn, now int64) Outcome { return t.AddPartitions(7, 0, tps, now) }, write: true, state: Ongoing},
	})
	out := txn.Rewrite(5000)
	if !out.Write || out.Code != 0 || out.Markers || out.Next.State != Ongoing || out.Next.UpdateMs != 5000 ||
		len(out.Next.Partitions) != 2 || !out.Next.Has(tps[0]) || !out.Next.Has(tps[1]) || out.Next.StartMs != txn.StartMs {
		t.Fatalf("rewrite of %+v: %+v", txn, out)
	}
	out.Next.Partitions[0] = TopicPartition{"z", 9}
	if !txn.Has(tps[0]) {
		t.Fatal("the rewrite shares its partitions with the metadata it was decided on")
	}
	run(t, txn, []step{
		{name: "commit", do: func(t Txn, now int64) Outcome { return t.EndTxn(7, 0, true, now) }, write: true, state: PrepareCommit, marker: true},
		{name: "prepared: nothing to rewrite", do: func(t Txn, now int64) Outcome { return t.Rewrite(now) }},
	})
}
