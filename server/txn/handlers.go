package txn

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	errInvalidRequest        = kerr.InvalidRequest.Code
	errInvalidTxnTimeout     = kerr.InvalidTransactionTimeout.Code
	errUnknownProducerID     = kerr.UnknownProducerID.Code
	errTransactionalIDNotFnd = kerr.TransactionalIDNotFound.Code
)

// transition runs one decision for id: the gate (this broker coordinates
// id), the decision on the current metadata (nil when the id is new, then
// only when create), the write of its outcome, acknowledged by every
// in-sync replica (syncStateWrites: fsynced too on a single node), and
// only then the change in memory. Markers
// of a prepared commit or abort are sent after, in the background.
//
// A decision answered CONCURRENT_TRANSACTIONS while another transition of
// id is being written or its markers are being sent is tried again once
// that ends, for up to concurrentWait: a producer beginning its next
// transaction right after EndTxn would otherwise back off (franz-go and
// the Java client wait 20 ms) while the markers take a few milliseconds,
// which dominated the cost of small transactions. While the markers are
// being written it is parked instead: the completer decides it right
// after the completion and writes both as one record (park).
func (c *Coordinator) transition(ctx context.Context, id string, create bool, decide func(t *Txn) Outcome) (Txn, int16) {
	return c.transitionAnswering(ctx, id, create, answerDurable, decide)
}

// answering is when transitionAnswering answers a decision.
type answering int

const (
	// answerDurable: once its record is acknowledged; requests arriving
	// while markers are written wait for them (park).
	answerDurable answering = iota
	// answerEarly: a decision adding partitions to an ongoing transaction
	// is answered once its record is in this broker's log (writeEarly).
	answerEarly
	// answerAhead: a partition leader's add (transaction.version 2),
	// answered once its record is acknowledged, but decided in memory at
	// once so that the other leaders' adds share the append (writeEarly);
	// one arriving while the previous transaction's markers are written
	// is decided at once, ahead of them (writeAhead).
	answerAhead
)

