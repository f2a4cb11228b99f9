package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
)

// MarkerWriter writes commit and abort markers, one error per marker (nil:
// durable on the partition's in-sync replicas). *server.Broker's
// WriteTxnMarkers is the local one; ClusterMarkers sends the others'.
type MarkerWriter interface {
	WriteTxnMarkers(ctx context.Context, markers []server.TxnMarker) []error
}

// ErrPartitionGone: the marker's partition no longer exists (its topic was
// deleted); the coordinator drops the marker, as Kafka does.
var ErrPartitionGone = errors.New("txn: the partition no longer exists")

// errNoAnswer stands for a marker or probe its writer answered nothing for.
var errNoAnswer = errors.New("no answer for the marker")

// fencedMarker: a partition leader has seen a newer coordinator epoch or
// producer epoch (TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH,
// from a remote leader or the core's own errors); this coordinator stops
// sending, as Kafka's does: a newer coordinator completes the transaction.
func fencedMarker(err error) bool {
	code := server.KafkaCode(err)
	return errors.Is(err, kerr.TransactionCoordinatorFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		code == kerr.TransactionCoordinatorFenced.Code || code == kerr.InvalidProducerEpoch.Code
}

// startCompletion sends t's markers, then records its completion. It runs
// while this broker leads p; a later leader completes what it leaves.
// Requests parked meanwhile are decided with the completion (complete);
// when they prepare another commit or abort, its markers follow in the
// same goroutine.
//
// A state with Pending markers (the previous transaction's, which the
// next one began ahead of) has them written first: the next
// transaction's own markers must not reach a partition before them.
func (c *Coordinator) startCompletion(e *entry, t Txn, p, coordinatorEpoch int32, term uint64) {
	c.life.Go(func() {
		if pm := t.Pending; pm != nil {
			if !c.sendMarkers(t.ID, pendingMarkers(pm, coordinatorEpoch), p, term) {
				c.endCompletion(e, t)
				return
			}
			e.mu.Lock()
			e.markersWrittenLocked(pendingKey(pm))
			e.mu.Unlock()
		}
		for t.State == PrepareCommit || t.State == PrepareAbort {
			if !c.sendMarkers(t.ID, preparedMarkers(&t, coordinatorEpoch), p, term) {
				break
			}
			next, again := c.complete(e, t, p, term)
			if !again {
				break
			}
			t = next
		}
		c.endCompletion(e, t)
	})
}

// endCompletion clears e's completion of t; requests still parked go
// through transition again. A transaction prepared after t was completed
// but before this ran (its markers were not started, as t's completion
// held e) gets its own completion now.
func (c *Coordinator) endCompletion(e *entry, t Txn) {
	if c.endingCompletion != nil {
		c.endingCompletion()
	}
	e.mu.Lock()
	parked := e.parked
	e.parked, e.markersDone = nil, false
	cur := e.txn
	next := (cur.State == PrepareCommit || cur.State == PrepareAbort) && (e.preparedLate || !sameTransaction(&cur, &t))
	e.preparedLate = false
	e.completing = next
	e.notifyLocked()
	e.mu.Unlock()
	for _, pr := range parked {
		pr.done <- parkedAnswer{retry: true}
	}
	if !next {
		return
	}
	if p, epoch, code := c.serves(cur.ID); code == 0 {
		c.startCompletion(e, cur, p, epoch, c.termOf(p))
		return
	}
	e.mu.Lock()
	e.completing = false // the next coordinator completes it
	e.notifyLocked()
	e.mu.Unlock()
}

// complete records t's completion once its markers are written: with the
// parked requests' decisions in one record when there are any, else as
// CompleteCommit or CompleteAbort alone (recordCompletion). It returns
// the metadata written and whether it is another prepared transaction
// whose markers are due.
func (c *Coordinator) complete(e *entry, t Txn, p int32, term uint64) (Txn, bool) {
	if !c.movedOn(e, &t) {
		c.awaitNextRequest(e)
	}
	e.mu.Lock()
	e.markersDone = true
	// A leader's add may have begun the next transaction ahead of them
	// (writeAhead): its state holds them pending until now.
	e.markersWrittenLocked(preparedKey(&t))
	parked := e.parked
	e.parked = nil
	if len(parked) == 0 || e.busy || !sameTransaction(&e.txn, &t) {
		movedOn := !e.busy && !sameTransaction(&e.txn, &t)
		e.mu.Unlock()
		for _, pr := range parked {
			pr.done <- parkedAnswer{retry: true}
		}
		if !movedOn {
			c.recordCompletion(t, p, term)
		}
		return Txn{}, false
	}
	decisions := make([]Decision, len(parked))
	for i, pr := range parked {
		decisions[i] = pr.decide
	}
	out, answers := e.txn.CompleteThen(c.nowMs(), decisions)
	q := c.enqueue(p, &out.Next)
	e.busy = true
	e.mu.Unlock()

	err := q.wait()

	e.mu.Lock()
	e.busy = false
	e.notifyLocked()
	if err == nil {
		e.durableLocked(out.Next)
	}
	code := int16(0)
	switch {
	case err != nil:
		code = writeCode(err)
		c.logger.Warn("writing a transaction's completion with the requests that waited for it failed",
			"transactional_id", t.ID, "err", err)
	case !c.leads(p, term):
		code = errNotCoordinator // deposed while writing: the next coordinator reads the log
	}
	if code != 0 {
		e.mu.Unlock()
		for _, pr := range parked {
			pr.done <- parkedAnswer{code: code}
		}
		c.recordCompletion(t, p, term)
		return Txn{}, false
	}
	e.txn = e.settledLocked(out.Next)
	// Requests arriving from now on park for the markers of the next
	// prepared transaction, if the decisions prepared one.
	e.markersDone = !out.Markers
	e.mu.Unlock()
	for i, pr := range parked {
		pr.done <- parkedAnswer{txn: answers[i].Next, code: answers[i].Code}
	}
	return out.Next, out.Markers
}

// movedOn reports whether e's state is no longer the prepared t, and no
// write that could leave it so is in flight: the next transaction's
// record (writeAhead) completed t, so no completion is written and no
// request is waited for.
func (c *Coordinator) movedOn(e *entry, t *Txn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.busy && !sameTransaction(&e.txn, t)
}

// completionLinger is how long a completion whose markers are written
// waits for its producer's next request before it is written alone: a
// producer committing transactions one after another sends its next
// AddPartitionsToTxn a fraction of a millisecond after EndTxn is
// answered, often just after the markers are written, and the completion
// then shares its write. Only the coordinator's own record waits: the
// markers, which decide what readers see, are written already.
const completionLinger = 5 * time.Millisecond

// awaitNextRequest waits, when no request is parked on e, for one to park
// or for completionLinger.
func (c *Coordinator) awaitNextRequest(e *entry) {
	e.mu.Lock()
	if len(e.parked) > 0 || e.busy {
		e.mu.Unlock()
		return
	}
	parked := make(chan struct{})
	e.onPark = parked
	e.mu.Unlock()
	timer := time.NewTimer(completionLinger)
	select {
	case <-parked:
	case <-timer.C:
	case <-c.life.Closing():
	}
	timer.Stop()
	e.mu.Lock()
	e.onPark = nil
	e.mu.Unlock()
}

// sameTransaction: cur is still the prepared transaction t (no other
// transition replaced it).
func sameTransaction(cur, t *Txn) bool {
	return cur.State == t.State && cur.ProducerID == t.ProducerID && cur.ProducerEpoch == t.ProducerEpoch
}

// leads: this broker serves partition p now, in the same term.
func (c *Coordinator) leads(p int32, term uint64) bool {
	return term != 0 && c.own.Serving(p, term)
}

// termOf is the term this broker serves p in (0: it does not).
func (c *Coordinator) termOf(p int32) uint64 {
	if op, ok := c.own.Get(p); ok && op.State == ownership.Serving {
		return op.Term
	}
	return 0
}

// preparedMarkers are the prepared t's markers, saying the epoch of the
// data they end when it is known (Txn.MarkersTxnEpoch).
func preparedMarkers(t *Txn, coordinatorEpoch int32) []server.TxnMarker {
	txnEpoch, known := t.MarkersTxnEpoch()
	out := make([]server.TxnMarker, 0, len(t.Partitions))
	for _, tp := range t.Partitions {
		out = append(out, server.TxnMarker{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
			Commit: t.State == PrepareCommit, CoordinatorEpoch: coordinatorEpoch, Topic: tp.Topic, Partition: tp.Partition,
			TxnEpoch: txnEpoch, HasTxnEpoch: known})
	}
	return out
}

// pendingMarkers are pm's markers, sent with this coordinator's epoch
// (at least the one that decided them).
func pendingMarkers(pm *PendingMarkers, coordinatorEpoch int32) []server.TxnMarker {
	out := make([]server.TxnMarker, 0, len(pm.Partitions))
	for _, tp := range pm.Partitions {
		out = append(out, server.TxnMarker{ProducerID: pm.ProducerID, ProducerEpoch: pm.ProducerEpoch,
			Commit: pm.Commit, CoordinatorEpoch: max(coordinatorEpoch, pm.CoordinatorEpoch), Topic: tp.Topic, Partition: tp.Partition,
			TxnEpoch: pm.TxnEpoch, HasTxnEpoch: true})
	}
	return out
}

// sendMarkers writes the markers of id until each is written or its
// partition is gone; false when this broker stopped coordinating first.
func (c *Coordinator) sendMarkers(id string, pending []server.TxnMarker, p int32, term uint64) bool {
	for attempt := 0; len(pending) > 0; attempt++ {
		if c.closed() || !c.leads(p, term) {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs := c.cfg.Markers.WriteTxnMarkers(ctx, pending)
		cancel()
		var retry []server.TxnMarker
		for i, m := range pending {
			var err error
			if i < len(errs) {
				err = errs[i]
			} else {
				err = errNoAnswer
			}
			switch {
			case err == nil:
			case errors.Is(err, ErrPartitionGone):
				c.logger.Info("dropped the marker of a deleted partition", "transactional_id", id, "topic", m.Topic, "partition", m.Partition)
			case fencedMarker(err):
				c.logger.Error("a partition leader fenced this coordinator's marker; the transaction stays prepared until a newer coordinator completes it",
					"transactional_id", id, "topic", m.Topic, "partition", m.Partition, "err", err)
				return false
			default:
				if attempt%50 == 0 {
					c.logger.Warn("writing a transaction marker failed; retrying", "transactional_id", id,
						"topic", m.Topic, "partition", m.Partition, "attempt", attempt, "err", err)
				}
				retry = append(retry, m)
			}
		}
		pending = retry
		if len(pending) > 0 && !c.sleep(c.cfg.MarkerRetryBackoff) {
			return false
		}
	}
	return true
}

// recordCompletion writes CompleteCommit or CompleteAbort after the
// markers, retried while this broker leads p.
func (c *Coordinator) recordCompletion(t Txn, p int32, term uint64) {
	for attempt := 0; ; attempt++ {
		now := c.nowMs()
		_, code := c.transition(context.Background(), t.ID, false, func(cur *Txn) Outcome {
			if !sameTransaction(cur, &t) {
				return answer(0) // completed already
			}
			return cur.CompleteIdle(now)
		})
		switch {
		case code == 0:
			return
		case code == errNotCoordinator || c.closed() || !c.leads(p, term):
			return
		}
		if attempt%50 == 0 {
			c.logger.Warn("recording a transaction's completion failed; retrying", "transactional_id", t.ID, "code", code)
		}
		if !c.sleep(c.cfg.MarkerRetryBackoff) {
			return
		}
	}
}

func (c *Coordinator) sleep(d time.Duration) bool {
	select {
	case <-c.life.Closing():
		return false
	case <-time.After(d):
		return true
	}
}

// PeerRequester sends a request to another broker of the cluster
// (forward.Forwarder.Request).
type PeerRequester interface {
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// ClusterMarkers is the coordinator's MarkerWriter on a node: markers of
// partitions this broker leads go to Local, the others' as one
// WriteTxnMarkers request (key 27) per leader through Peers. A marker
// whose leader is unknown or moved fails, and the coordinator sends it
// again (to the leader it finds then).
type ClusterMarkers struct {
	Broker *server.Broker
	// Local writes markers to partitions led here (*server.Broker).
	Local MarkerWriter
	// Peers reaches other brokers; nil on a single node.
	Peers PeerRequester

	mu sync.Mutex
	// toLeader coalesces the markers of transactions completing at once
	// into one request per leader (remoteQueue).
	toLeader map[int32]*remoteQueue
	// closing, ended by Close (stop), ends the requests in flight and
	// refuses new ones; drains counts the drain goroutines, which Close
	// waits for.
	closing context.Context
	stop    context.CancelFunc
	drains  sync.WaitGroup
}

// errMarkersClosed: the coordinator is closing; its completers stop.
var errMarkersClosed = errors.New("txn: the marker writer is closed")

// Close ends the requests to other leaders in flight, refuses new ones,
// and returns once no drain goroutine runs: a leader that does not
// answer holds a request up to its 30 s timeout, which a broker shutting
// down does not wait out. The Coordinator closes its Markers.
func (m *ClusterMarkers) Close() {
	m.mu.Lock()
	m.closingLocked()
	m.stop()
	m.mu.Unlock()
	m.drains.Wait()
}

// closingLocked is the context Close cancels; m.mu is held.
func (m *ClusterMarkers) closingLocked() context.Context {
	if m.closing == nil {
		m.closing, m.stop = context.WithCancel(context.Background())
	}
	return m.closing
}

// remoteQueue holds the markers for one leader waiting for the request
// in flight to it. A leader serves a connection's requests one at a time
// and waits for the in-sync replicas before answering WriteTxnMarkers,
// so with many producers one request per transaction made each
// transaction's markers wait for the others' (and the producer's next
// transaction's data waits at the partition for its marker); the markers
// queued meanwhile go together in the next request, whose replicated
// writes are waited for at once (Kafka's TransactionMarkerChannelManager
// drains its queue per broker the same way).
type remoteQueue struct {
	calls    []*markerCall
	inFlight bool
}

// markerCall is one caller's markers and where their errors go.
type markerCall struct {
	markers []server.TxnMarker
	done    chan []error
}

// WriteTxnMarkers implements MarkerWriter.
func (m *ClusterMarkers) WriteTxnMarkers(ctx context.Context, markers []server.TxnMarker) []error {
	errs := make([]error, len(markers))
	view, clustered := m.Broker.Cluster()
	clustered = clustered && m.Broker.Config().AwaitRoles
	self := m.Broker.BrokerID()
	byLeader := map[int32][]int{}
	for i, mk := range markers {
		leader := self
		if clustered {
			pv, ok := view.Partition(mk.Topic, mk.Partition)
			switch {
			case !ok && view.PartitionCount(mk.Topic) == 0:
				errs[i] = fmt.Errorf("%w: %s-%d", ErrPartitionGone, mk.Topic, mk.Partition)
				continue
			case !ok || pv.Leader < 0:
				errs[i] = fmt.Errorf("%s-%d has no leader", mk.Topic, mk.Partition)
				continue
			}
			leader = pv.Leader
		} else if n, err := m.Broker.PartitionCount(mk.Topic); err != nil || mk.Partition >= n {
			errs[i] = fmt.Errorf("%w: %s-%d", ErrPartitionGone, mk.Topic, mk.Partition)
			continue
		}
		byLeader[leader] = append(byLeader[leader], i)
	}
	// One request per leader, all at once: the transaction completes when
	// the slowest leader has its markers, not after the sum of them.
	var wg sync.WaitGroup
	for leader, idx := range byLeader {
		wg.Go(func() {
			batch := make([]server.TxnMarker, len(idx))
			for j, i := range idx {
				batch[j] = markers[i]
			}
			var got []error
			if leader == self || m.Peers == nil {
				got = m.Local.WriteTxnMarkers(ctx, batch)
			} else {
				got = m.sendRemote(ctx, leader, batch)
			}
			for j, i := range idx { // each goroutine fills its own indexes
				if j < len(got) {
					errs[i] = got[j]
				} else {
					errs[i] = errNoAnswer
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// sendRemote writes batch on leader, in the next request to it
// (remoteQueue), and returns one error per marker.
func (m *ClusterMarkers) sendRemote(ctx context.Context, leader int32, batch []server.TxnMarker) []error {
	call := &markerCall{markers: batch, done: make(chan []error, 1)}
	m.mu.Lock()
	closing := m.closingLocked()
	if closing.Err() != nil {
		m.mu.Unlock()
		return brokerErrors(leader, len(batch), errMarkersClosed)
	}
	if m.toLeader == nil {
		m.toLeader = map[int32]*remoteQueue{}
	}
	q := m.toLeader[leader]
	if q == nil {
		q = &remoteQueue{}
		m.toLeader[leader] = q
	}
	q.calls = append(q.calls, call)
	start := !q.inFlight
	q.inFlight = true
	if start {
		m.drains.Add(1)
	}
	m.mu.Unlock()
	if start {
		go m.drain(closing, leader, q)
	}
	select {
	case errs := <-call.done:
		return errs
	case <-ctx.Done():
	}
	// Withdrawn unless a request holds them already: markers sent after
	// the caller gave up could reach a partition after the ones it sends
	// next. A request in flight is waited for (drain bounds it).
	m.mu.Lock()
	for i, c := range q.calls {
		if c == call {
			q.calls = slices.Delete(q.calls, i, i+1)
			m.mu.Unlock()
			return brokerErrors(leader, len(batch), ctx.Err())
		}
	}
	m.mu.Unlock()
	return <-call.done
}

// drain sends q's markers to leader, one request at a time, until none
// are queued. Two markers of one producer and partition never share a
// request (their answers could not be told apart), and none overtakes
// another queued before it: a call holding a producer and partition
// that an earlier call holds waits for the next request, and so does
// every later call that shares one of its own.
func (m *ClusterMarkers) drain(closing context.Context, leader int32, q *remoteQueue) {
	defer m.drains.Done()
	for {
		m.mu.Lock()
		var take, keep []*markerCall
		seen := map[markerKey]bool{}
		for _, c := range q.calls {
			blocked := slices.ContainsFunc(c.markers, func(mk server.TxnMarker) bool { return seen[keyOfMarker(mk)] })
			for _, mk := range c.markers {
				seen[keyOfMarker(mk)] = true
			}
			if blocked {
				keep = append(keep, c)
			} else {
				take = append(take, c)
			}
		}
		q.calls = keep
		if len(take) == 0 {
			q.inFlight = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		var all []server.TxnMarker
		for _, c := range take {
			all = append(all, c.markers...)
		}
		ctx, cancel := context.WithTimeout(closing, 30*time.Second)
		errs := m.requestMarkers(ctx, leader, all)
		cancel()
		for _, c := range take {
			c.done <- errs[:len(c.markers)]
			errs = errs[len(c.markers):]
		}
	}
}

// brokerErrors is err, naming leader, for each of n markers.
func brokerErrors(leader int32, n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("broker %d: %w", leader, err)
	}
	return errs
}

// markerKey names a marker's producer and partition in one request's answer.
type markerKey struct {
	pid   int64
	topic string
	part  int32
}

func keyOfMarker(mk server.TxnMarker) markerKey {
	return markerKey{mk.ProducerID, mk.Topic, mk.Partition}
}

// requestMarkers sends one WriteTxnMarkers request to leader and reads
// one error per marker from its answer.
func (m *ClusterMarkers) requestMarkers(ctx context.Context, leader int32, batch []server.TxnMarker) []error {
	kresp, err := m.Peers.Request(ctx, leader, MarkersRequest(batch))
	if err != nil {
		return brokerErrors(leader, len(batch), err)
	}
	errs := make([]error, len(batch))
	codes := map[markerKey]int16{}
	for _, rm := range kresp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				codes[markerKey{rm.ProducerID, rt.Topic, rp.Partition}] = rp.ErrorCode
			}
		}
	}
	for i, mk := range batch {
		code, ok := codes[keyOfMarker(mk)]
		switch {
		case !ok:
			errs[i] = fmt.Errorf("broker %d did not answer for %s-%d", leader, mk.Topic, mk.Partition)
		case code != 0:
			errs[i] = fmt.Errorf("broker %d, %s-%d: %w", leader, mk.Topic, mk.Partition, kerr.ErrorForCode(code))
		}
	}
	return errs
}

// MarkersRequest groups markers into one WriteTxnMarkers request: one
// entry per producer and outcome, its partitions by topic.
func MarkersRequest(markers []server.TxnMarker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	type group struct {
		pid         int64
		epoch       int16
		commit      bool
		coord       int32
		txnEpoch    int16
		hasTxnEpoch bool
		probe       bool
	}
	at := map[group]int{}
	for _, mk := range markers {
		g := group{mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch, mk.TxnEpoch, mk.HasTxnEpoch, mk.Probe}
		i, ok := at[g]
		if !ok {
			rm := kmsg.NewWriteTxnMarkersRequestMarker()
			rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = g.pid, g.epoch, g.commit, g.coord
			if g.hasTxnEpoch {
				rm.UnknownTags.Set(server.TxnEpochTag, server.EncodeTxnEpochTag(g.txnEpoch))
			}
			if g.probe {
				rm.UnknownTags.Set(server.TxnProbeTag, []byte{})
			}
			req.Markers = append(req.Markers, rm)
			i = len(req.Markers) - 1
			at[g] = i
		}
		rm := &req.Markers[i]
		j := len(rm.Topics) - 1
		if j < 0 || rm.Topics[j].Topic != mk.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = mk.Topic
			rm.Topics = append(rm.Topics, rt)
			j++
		}
		rm.Topics[j].Partitions = append(rm.Topics[j].Partitions, mk.Partition)
	}
	return req
}
