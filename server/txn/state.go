package txn

import (
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's state, numbered as Kafka's TransactionState
// (the byte written in __transaction_state values).
type State int8

// Kafka's states. PrepareEpochFence is never written: Kafka holds it only
// as a pending state while it fences a producer; ferry fences and prepares
// the abort in one written transition (see fenceAndAbort), so it appears
// only as a name a client may filter on.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState reads a state name as ListTransactions' filter and
// DescribeTransactions spell it (case-insensitive).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if strings.EqualFold(n, name) {
			return State(i), true
		}
	}
	return 0, false
}

// validPrevious is Kafka's TransactionState.validPreviousStates: a
// transition to the key is legal only from one of these.
var validPrevious = map[State][]State{
	Empty:         {Empty, CompleteCommit, CompleteAbort},
	Ongoing:       {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit: {Ongoing},
	// Empty and Complete* to PrepareAbort is transaction.version 2's
	// abort of a transaction that added nothing (KIP-890 part 2).
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteCommit, CompleteAbort},
	PrepareEpochFence: {Ongoing},
}

// ValidTransition reports whether from → to is one of Kafka's transitions.
func ValidTransition(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH, noID its NO_PRODUCER_ID.
const (
	noEpoch int16 = -1
	noID    int64 = -1
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func comparePartitions(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// Txn is one transactional id's metadata, as Kafka's TransactionMetadata:
// what __transaction_state holds for it. Values are copied, never shared:
// every decision returns a new Txn.
type Txn struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	// PrevProducerID and LastProducerEpoch let a producer retry an
	// InitProducerId whose answer it lost (KIP-360): its old id and epoch
	// are still accepted once.
	PrevProducerID    int64
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions are the transaction's partitions, sorted, without
	// duplicates; empty unless Ongoing or Prepare*.
	Partitions []TopicPartition
	// StartMs is when the transaction began (its first partition), -1
	// before; UpdateMs when the metadata last changed.
	StartMs  int64
	UpdateMs int64
	// NextProducerID is, while a transaction.version 2 end whose epoch
	// ran out is being completed, the producer id the producer was
	// answered with (epoch 0); Complete switches to it. Its markers are
	// written under the old id at epoch MaxInt16, as Kafka's. noID else.
	NextProducerID int64
	// ClientTransactionVersion is 2 while the state is the work of an
	// EndTxn v5 (Kafka 4's field of the same name), 0 after any other
	// end: a coordinator loading a version-2 end recognises the
	// producer's retry of it by the epoch before the bump.
	ClientTransactionVersion int16
	// Pending, when not nil, are the markers of the producer's previous
	// transaction, still being written while this one (Ongoing, or
	// prepared after) began ahead of them (AheadOfMarkers). Never
	// modified: a state without them has Pending nil.
	Pending *PendingMarkers
	// Carried are partitions the producer's transaction at ProducerEpoch
	// may add without a write of its own (transaction.version 2): an
	// EndTxn v5 records the ended transaction's partitions beside the
	// epoch it bumps to (ferry's tagged field 0x6666), so the next
	// transaction's leaders' adds of them are answered from memory
	// (AddPartitions' quiet outcome): an acknowledged record already
	// names them for a coordinator loading it. Sorted; never modified.
	Carried []TopicPartition
	// carriedUnknown: this state was loaded from a record carrying
	// partitions (Loaded), so the coordinator before may have let the
	// next transaction add them; once the loaded transaction is
	// complete, that transaction's requests and the coordinator's own
	// aborts take it as begun with them all (begunCarried). In memory
	// only.
	carriedUnknown bool
}

// PendingMarkers are a completed transaction's markers not yet all
// written (transaction.version 2): the next transaction's leaders were
// answered before them, so the record that began it holds them, and a
// coordinator loading it sends them before any marker of the next one.
type PendingMarkers struct {
	ProducerID int64
	// ProducerEpoch is the markers' epoch (the bumped one, the next
	// transaction's); TxnEpoch the epoch of the data they end.
	ProducerEpoch    int16
	TxnEpoch         int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// endsSame reports whether pm are the markers of the prepared t.
func (pm *PendingMarkers) endsSame(t *Txn) bool {
	return pm != nil && pm.ProducerID == t.ProducerID && pm.ProducerEpoch == t.ProducerEpoch &&
		pm.Commit == (t.State == PrepareCommit)
}

// MarkersTxnEpoch is the epoch of the data the prepared t's markers end,
// and whether it is known: an EndTxn v5's (each transaction its own
// epoch); not for a transaction.version 1 end or the coordinator's own
// aborts, whose markers go out as Kafka's.
func (t *Txn) MarkersTxnEpoch() (int16, bool) {
	if t.ClientTransactionVersion != 2 || t.LastProducerEpoch < 0 {
		return 0, false
	}
	return t.LastProducerEpoch, true
}

// AheadOfMarkers decides, while the prepared t's markers are being
// written, a partition leader's add for the producer's next transaction
// (transaction.version 2, decide: its AddPartitions, at the epoch the
// end bumped to) at once instead of after the markers: t completed, the
// next transaction Ongoing with the partition, and t's markers Pending
// beside it, all in one record. The leader then waits, on its partition,
// for t's marker before it appends (Replica.AwaitTxnOrder), and markers
// that say the epoch they end cannot end the next transaction. false
// when the decision does not qualify (a version 1 end, a rotation to a
// new producer id, markers already pending, or anything but an add that
// begins the next transaction): the caller waits for the markers.
func (t Txn) AheadOfMarkers(nowMs int64, coordinatorEpoch int32, decide Decision) (Outcome, bool) {
	txnEpoch, known := t.MarkersTxnEpoch()
	if t.State != PrepareCommit && t.State != PrepareAbort || !known || t.NextProducerID >= 0 || t.Pending != nil {
		return Outcome{}, false
	}
	done := t.Complete(nowMs)
	if !done.Write {
		return Outcome{}, false
	}
	state := done.Next
	o := decide(&state)
	if !o.Write && !o.Quiet || o.Code != 0 || o.Next.State != Ongoing {
		return Outcome{}, false
	}
	o.Next.Pending = &PendingMarkers{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch, TxnEpoch: txnEpoch,
		Commit: t.State == PrepareCommit, CoordinatorEpoch: coordinatorEpoch, Partitions: t.Partitions}
	o.Markers = false
	return o, true
}

// NewTxn is the metadata of an id seen for the first time, before its
// first InitProducerId is written: Kafka's epoch -1, so the first bump
// gives epoch 0.
func NewTxn(id string, producerID int64, timeoutMs int32, nowMs int64) Txn {
	return Txn{ID: id, ProducerID: producerID, ProducerEpoch: noEpoch, PrevProducerID: noID, LastProducerEpoch: noEpoch,
		TimeoutMs: timeoutMs, State: Empty, StartMs: -1, UpdateMs: nowMs, NextProducerID: noID}
}

// Has reports whether tp is in the transaction.
func (t *Txn) Has(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(t.Partitions, tp, comparePartitions)
	return ok
}

func (t *Txn) epochExhausted() bool { return t.ProducerEpoch >= math.MaxInt16-1 }

// Outcome is a decision: the metadata to write (when Write), then the code
// to answer once it is durable (at once when !Write), and whether the
// written state is a Prepare* whose markers must now be sent.
type Outcome struct {
	Next    Txn
	Write   bool
	Code    int16
	Markers bool
	// Quiet: Next replaces the metadata in memory, answered at once with
	// nothing written, as an acknowledged record covers it already (an
	// add of Carried partitions).
	Quiet bool
}

func answer(code int16) Outcome { return Outcome{Code: code} }

func (t Txn) to(next Txn, code int16) Outcome {
	if !ValidTransition(t.State, next.State) {
		return answer(errInvalidTxnState)
	}
	return Outcome{Next: next, Write: true, Code: code,
		Markers: next.State == PrepareCommit || next.State == PrepareAbort}
}

// Error codes the decisions answer.
var (
	errConcurrentTransactions = kerr.ConcurrentTransactions.Code
	errProducerFenced         = kerr.ProducerFenced.Code
	errInvalidProducerMapping = kerr.InvalidProducerIDMapping.Code
	errInvalidTxnState        = kerr.InvalidTxnState.Code
	errCoordinatorUnavailable = kerr.CoordinatorNotAvailable.Code
)

// ProducerIDAndEpoch is what a KIP-360 InitProducerId carries; ID -1
// means none.
type ProducerIDAndEpoch struct {
	ID    int64
	Epoch int16
}

// InitProducerID decides an InitProducerId for an existing id (Kafka's
// prepareInitProducerIdTransit): a bumped epoch for a producer starting
// over, zombie fencing (an Ongoing transaction is aborted under a bumped
// epoch, the caller told to retry with CONCURRENT_TRANSACTIONS), a new
// producer id when the epoch is used up. newID hands out a producer id
// and is called only then.
func (t Txn) InitProducerID(timeoutMs int32, expected ProducerIDAndEpoch, nowMs int64, newID func() (int64, error)) Outcome {
	haveExpected := expected.ID >= 0
	if haveExpected && !t.validProducer(expected) {
		return answer(errProducerFenced)
	}
	t = t.begunCarried()
	switch t.State {
	case PrepareCommit, PrepareAbort:
		return answer(errConcurrentTransactions)
	case Ongoing:
		// A new producer instance with this id: fence the old one and
		// abort what it left open; the client retries after.
		return t.fenceAndAbort(nowMs, errConcurrentTransactions)
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return answer(errConcurrentTransactions)
	}
	next := t
	next.State, next.TimeoutMs, next.Partitions, next.StartMs, next.UpdateMs = Empty, timeoutMs, nil, -1, nowMs
	next.Carried = nil
	if t.epochExhausted() && (!haveExpected || expected.Epoch == t.ProducerEpoch) {
		id, err := newID()
		if err != nil {
			return answer(errCoordinatorUnavailable)
		}
		next.PrevProducerID, next.LastProducerEpoch = noID, noEpoch
		if haveExpected {
			next.PrevProducerID, next.LastProducerEpoch = t.ProducerID, t.ProducerEpoch
		}
		next.ProducerID, next.ProducerEpoch = id, 0
		return t.to(next, 0)
	}
	bumped := t.ProducerEpoch + 1
	switch {
	case !haveExpected:
		next.ProducerEpoch, next.LastProducerEpoch = bumped, noEpoch
	case t.ProducerEpoch == noEpoch || expected.Epoch == t.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = bumped, t.ProducerEpoch
	case expected.Epoch == t.LastProducerEpoch:
		// A retry of the bump already written: answer it again.
		return Outcome{Next: t, Code: 0}
	default:
		return answer(errProducerFenced)
	}
	return t.to(next, 0)
}

// validProducer is Kafka's isValidProducerId for a KIP-360 request: the
// id has no epoch yet, or the producer id is the current one (its epoch
// is checked by the bump), or the previous one whose epoch ran out (a
// retry of the rotation to a new producer id).
func (t *Txn) validProducer(p ProducerIDAndEpoch) bool {
	return t.ProducerEpoch == noEpoch || p.ID == t.ProducerID ||
		p.ID == t.PrevProducerID && p.Epoch >= math.MaxInt16-1
}

// fenceAndAbort bumps the epoch (unless used up) and prepares the abort of
// the ongoing transaction: Kafka's PrepareEpochFence followed by its
// PrepareAbort, written as one transition. Markers carry the new epoch, so
// the old producer's late writes are fenced on every partition.
func (t Txn) fenceAndAbort(nowMs int64, code int16) Outcome {
	t = t.begunCarried()
	next := t
	if !t.epochExhausted() {
		next.ProducerEpoch, next.LastProducerEpoch = t.ProducerEpoch+1, noEpoch
	}
	// The coordinator's own end: no client retries it, and the producer
	// is fenced, so nothing is carried.
	next.State, next.UpdateMs, next.ClientTransactionVersion, next.Carried = PrepareAbort, nowMs, 0, nil
	return t.to(next, code)
}

// checkProducer is the gate of a client's AddPartitionsToTxn, AddOffsets
// and EndTxn: its id and exact epoch.
func (t *Txn) checkProducer(producerID int64, epoch int16) int16 {
	switch {
	case t.NextProducerID >= 0 && producerID == t.NextProducerID && epoch == 0:
		// The producer's next transaction under the id it was given
		// while this one's markers are written: it waits for Complete.
		return errConcurrentTransactions
	case producerID != t.ProducerID:
		return errInvalidProducerMapping
	case epoch != t.ProducerEpoch:
		return errProducerFenced
	}
	return 0
}

// AddPartitions decides an AddPartitionsToTxn (Kafka's
// handleAddPartitionsToTransaction): the transaction becomes Ongoing with
// tps added; nothing is written when it already holds them all.
func (t Txn) AddPartitions(producerID int64, epoch int16, tps []TopicPartition, nowMs int64) Outcome {
	if code := t.checkProducer(producerID, epoch); code != 0 {
		return answer(code)
	}
	t = t.begunCarried()
	switch t.State {
	case PrepareCommit, PrepareAbort:
		return answer(errConcurrentTransactions)
	case Ongoing, Empty, CompleteCommit, CompleteAbort:
	default:
		return answer(errInvalidTxnState)
	}
	next := t
	next.Partitions = slices.Clone(t.Partitions)
	for _, tp := range tps {
		if i, ok := slices.BinarySearchFunc(next.Partitions, tp, comparePartitions); !ok {
			next.Partitions = slices.Insert(next.Partitions, i, tp)
		}
	}
	if t.State == Ongoing && len(next.Partitions) == len(t.Partitions) {
		return answer(0)
	}
	if t.State != Ongoing {
		next.StartMs = nowMs
	}
	next.State, next.UpdateMs = Ongoing, nowMs
	if t.carriesAdded(tps) {
		return Outcome{Next: next, Quiet: true}
	}
	return t.to(next, 0)
}

// carriesAdded reports whether every partition of tps that t's
// transaction does not hold yet is Carried: an acknowledged record of
// the id names them for this epoch's transaction.
func (t *Txn) carriesAdded(tps []TopicPartition) bool {
	if len(t.Carried) == 0 {
		return false
	}
	for _, tp := range tps {
		if t.State == Ongoing && t.Has(tp) {
			continue
		}
		if _, ok := slices.BinarySearchFunc(t.Carried, tp, comparePartitions); !ok {
			return false
		}
	}
	return true
}

// VerifyPartition answers KIP-890's question for one partition a leader is
// about to append a transactional batch to (Kafka's
// handleVerifyPartitionsInTransaction): 0 when it is in the producer's
// ongoing transaction.
func (t *Txn) VerifyPartition(producerID int64, epoch int16, tp TopicPartition) int16 {
	if code := t.checkProducer(producerID, epoch); code != 0 {
		return code
	}
	switch {
	case t.State == PrepareCommit || t.State == PrepareAbort:
		return errConcurrentTransactions
	case t.State != Ongoing || !t.Has(tp):
		return errInvalidTxnState
	}
	return 0
}

// EndTxn decides an EndTxn (Kafka's handleEndTransaction, client side): an
// Ongoing transaction prepares its commit or abort; a commit asked again
// after it completed is answered as done, as Kafka does (a client that
// lost the first answer, or Flink resuming a transaction it committed).
func (t Txn) EndTxn(producerID int64, epoch int16, commit bool, nowMs int64) Outcome {
	if code := t.checkProducer(producerID, epoch); code != 0 {
		return answer(code)
	}
	if t.State == CompleteCommit && !commit || t.State == CompleteAbort && commit {
		t = t.begunCarried() // not the end answered again: a transaction of the carried partitions
	}
	switch t.State {
	case Ongoing:
		next := t
		next.State, next.UpdateMs, next.ClientTransactionVersion, next.Carried = PrepareAbort, nowMs, 0, nil
		if commit {
			next.State = PrepareCommit
		}
		return t.to(next, 0)
	case CompleteCommit:
		return answer(codeIf(!commit, errInvalidTxnState))
	case CompleteAbort:
		return answer(codeIf(commit, errInvalidTxnState))
	case PrepareCommit:
		return answer(codeIfElse(commit, errConcurrentTransactions, errInvalidTxnState))
	case PrepareAbort:
		return answer(codeIfElse(!commit, errConcurrentTransactions, errInvalidTxnState))
	}
	return answer(errInvalidTxnState)
}

func codeIf(cond bool, code int16) int16 {
	if cond {
		return code
	}
	return 0
}

func codeIfElse(cond bool, yes, no int16) int16 {
	if cond {
		return yes
	}
	return no
}

// Complete is the transition after every marker is written: PrepareCommit
// → CompleteCommit, PrepareAbort → CompleteAbort, the partitions cleared.
func (t Txn) Complete(nowMs int64) Outcome {
	next := t
	switch t.State {
	case PrepareCommit:
		next.State = CompleteCommit
	case PrepareAbort:
		next.State = CompleteAbort
	default:
		return answer(errInvalidTxnState)
	}
	next.Partitions, next.UpdateMs = nil, nowMs
	if t.NextProducerID >= 0 {
		next.PrevProducerID, next.ProducerID, next.ProducerEpoch, next.NextProducerID = t.ProducerID, t.NextProducerID, 0, noID
	}
	if t.carriedUnknown {
		next.StartMs = nowMs // the next transaction may have begun: timed from here
	}
	return t.to(next, 0)
}

// CompleteIdle is Complete written alone, no request of the producer's
// next transaction having come: the carried partitions are dropped, so
// that a coordinator loading the record knows no transaction began (an
// add coming later is written as any first add). Loaded ones stay: the
// coordinator before may have let the next transaction add them.
func (t Txn) CompleteIdle(nowMs int64) Outcome {
	o := t.Complete(nowMs)
	if o.Write {
		o.Next = o.Next.idle()
	}
	return o
}

// idle is a completed t as written when no next transaction began: its
// carried partitions dropped, unless loaded ones (carriedUnknown).
func (t Txn) idle() Txn {
	if (t.State == CompleteCommit || t.State == CompleteAbort) && !t.carriedUnknown {
		t.Carried = nil
	}
	return t
}

// Loaded is t as a coordinator installs it from the log. The
// coordinator that wrote a record carrying partitions may have let the
// next transaction add them without a record since, and their leaders
// append its data: an ongoing transaction takes them as added, and a
// prepared or completed one is marked carriedUnknown, so that the next
// transaction's end, its fencing and its timeout (counted from the load,
// or the completion) treat them as added (begunCarried).
func (t Txn) Loaded(nowMs int64) Txn {
	if len(t.Carried) == 0 {
		return t
	}
	switch t.State {
	case Ongoing:
		t.Partitions = union(t.Partitions, t.Carried)
	case PrepareCommit, PrepareAbort:
		t.carriedUnknown = true
	case CompleteCommit, CompleteAbort:
		t.carriedUnknown, t.StartMs = true, nowMs
	default:
		t.Carried = nil
	}
	return t
}

// begunCarried is t with the transaction its carried partitions may have
// begun made Ongoing with them (a loaded state, carriedUnknown, whose
// transaction completed), else t: what the next transaction's requests
// and the coordinator's own aborts are decided on.
func (t Txn) begunCarried() Txn {
	if !t.MayHaveBegunUnseen() {
		return t
	}
	t.State, t.Partitions, t.carriedUnknown = Ongoing, slices.Clone(t.Carried), false
	return t
}

// SettleIdle is t, a loaded state whose carried partitions' leaders all
// answered that the producer has no transaction open there (so its next
// transaction never began: Coordinator.probeBeforeAbort), written
// without them, as CompleteIdle would have written it; nothing else
// changes, so the producer goes on at its epoch. Kafka has no transition
// from a completed state to itself: this record is ferry's, of the same
// state. Any other state is left as it is.
func (t Txn) SettleIdle(nowMs int64) Outcome {
	if !t.MayHaveBegunUnseen() {
		return answer(0)
	}
	next := t
	next.Carried, next.carriedUnknown, next.UpdateMs = nil, false, nowMs
	return Outcome{Next: next, Write: true}
}

// CarriedUnknown reports whether the transaction at the producer's
// current epoch may have begun on carried partitions without this
// coordinator knowing (a loaded state; see Loaded).
func (t *Txn) CarriedUnknown() bool { return t.carriedUnknown }

// MayHaveBegunUnseen reports whether t is such a loaded state whose own
// transaction is complete, and nothing of the next one has been heard
// since: the next may have begun on the carried partitions, or never.
func (t *Txn) MayHaveBegunUnseen() bool {
	return t.carriedUnknown && (t.State == CompleteCommit || t.State == CompleteAbort)
}

// maxCarried bounds the partitions an end carries beyond its own: each
// costs a marker after a coordinator failover (a loading coordinator
// takes them all as begun, begunCarried) and a probe at an idle
// producer's timeout.
const maxCarried = 32

// carriedOn is what an end whose transaction wrote to partitions, and
// could add carried without a write, carries to the next: both, while
// they are at most maxCarried, so that a producer whose partitioner
// moves over a topic's partitions (franz-go's sticky one moves on
// whenever a batch fills) finds the ones it comes back to carried; past
// maxCarried, the end's own partitions start the set again.
func carriedOn(partitions, carried []TopicPartition) []TopicPartition {
	if u := union(partitions, carried); len(u) <= maxCarried {
		return u
	}
	return partitions
}

// union is a and b, sorted, without duplicates.
func union(a, b []TopicPartition) []TopicPartition {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, comparePartitions)
	return slices.Compact(out)
}

// EndTxnV2 decides an EndTxn v5 (KIP-890 part 2, transaction.version 2):
// every end bumps the producer's epoch, the markers carry the bumped
// epoch (so a late write of the ended transaction is fenced on every
// partition) and the producer is answered the new epoch, its next
// transaction's. An abort with nothing added is legal (the producer may
// have had a produce registered at a partition and lost its answer) and
// bumps the epoch too. An end asked again by a producer that lost the
// answer (its epoch is the one before the bump) is answered as done when
// it asks for what was decided. When the epoch runs out the producer is
// given a new producer id at epoch 0, and the markers go out under the
// old id at epoch MaxInt16.
func (t Txn) EndTxnV2(producerID int64, epoch int16, commit bool, nowMs int64, newID func() (int64, error)) Outcome {
	if t.isEndRetry(producerID, epoch) {
		switch t.State {
		case PrepareCommit, CompleteCommit:
			return answer(codeIf(!commit, errInvalidTxnState))
		case PrepareAbort, CompleteAbort:
			return answer(codeIf(commit, errInvalidTxnState))
		}
		return answer(errInvalidTxnState)
	}
	if code := t.checkProducer(producerID, epoch); code != 0 {
		return answer(code)
	}
	t = t.begunCarried()
	switch t.State {
	case Ongoing:
	case Empty, CompleteCommit, CompleteAbort:
		if commit {
			return answer(errInvalidTxnState)
		}
	case PrepareCommit, PrepareAbort:
		return answer(errConcurrentTransactions)
	default:
		return answer(errInvalidTxnState)
	}
	next := t
	next.State, next.UpdateMs, next.LastProducerEpoch, next.ClientTransactionVersion = PrepareAbort, nowMs, epoch, 2
	if commit {
		next.State = PrepareCommit
	}
	if t.State != Ongoing {
		next.Partitions, next.StartMs = nil, nowMs
	}
	// The next transaction (at the bumped epoch) may add this one's
	// partitions, and those this one could, without a write: this record
	// names them.
	next.Carried = next.Partitions
	if t.State == Ongoing {
		next.Carried = carriedOn(next.Partitions, t.Carried)
	}
	if t.epochExhausted() {
		id, err := newID()
		if err != nil {
			return answer(errCoordinatorUnavailable)
		}
		next.ProducerEpoch, next.NextProducerID, next.Carried = math.MaxInt16, id, nil
	} else {
		next.ProducerEpoch = epoch + 1
	}
	return t.to(next, 0)
}

// isEndRetry reports whether an EndTxn v5 comes from a producer that
// lost the answer to the end already decided: its epoch is the one that
// end bumped, or the last one of the producer id it rotated away from.
func (t *Txn) isEndRetry(producerID int64, epoch int16) bool {
	if t.LastProducerEpoch < 0 || epoch != t.LastProducerEpoch {
		return false
	}
	switch {
	case producerID == t.ProducerID:
		return t.ProducerEpoch == epoch+1 || t.NextProducerID >= 0 && t.ProducerEpoch == math.MaxInt16
	case producerID == t.PrevProducerID:
		return t.ProducerEpoch == 0 && epoch >= math.MaxInt16-1
	}
	return false
}

// ProducerAfterEnd is the producer id and epoch an EndTxn v5 answers:
// the next transaction's.
func (t *Txn) ProducerAfterEnd() (int64, int16) {
	if t.NextProducerID >= 0 {
		return t.NextProducerID, 0
	}
	return t.ProducerID, t.ProducerEpoch
}

// Decision is one request's decision on the metadata, as the coordinator
// feeds the state machine (a method value such as Txn.AddPartitions with
// its arguments bound).
type Decision func(t *Txn) Outcome

// CompleteThen is the completion of a prepared transaction whose markers
// are all written, followed by the decisions of the requests that waited
// for it (the producer's next AddPartitionsToTxn, usually): one outcome,
// whose Next is the metadata after all of them, to be written as one
// record instead of CompleteCommit and then the next state. answers holds
// each decision's code and the metadata as that decision left it, given
// once the record is durable. A decision answered with an error leaves
// the metadata as it found it. The record skips the Complete* state in
// the log, which a coordinator loading it reads the same way: the
// transaction it ended was completed (its markers were written before).
func (t Txn) CompleteThen(nowMs int64, decisions []Decision) (out Outcome, answers []Outcome) {
	done := t.Complete(nowMs)
	if !done.Write {
		return done, nil
	}
	state := done.Next
	answers = make([]Outcome, len(decisions))
	for i, decide := range decisions {
		o := decide(&state)
		if o.Write || o.Quiet {
			state = o.Next
		}
		answers[i] = Outcome{Next: state, Code: o.Code}
	}
	state = state.idle() // when the decisions began no transaction
	return Outcome{Next: state, Write: true,
		Markers: state.State == PrepareCommit || state.State == PrepareAbort}, answers
}

// TimedOut reports whether an Ongoing transaction outlived its timeout
// (transaction.timeout.ms of its producer).
func (t *Txn) TimedOut(nowMs int64) bool {
	b := t.begunCarried()
	return b.State == Ongoing && b.StartMs >= 0 && nowMs-b.StartMs > int64(b.TimeoutMs)
}

// AbortTimedOut decides the coordinator's own abort of a timed-out
// transaction: the producer is fenced (its epoch bumped) and the abort
// prepared (Kafka's abortTimedOutTransactions).
func (t Txn) AbortTimedOut(nowMs int64) Outcome { return t.fenceAndAbort(nowMs, 0) }

// Expired reports whether an idle id is due for removal
// (transactional.id.expiration.ms after its last change, with no
// transaction open).
func (t *Txn) Expired(nowMs int64, expirationMs int64) bool {
	if t.Pending != nil || t.carriedUnknown {
		return false
	}
	switch t.State {
	case Empty, CompleteCommit, CompleteAbort:
		return nowMs-t.UpdateMs >= expirationMs
	}
	return false
}

// Expire is the removal of an expired id: Dead, written as a tombstone.
func (t Txn) Expire(nowMs int64) Outcome {
	next := t
	next.State, next.Partitions, next.UpdateMs = Dead, nil, nowMs
	return t.to(next, 0)
}

// Rewrite is an ongoing transaction written again as it stands: the
// coordinator's repair when the record that added some of its partitions
// failed after the producer was answered (Coordinator.writeEarly), so
// that an acknowledged record holds them before their data is accepted.
// Nothing is written in another state: its record held them all.
func (t Txn) Rewrite(nowMs int64) Outcome {
	if t.State != Ongoing {
		return answer(0)
	}
	next := t
	next.Partitions, next.UpdateMs = slices.Clone(t.Partitions), nowMs
	return t.to(next, 0)
}