// transitionAnswering is transition, answering as how says.
func (c *Coordinator) transitionAnswering(ctx context.Context, id string, create bool, how answering, decide func(t *Txn) Outcome) (Txn, int16) {
	deadline := time.Now().Add(c.concurrentWait)
	for {
		seen := c.changesOf(id)
		t, code := c.transitionOnce(ctx, id, create, how, decide)
		if code != errConcurrentTransactions {
			return t, code
		}
		if c.refused != nil {
			c.refused()
		}
		e, ok := c.lookup(id, false)
		if !ok {
			return t, code
		}
		var p, coordinatorEpoch int32
		if how == answerAhead {
			var serving int16
			if p, coordinatorEpoch, serving = c.serves(id); serving != 0 {
				return t, serving
			}
		}
		e.mu.Lock()
		if e.changes != seen {
			// The write or completion the request met ended between its
			// refusal and now: the wake-up it would wait for has passed.
			// Waiting for the next one hung the completer itself (its
			// completion's write refused by another write, which ended
			// before it waited) and, behind it, every request waiting
			// for the completion to end.
			e.mu.Unlock()
			if time.Now().Before(deadline) {
				continue
			}
			return t, code
		}
		if !e.busy && !e.completing {
			// Nothing in flight. When the state the request was decided
			// on has changed since (another leader's add of the same
			// transaction moved it on, ahead of the markers), decide it
			// again on the new one: answering CONCURRENT_TRANSACTIONS
			// then made the producer back off 200 ms and more
			// (franz-go: 250 ms ±20%, doubling) for a transaction that
			// would take the partition at once.
			changed := !sameTransaction(&e.txn, &t)
			e.mu.Unlock()
			if changed && time.Now().Before(deadline) {
				continue
			}
			return t, code
		}
		if how == answerAhead && e.completing && !e.markersDone && !e.busy {
			if t, code, decided := c.writeAhead(ctx, e, p, coordinatorEpoch, decide); decided {
				return t, code // e.mu unlocked there
			}
		}
		if e.completing && !e.markersDone && !e.busy {
			pr := &parkedRequest{decide: decide, done: make(chan parkedAnswer, 1)}
			e.parked = append(e.parked, pr)
			e.wakeLingerLocked()
			e.mu.Unlock()
			a, answered := c.park(ctx, e, pr, deadline)
			switch {
			case !answered:
				return t, code
			case a.retry:
				continue
			}
			return a.txn, a.code
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		changed := e.changed
		e.mu.Unlock()
		if !c.waitUntil(ctx, changed, deadline) {
			return t, code
		}
	}
}

// changesOf is the count of id's wake-ups so far (entry.changes), 0 for
// an id with no entry.
func (c *Coordinator) changesOf(id string) uint64 {
	e, ok := c.lookup(id, false)
	if !ok {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changes
}

// waitUntil waits for changed until deadline; false when it did not come.
func (c *Coordinator) waitUntil(ctx context.Context, changed <-chan struct{}, deadline time.Time) bool {
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-changed:
		return true
	case <-timer.C:
	case <-ctx.Done():
	case <-c.life.Closing():
	}
	return false
}

// parkedRequest is a request waiting for the markers of its id's
// prepared transaction; the completer answers it on done.
type parkedRequest struct {
	decide func(t *Txn) Outcome
	done   chan parkedAnswer
}

// parkedAnswer: the request's code and the metadata it left, or retry
// (the completer stopped before deciding it: the request goes through
// transition again).
type parkedAnswer struct {
	txn   Txn
	code  int16
	retry bool
}

// park waits for pr's answer until deadline; false when it did not come
// and pr was withdrawn. A request the completer already took is waited
// for whatever the deadline: its write may be under way, and its outcome
// must be known.
func (c *Coordinator) park(ctx context.Context, e *entry, pr *parkedRequest, deadline time.Time) (parkedAnswer, bool) {
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	select {
	case a := <-pr.done:
		return a, true
	case <-timer.C:
	case <-ctx.Done():
	case <-c.life.Closing():
	}
	e.mu.Lock()
	for i, q := range e.parked {
		if q == pr {
			e.parked = append(e.parked[:i:i], e.parked[i+1:]...)
			e.mu.Unlock()
			return parkedAnswer{}, false
		}
	}
	e.mu.Unlock()
	return <-pr.done, true
}

// concurrentWait bounds how long a request waits for id's transition in
// flight (a state write, or markers and the completion) before it is
// answered CONCURRENT_TRANSACTIONS (Coordinator.concurrentWait; tests
// lengthen it).
const concurrentWait = 200 * time.Millisecond

// transitionOnce is one attempt of transition.
func (c *Coordinator) transitionOnce(ctx context.Context, id string, create bool, how answering, decide func(t *Txn) Outcome) (Txn, int16) {
	p, epoch, code := c.serves(id)
	if code != 0 {
		return Txn{}, code
	}
	e, ok := c.lookup(id, create)
	if !ok {
		return Txn{}, errInvalidProducerMapping
	}
	e.mu.Lock()
	if e.busy {
		e.mu.Unlock()
		return Txn{}, errConcurrentTransactions
	}
	var out Outcome
	switch {
	case e.written:
		out = decide(&e.txn)
	case create:
		out = decide(nil)
	default:
		// Created by an InitProducerId whose write failed, not yet
		// forgotten: as unknown.
		e.mu.Unlock()
		return Txn{}, errInvalidProducerMapping
	}
	if out.Quiet {
		return e.applyQuiet(out) // e.mu unlocked there
	}
	if !out.Write {
		cur := e.txn
		e.mu.Unlock()
		if !e.written {
			c.forget(id, e)
		}
		return cur, out.Code
	}
	if how != answerDurable && e.written && e.txn.State == Ongoing && out.Next.State == Ongoing {
		return c.writeEarly(ctx, e, p, out, how == answerAhead) // e.mu unlocked there
	}
	q := c.enqueue(p, &out.Next)
	e.busy = true
	e.mu.Unlock()

	err := q.wait()

	e.mu.Lock()
	e.busy = false
	e.notifyLocked()
	if err != nil {
		e.mu.Unlock()
		c.logger.Warn("writing transaction state failed", "transactional_id", id, "state", out.Next.State, "err", err)
		if !e.written {
			c.forget(id, e)
		}
		return Txn{}, writeCode(err)
	}
	_, epoch, code = c.serves(id)
	if code != 0 {
		// Deposed while writing: the next coordinator reads the log.
		e.mu.Unlock()
		return Txn{}, errNotCoordinator
	}
	e.durableLocked(out.Next)
	e.txn, e.written = e.settledLocked(out.Next), true
	startMarkers := out.Markers && !e.completing
	if startMarkers {
		e.completing = true
	} else if out.Markers {
		e.preparedLate = true
	}
	e.mu.Unlock()
	if out.Next.State == Dead {
		c.forget(id, e)
	}
	if startMarkers {
		c.startCompletion(e, out.Next, p, epoch, c.termOf(p))
	}
	return out.Next, out.Code
}

// writeAhead decides a partition leader's add for the producer's next
// transaction while the prepared one's markers are being written
// (Txn.AheadOfMarkers): one record holds the next transaction Ongoing and
// the markers still pending, and the add is answered once it is
// acknowledged, without waiting for the markers. The completer goes on
// sending them; the leader waits on its partition for the previous
// marker before it appends. The state changes in memory at once, as an
// early write's (writeEarly): the other leaders' adds of the same
// transaction, arriving while the record is written, are decided on it
// and share the next append instead of waiting for this one. e.mu is
// held; decided false (nothing done, e.mu still held) when the add does
// not qualify, else e.mu is released.
func (c *Coordinator) writeAhead(ctx context.Context, e *entry, p, coordinatorEpoch int32, decide func(t *Txn) Outcome) (Txn, int16, bool) {
	if !e.written {
		return Txn{}, 0, false
	}
	out, ok := e.txn.AheadOfMarkers(c.nowMs(), coordinatorEpoch, decide)
	if !ok {
		return Txn{}, 0, false
	}
	if out.Quiet {
		t, code := e.applyQuiet(out)
		return t, code, true
	}
	e.wakeLingerLocked()
	t, code := c.writeEarly(ctx, e, p, out, true)
	return t, code, true
}

// applyQuiet applies a quiet outcome (an add of carried partitions) in
// memory and answers it: the acknowledged record that carried them
// holds them for a coordinator loading the log, so the leader appends at
// once, with no write on its path, and a coordinator deposed meanwhile
// changes nothing. A completer lingering for the producer's next
// request (completionLinger) is woken: the next transaction has begun,
// so no completion is written, and the markers of the producer's next
// end must not wait for the linger. e.mu is held and released here.
func (e *entry) applyQuiet(out Outcome) (Txn, int16) {
	e.txn = e.settledLocked(out.Next)
	e.wakeLingerLocked()
	e.mu.Unlock()
	return out.Next, out.Code
}

// writeEarly applies out, which adds partitions to e's ongoing
// transaction, in memory at once, queues its record, and answers once
// the record is in this broker's log: the producer's next requests
// (produce to the partitions added already, EndTxn) overlap its
// replication. e.mu is held and released here.
//
// The partitions added stay in e.undurable until a record holding them
// is acknowledged. A leader's verification of one of them waits for
// that (awaitDurable), so data reaches a partition only once the log
// holds it in the transaction, as when the answer waited. If the write
// fails, memory holds more than the log: the next record of the id (the
// verification asks for one, EndTxn writes one) holds all of it, and a
// new coordinator that read the log without it also refuses the
// partition's data (INVALID_TXN_STATE at the produce, an abortable
// error; the transaction it knows is aborted or committed without it,
// and no data of it is on that partition). Markers sent to a partition
// that had no data are harmless.
//
// untilDurable answers once the record is acknowledged instead: a
// partition leader's add (answerAhead), which appends next.
func (c *Coordinator) writeEarly(ctx context.Context, e *entry, p int32, out Outcome, untilDurable bool) (Txn, int16) {
	ongoing := e.txn.State == Ongoing // else the transaction begins ahead of the markers
	for _, tp := range out.Next.Partitions {
		if (!ongoing || !e.txn.Has(tp)) && !slices.Contains(e.undurable, tp) {
			e.undurable = append(e.undurable, tp)
		}
	}
	e.txn = e.settledLocked(out.Next)
	e.earlyWrites++
	q := c.enqueueSettled(p, &out.Next, func(err error) {
		e.mu.Lock()
		e.earlyWrites--
		if err == nil {
			e.durableLocked(out.Next)
		} else {
			c.logger.Warn("writing partitions added to a transaction failed; the next record holds them",
				"transactional_id", out.Next.ID, "err", err)
		}
		if e.settled != nil {
			close(e.settled)
			e.settled = nil
		}
		e.mu.Unlock()
	})
	e.mu.Unlock()
	wait := q.waitAppended
	if untilDurable {
		wait = q.wait
	}
	if err := wait(); err != nil {
		return Txn{}, writeCode(err)
	}
	if _, _, code := c.serves(out.Next.ID); code != 0 {
		return Txn{}, code // deposed meanwhile: the next coordinator reads the log
	}
	return out.Next, out.Code
}

// awaitDurable returns once every partition of tps in e's transaction is
// held by an acknowledged record of the id: it waits for the early writes
// in flight, and when one failed writes the current state again. false
// when that did not happen before ctx ended or the coordinator stopped
// serving the id.
func (c *Coordinator) awaitDurable(ctx context.Context, id string, e *entry, tps []TopicPartition) bool {
	for attempt := 0; ; attempt++ {
		e.mu.Lock()
		pending := slices.ContainsFunc(tps, func(tp TopicPartition) bool { return slices.Contains(e.undurable, tp) })
		if !pending {
			e.mu.Unlock()
			return true
		}
		if e.earlyWrites > 0 {
			if e.settled == nil {
				e.settled = make(chan struct{})
			}
			settled := e.settled
			e.mu.Unlock()
			select {
			case <-settled:
				continue
			case <-ctx.Done():
			case <-c.life.Closing():
			}
			return false
		}
		e.mu.Unlock()
		if attempt > 3 {
			return false
		}
		// The early write failed and no record followed: write the
		// state again.
		now := c.nowMs()
		if _, code := c.transition(ctx, id, false, func(t *Txn) Outcome { return t.Rewrite(now) }); code != 0 {
			return false
		}
	}
}

// lookup returns id's entry, creating an unwritten one when create.
func (c *Coordinator) lookup(id string, create bool) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.txns[id]
	if !ok && create {
		e = &entry{}
		c.mu.txns[id] = e
		ok = true
	}
	return e, ok
}

