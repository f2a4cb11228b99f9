package txn

import (
	"context"
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
	deadline := time.Now().Add(c.concurrentWait)
	for {
		t, code := c.transitionOnce(ctx, id, create, decide)
		if code != errConcurrentTransactions {
			return t, code
		}
		e, ok := c.lookup(id, false)
		if !ok {
			return t, code
		}
		e.mu.Lock()
		if !e.busy && !e.completing {
			e.mu.Unlock()
			return t, code
		}
		if e.completing && !e.markersDone && !e.busy {
			pr := &parkedRequest{decide: decide, done: make(chan parkedAnswer, 1)}
			e.parked = append(e.parked, pr)
			if e.onPark != nil {
				close(e.onPark)
				e.onPark = nil
			}
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
func (c *Coordinator) transitionOnce(ctx context.Context, id string, create bool, decide func(t *Txn) Outcome) (Txn, int16) {
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
	if !out.Write {
		cur := e.txn
		e.mu.Unlock()
		if !e.written {
			c.forget(id, e)
		}
		return cur, out.Code
	}
	e.busy = true
	e.mu.Unlock()

	err := c.write(ctx, p, &out.Next)

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
	e.txn, e.written = out.Next, true
	startMarkers := out.Markers && !e.completing
	if startMarkers {
		e.completing = true
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

// AddPartitions serves AddPartitionsToTxn (and AddOffsetsToTxn, whose one
// partition is the group's __consumer_offsets partition).
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition) int16 {
	if id == "" {
		return errInvalidRequest
	}
	now := c.nowMs()
	_, code := c.transition(ctx, id, false, func(t *Txn) Outcome {
		return t.AddPartitions(producerID, epoch, tps, now)
	})
	return code
}

// VerifyPartitions answers AddPartitionsToTxn v4's verifyOnly batches
// (KIP-890): one code per partition, nothing written.
func (c *Coordinator) VerifyPartitions(id string, producerID int64, epoch int16, tps []TopicPartition) []int16 {
	codes := make([]int16, len(tps))
	fill := func(code int16) []int16 {
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.written {
		return fill(errInvalidProducerMapping)
	}
	for i, tp := range tps {
		codes[i] = e.txn.VerifyPartition(producerID, epoch, tp)
	}
	return codes
}

// VerifyTxnPartition implements server.TxnVerifier for an id this broker
// coordinates.
func (c *Coordinator) VerifyTxnPartition(_ context.Context, id string, producerID int64, epoch int16, topic string, partition int32) int16 {
	return c.VerifyPartitions(id, producerID, epoch, []TopicPartition{{topic, partition}})[0]
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

// Describe is DescribeTransactions for one id.
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
	return e.txn, 0
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