// forget removes e unless it is busy or was replaced.
func (c *Coordinator) forget(id string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.mu.txns[id] == e && !e.busy && (!e.written || e.txn.State == Dead) {
		delete(c.mu.txns, id)
	}
}

// syncStateWrites: state writes are fsynced before they are acknowledged
// only where no other broker holds a copy. On a cluster the topic's
// min.insync.replicas (transaction.state.log.min.isr, at least 2) means an
// acknowledged write is in the page cache of two brokers, which survives
// any one being killed, as Kafka relies on (it leaves flushing to
// log.flush.*): an fsync per state change cost up to 200 ms on a busy
// disk, several times per transaction.
func (c *Coordinator) syncStateWrites() bool {
	return !c.state.Clustered() || min(c.cfg.StateMinISR, int(c.cfg.StateReplicationFactor)) < 2
}

// InitProducerID serves InitProducerId for a transactional id: a new
// producer id for a new id, else the epoch bumped (fencing the previous
// producer, whose open transaction is aborted first: the caller is told
// CONCURRENT_TRANSACTIONS and retries). expected is KIP-360's current
// producer id and epoch (ID -1: none).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected ProducerIDAndEpoch) (int64, int16, int16) {
	if id == "" {
		return -1, -1, errInvalidRequest
	}
	if timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds() {
		return -1, -1, errInvalidTxnTimeout
	}
	now := c.nowMs()
	next, code := c.transition(ctx, id, true, func(t *Txn) Outcome {
		if t == nil {
			pid, err := c.newProducerID()
			if err != nil {
				return answer(errCoordinatorUnavailable)
			}
			return NewTxn(id, pid, timeoutMs, now).InitProducerID(timeoutMs, expected, now, c.newProducerID)
		}
		return t.InitProducerID(timeoutMs, expected, now, c.newProducerID)
	})
	if code != 0 {
		return -1, -1, code
	}
	return next.ProducerID, next.ProducerEpoch, 0
}

func (c *Coordinator) newProducerID() (int64, error) {
	pid, _, err := c.broker.InitProducerID(-1, -1)
	return pid, err
}

// AddPartitions serves AddPartitionsToTxn for a partition leader
// (transaction.version 2's add, v4 without verifyOnly), AddOffsetsToTxn
// (whose one partition is the group's __consumer_offsets partition) and
// the HTTP gateway's transactions: answered once the partitions are in
// an acknowledged record, as the caller appends to them next.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition) int16 {
	code := c.addPartitions(ctx, id, producerID, epoch, tps, false)
	if code == 0 {
		// Added already by the producer's early write, maybe not yet
		// acknowledged.
		if e, ok := c.lookup(id, false); ok && !c.awaitDurable(ctx, id, e, tps) {
			return errConcurrentTransactions
		}
	}
	return code
}

// AddLeaderPartitions is AddPartitions for a partition leader's add
// (transaction.version 2: Verifier.AddTxnPartition, AddPartitionsToTxn
// v4 without verifyOnly): an add for the producer's next transaction
// arriving while the previous one's markers are written is decided at
// once (writeAhead) rather than after them.
func (c *Coordinator) AddLeaderPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition) int16 {
	if id == "" {
		return errInvalidRequest
	}
	now := c.nowMs()
	_, code := c.transitionAnswering(ctx, id, false, answerAhead, func(t *Txn) Outcome {
		return t.AddPartitions(producerID, epoch, tps, now)
	})
	if code == 0 {
		if e, ok := c.lookup(id, false); ok && !c.awaitDurable(ctx, id, e, tps) {
			return errConcurrentTransactions
		}
	}
	return code
}

// AddProducerPartitions serves a producer's AddPartitionsToTxn (v0–v3):
// as AddPartitions, but partitions joining a transaction already ongoing
// are answered once their record is in this broker's log, before its
// replicas acknowledge it (writeEarly). The producer sends its data to
// them next, and their leaders' KIP-890 verification waits for that
// acknowledgement; the producer meanwhile goes on. The first partitions
// of a transaction wait for their record as before: a new coordinator
// that lost it would know no transaction for the producer to abort.
func (c *Coordinator) AddProducerPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition) int16 {
	return c.addPartitions(ctx, id, producerID, epoch, tps, true)
}

// addPartitions adds tps to id's transaction; early as transitionAnswering.
func (c *Coordinator) addPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition, early bool) int16 {
	if id == "" {
		return errInvalidRequest
	}
	now := c.nowMs()
	how := answerDurable
	if early {
		how = answerEarly
	}
	_, code := c.transitionAnswering(ctx, id, false, how, func(t *Txn) Outcome {
		return t.AddPartitions(producerID, epoch, tps, now)
	})
	return code
}

// VerifyPartitions answers AddPartitionsToTxn v4's verifyOnly batches
// (KIP-890): one code per partition, nothing written. A partition added
// by a record not yet acknowledged is answered once it is
// (awaitDurable), on the metadata as it is then; CONCURRENT_TRANSACTIONS,
// which the leader's producer retries, if that does not come before ctx
// ends.
func (c *Coordinator) VerifyPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition) []int16 {
	fill := func(code int16) []int16 {
		codes := make([]int16, len(tps))
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if _, _, code := c.serves(id); code != 0 {
		return fill(code)
	}
	e, ok := c.lookup(id, false)
	if !ok {
		return fill(errInvalidProducerMapping)
	}
	for {
		codes, undurable := verifyNow(e, producerID, epoch, tps)
		if len(undurable) == 0 {
			return codes
		}
		if !c.awaitDurable(ctx, id, e, undurable) {
			return fill(errConcurrentTransactions)
		}
		if _, _, code := c.serves(id); code != 0 {
			return fill(code)
		}
	}
}

// verifyNow is each partition's verification on e's metadata now, and
// the partitions it passes whose record is not yet acknowledged.
func verifyNow(e *entry, producerID int64, epoch int16, tps []TopicPartition) (codes []int16, undurable []TopicPartition) {
	codes = make([]int16, len(tps))
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, tp := range tps {
		if !e.written {
			codes[i] = errInvalidProducerMapping
			continue
		}
		codes[i] = e.txn.VerifyPartition(producerID, epoch, tp)
		if codes[i] == 0 && slices.Contains(e.undurable, tp) {
			undurable = append(undurable, tp)
		}
	}
	return codes, undurable
}

// VerifyTxnPartition implements server.TxnVerifier for an id this broker
// coordinates.
func (c *Coordinator) VerifyTxnPartition(ctx context.Context, id string, producerID int64, epoch int16, topic string, partition int32) int16 {
	return c.VerifyPartitions(ctx, id, producerID, epoch, []TopicPartition{{topic, partition}})[0]
}

// EndTxn serves EndTxn: the commit or abort is prepared and written, the
// caller answered, and the markers sent in the background; the id is
// CONCURRENT_TRANSACTIONS to its producer until every marker is written
// and the completion recorded. It needs no InitProducerId on the caller's
// connection: Flink resumes a transaction with its stored id and epoch.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool) int16 {
	if id == "" {
		return errInvalidRequest
	}
	now := c.nowMs()
	_, code := c.transition(ctx, id, false, func(t *Txn) Outcome {
		return t.EndTxn(producerID, epoch, commit, now)
	})
	return code
}

// EndTxnV2 serves EndTxn v5 (KIP-890 part 2): as EndTxn, with the
// epoch bumped by every end (Txn.EndTxnV2); it answers the producer id
// and epoch of the producer's next transaction.
func (c *Coordinator) EndTxnV2(ctx context.Context, id string, producerID int64, epoch int16, commit bool) (int64, int16, int16) {
	if id == "" {
		return -1, -1, errInvalidRequest
	}
	now := c.nowMs()
	next, code := c.transition(ctx, id, false, func(t *Txn) Outcome {
		return t.EndTxnV2(producerID, epoch, commit, now, c.newProducerID)
	})
	if code != 0 {
		return -1, -1, code
	}
	pid, e := next.ProducerAfterEnd()
	return pid, e, 0
}

// Describe is DescribeTransactions for one id: its state as this
// coordinator acts on it. A completed state loaded with carried
// partitions is described Ongoing with them since the load
// (begunCarried): the coordinator marks them at the next end, or aborts
// them once the timeout passes, so a hanging-transaction check must not
// take their data for a transaction the coordinator has forgotten.
func (c *Coordinator) Describe(id string) (Txn, int16) {
	if _, _, code := c.serves(id); code != 0 {
		return Txn{}, code
	}
	e, ok := c.lookup(id, false)
	if !ok {
		return Txn{}, errTransactionalIDNotFnd
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.written {
		return Txn{}, errTransactionalIDNotFnd
	}
	return e.txn.begunCarried(), 0
}

// ListFilter selects ListTransactions' answer; empty fields match all.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDuration (v1, KIP-994): only transactions open at least this long.
	MinDuration time.Duration
}

// List is ListTransactions: the ids this broker coordinates, filtered.
func (c *Coordinator) List(f ListFilter) []Txn {
	now := c.nowMs()
	var out []Txn
	for _, t := range c.Transactions() {
		if len(f.States) > 0 && !containsState(f.States, t.State) {
			continue
		}
		if len(f.ProducerIDs) > 0 && !containsID(f.ProducerIDs, t.ProducerID) {
			continue
		}
		if f.MinDuration > 0 && (t.State != Ongoing || t.StartMs < 0 || now-t.StartMs < f.MinDuration.Milliseconds()) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func containsState(ss []State, s State) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// HandleFindCoordinator answers FindCoordinator for transactional ids
// (key type 1), every version: the node id of each id's coordinator. The
// Kafka listener fills in the host and port of its own listener.
func (c *Coordinator) HandleFindCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, int16, string) {
		if key == "" {
			return -1, errInvalidRequest, "an empty transactional id has no coordinator"
		}
		id, err := c.CoordinatorOf(key)
		if err != nil {
			return -1, errCoordinatorUnavailable, err.Error()
		}
		return id, 0, ""
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			id, code, msg := find(key)
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.NodeID, rc.ErrorCode = key, id, code
			if code != 0 {
				rc.Port, rc.ErrorMessage = -1, &msg
			}
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp
	}
	id, code, msg := find(req.CoordinatorKey)
	resp.NodeID, resp.ErrorCode = id, code
	if code != 0 {
		resp.Port = -1
		if req.Version >= 1 {
			resp.ErrorMessage = &msg
		}
	}
	return resp
}
