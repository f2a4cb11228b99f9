package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// The partition leaders' side of transactions (txn.go is the contract with
// the coordinator): markers appended on request, KIP-890 verification of
// transactional produces, and the listeners told of durable markers. The
// rules themselves (open transactions, the LSO, the abort index) are the
// partition's (replication/transactions.go).

// The transaction rules' errors in the core.
var (
	ErrInvalidTxnState      = replication.ErrInvalidTxnState
	ErrTxnCoordinatorFenced = replication.ErrTxnCoordinatorFenced
	// ErrTxnOpen answers a probe (TxnMarker.Probe) of a partition where
	// the producer has a transaction open: CONCURRENT_TRANSACTIONS on the
	// wire (probeTxn).
	ErrTxnOpen = errors.New("the producer has a transaction open on the partition")
)

// TxnCodeError is a refusal whose Kafka error code another party decided:
// the coordinator's answer to a KIP-890 verification. KafkaCode returns
// Code.
type TxnCodeError struct {
	Code    int16
	Message string
}

func (e *TxnCodeError) Error() string { return e.Message }

// txnHooks are what the coordinator plugged into the broker.
type txnHooks struct {
	verifier atomic.Pointer[verifierBox]
	mu       sync.Mutex
	// listeners is copy-on-write under mu.
	listeners atomic.Pointer[[]TxnMarkerListener]
}

type verifierBox struct{ v TxnVerifier }

// SetTxnVerifier installs the coordinator's KIP-890 check (nil removes
// it: transactional batches are then appended unverified, as before
// KIP-890).
func (b *Broker) SetTxnVerifier(v TxnVerifier) {
	if v == nil {
		b.txn.verifier.Store(nil)
		return
	}
	b.txn.verifier.Store(&verifierBox{v})
}

// AddTxnMarkerListener adds l to those told of every marker this broker's
// leader replicas made durable (acks=all); TxnMarkerListener says in what
// order, and that a resent marker is told again.
func (b *Broker) AddTxnMarkerListener(l TxnMarkerListener) {
	b.txn.mu.Lock()
	defer b.txn.mu.Unlock()
	var next []TxnMarkerListener
	if cur := b.txn.listeners.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, l)
	b.txn.listeners.Store(&next)
}

// WriteTxnMarkers appends each marker on the partition this broker leads
// and waits until every in-sync replica has it (acks=all), then tells the
// marker listeners. It returns one error per marker (nil: written),
// mapped to Kafka's codes by KafkaCode: NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT,
// KAFKA_STORAGE_ERROR. Markers may go to internal topics
// (__consumer_offsets).
func (b *Broker) WriteTxnMarkers(ctx context.Context, markers []TxnMarker) []error {
	errs := make([]error, len(markers))
	appended := make([]Appended, 0, len(markers))
	which := make([]int, 0, len(markers))
	for i, m := range markers {
		if m.Probe {
			errs[i] = b.probeTxn(m)
			continue
		}
		a, err := b.appendTxnMarker(m)
		if err != nil {
			errs[i] = err
			continue
		}
		appended = append(appended, a)
		which = append(which, i)
	}
	acked := b.WaitAcks(ctx, appended, DefaultProduceTimeout)
	for k, i := range which {
		// A marker closed already (a resend that appended nothing) is
		// told too: its first copy's acks wait may have failed, telling
		// nobody, and this wait covered that copy. Its data epoch keeps
		// the listeners from deciding the next transaction with it,
		// whose data may be in the log by now.
		if errs[i] = acked[k]; errs[i] == nil {
			b.tellMarkerListeners(markers[i], appended[k].BaseOffset)
		}
	}
	return errs
}

// probeTxn answers m, a probe, as the partition's leader: ErrTxnOpen
// when the producer has a transaction open there. Only a leader answers:
// a follower's state may lag its leader's.
func (b *Broker) probeTxn(m TxnMarker) error {
	_, p, err := b.ledForMarker(m)
	if err != nil {
		return err
	}
	if p.ProbeTxn(m.ProducerID) {
		// The code by TxnCodeError: ErrTxnOpen is no core error a
		// CONCURRENT_TRANSACTIONS from elsewhere should be read as.
		return fmt.Errorf("%w: %w", ErrTxnOpen, &TxnCodeError{Code: KafkaConcurrentTransactions,
			Message: fmt.Sprintf("%s-%d, producer %d", m.Topic, m.Partition, m.ProducerID)})
	}
	return nil
}

// ledForMarker is m's partition, and its topic, when this broker leads it.
func (b *Broker) ledForMarker(m TxnMarker) (*topic, *replication.Replica, error) {
	t, err := b.lookup(m.Topic)
	if err != nil {
		return nil, nil, b.heldElsewhere(m.Topic, m.Partition, err)
	}
	p, err := t.partition(m.Partition)
	if err != nil {
		return nil, nil, err
	}
	if err := p.CheckLeading(); err != nil {
		return nil, nil, err // before the epoch checks: a follower's state may lag
	}
	return t, p, nil
}

func (b *Broker) appendTxnMarker(m TxnMarker) (Appended, error) {
	t, p, err := b.ledForMarker(m)
	if err != nil {
		return Appended{}, err
	}
	if err := checkReplicas(p, AcksAll); err != nil {
		return Appended{}, err
	}
	opts := storage.AppendOptions{Sync: t.settings.syncAppends, LogAppendTime: t.settings.logAppendTime}
	ends := replication.UnknownTxnEpoch
	if epoch, known := m.DataEpoch(); known {
		ends = epoch
	}
	res, _, err := p.AppendTxnMarkerEnding(m.ProducerID, m.ProducerEpoch, ends,
		recordbatch.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, opts)
	if err != nil {
		switch {
		case errors.Is(err, replication.ErrTxnMarkerEarly):
			// The coordinator sends it again once the earlier marker is in.
			err = fmt.Errorf("%w: %v", ErrNotEnoughReplicas, err)
		case !isProducerRuleError(err) && !errors.Is(err, ErrTxnCoordinatorFenced):
			err = appendError(m.Topic, m.Partition, err)
		}
		return Appended{}, err
	}
	// Closed already (nothing appended): res covers the log as it
	// stands, so the wait covers the marker's first copy.
	return Appended{AppendResult: res, partition: p, acks: AcksAll}, nil
}

func (b *Broker) tellMarkerListeners(m TxnMarker, offset int64) {
	ls := b.txn.listeners.Load()
	if ls == nil {
		return
	}
	dataEpoch, known := m.DataEpoch()
	for _, l := range *ls {
		l.TxnMarkerWritten(m.Topic, m.Partition, m.ProducerID, dataEpoch, known, m.Commit, offset)
	}
}

// producerBatch returns the header of an idempotent or transactional
// producer's batch. Such a request must hold exactly one batch; a
// transactional one needs a producer id.
func producerBatch(checked *records.Produced) (recordbatch.Header, bool, error) {
	if checked.Batches() == 0 {
		return recordbatch.Header{}, false, fmt.Errorf("%w: no record batch", ErrCorruptMessage)
	}
	h := checked.Header(0)
	if h.ProducerID < 0 {
		if h.IsTransactional() {
			return h, false, fmt.Errorf("%w: a transactional batch without a producer id", ErrInvalidRecord)
		}
		return h, false, nil
	}
	if checked.Batches() != 1 {
		return h, false, fmt.Errorf("%w: an idempotent producer sends one batch per partition", ErrInvalidRecord)
	}
	return h, true, nil
}

// verifyTxnBatch asks the coordinator, when the batch would open its
// producer's transaction here, whether this partition is in it (KIP-890
// part 1), or has it added (add: part 2), and returns the guard the
// append checks. Only the batch opening the transaction asks: the
// partition's producer state then holds it open under that producer id
// and epoch until its marker, which is the cache of the answer.
// The question ends when the partition stops being led here
// (askTxnCoordinator): waiting out the request instead held the
// transaction past its timeout, and the coordinator aborted it (the
// partition nemeses showed transactions fenced 17 s after they began
// where the leader moved in 7).
func (b *Broker) verifyTxnBatch(ctx context.Context, p *replication.Replica, h recordbatch.Header, transactionalID string, add bool, timeout time.Duration) (replication.TxnGuard, error) {
	need, guard := p.TxnVerification(h)
	if add {
		need, guard = p.TxnAddition(h)
	}
	box := b.txn.verifier.Load()
	if !need || box == nil && !add {
		return replication.TxnGuard{}, nil
	}
	if transactionalID == "" {
		return guard, fmt.Errorf("%w: a transactional batch without the request's transactional id", ErrInvalidTxnState)
	}
	var v TxnVerifier
	if box != nil {
		v = box.v
	}
	code, err := b.askTxnCoordinator(ctx, p, v, transactionalID, h.ProducerID, h.ProducerEpoch, add)
	if err != nil {
		return guard, err
	}
	if code == KafkaNone && add {
		// The coordinator may answer before the previous transaction's
		// marker is here (it writes the next transaction ahead of the
		// markers): the batch waits for it, then the guard is taken. A
		// marker ending this transaction before the append carries a
		// newer epoch (KIP-890 part 2), which fences the batch.
		if err := b.awaitTxnOrder(ctx, p, h.ProducerID, h.ProducerEpoch, timeout); err != nil {
			return guard, err
		}
		asked := guard
		_, guard = p.TxnAddition(h)
		guard = guard.AskedAt(asked)
	}
	if code != KafkaNone {
		return guard, &TxnCodeError{Code: produceCodeOfVerification(code, add), Message: fmt.Sprintf(
			"%s-%d is not in the ongoing transaction of %q (producer %d, epoch %d): the coordinator answered error %d",
			p.Topic(), p.Index(), transactionalID, h.ProducerID, h.ProducerEpoch, code)}
	}
	return guard, nil
}

// produceCodeOfVerification is the produce's error for the coordinator's
// answer to its KIP-890 check (add: part 2's addition), as Kafka's
// ReplicaManager translates it:
//   - PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH, by which clients
//     know a fenced producer on a produce; librdkafka takes PRODUCER_FENCED
//     there for an abortable error and lets the zombie go on to a new
//     transaction.
//   - The coordinator being away, loading, unreachable, or (before
//     transaction.version 2) busy is NOT_ENOUGH_REPLICAS: retriable, and
//     retried by every client, where producers written before KIP-890
//     need not retry the coordinator's codes on a produce, and it asks for
//     no metadata refresh. A version 2 producer knows
//     CONCURRENT_TRANSACTIONS on a produce.
func produceCodeOfVerification(code int16, add bool) int16 {
	switch code {
	case KafkaProducerFenced:
		return KafkaInvalidProducerEpoch
	case KafkaNetworkException, KafkaCoordinatorLoadInProgress, KafkaCoordinatorNotAvailable, KafkaNotCoordinator:
		return KafkaNotEnoughReplicas
	case KafkaConcurrentTransactions:
		if !add {
			return KafkaNotEnoughReplicas
		}
	}
	return code
}

// awaitTxnOrder waits, as p's leader, until a batch of the producer at
// producerEpoch may open its transaction in log order
// (Replica.AwaitTxnOrder): at most timeout (the produce's), then
// NOT_ENOUGH_REPLICAS, which every producer retries without a metadata
// refresh, as for the coordinator's other transient answers
// (produceCodeOfVerification; the coordinator keeps sending the marker);
// NOT_LEADER_OR_FOLLOWER once p is led elsewhere.
func (b *Broker) awaitTxnOrder(ctx context.Context, p *replication.Replica, producerID int64, producerEpoch int16, timeout time.Duration) error {
	ctx, stop := b.whileLeading(ctx, p)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := p.AwaitTxnOrder(ctx, producerID, producerEpoch)
	if lerr := p.CheckLeading(); lerr != nil {
		return lerr
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotEnoughReplicas, err)
	}
	return nil
}

// whileLeading is ctx, ended also when p stops being led here: the
// purgatory hears it (a fence, a new role, a deletion) as Gone. Call stop
// when done. Register before checking the leadership, so that a change in
// between is not missed.
func (b *Broker) whileLeading(ctx context.Context, p *replication.Replica) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	gone := delayed.NewProduce([]delayed.Wait{{Key: delayed.Key{Topic: p.Topic(), Partition: p.Index()}, Offset: math.MaxInt64}})
	b.waiters.Register(gone, leadershipWatchBound, b.waitState)
	go func() {
		select {
		case <-gone.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { b.waiters.Cancel(gone); cancel() }
}

// askTxnCoordinator asks v whether p is in the producer's ongoing
// transaction (KIP-890 part 1), or, with add, to add it there (part 2),
// on p's behalf as its leader: for a produce, and for the group
// coordinator's TxnOffsetCommit of its __consumer_offsets partition. The
// coordinator is usually another broker, and the leader least able to
// reach it is one cut off from the cluster, which is losing p: the
// question is abandoned as soon as p stops being led here, and the error
// is then p's (NOT_LEADER_OR_FOLLOWER), whatever the coordinator said, so
// the client goes to the new leader before its transaction times out.
func (b *Broker) askTxnCoordinator(ctx context.Context, p *replication.Replica, v TxnVerifier, transactionalID string,
	producerID int64, producerEpoch int16, add bool) (int16, error) {
	ctx, stop := b.whileLeading(ctx, p)
	defer stop()
	if err := p.CheckLeading(); err != nil {
		return 0, err
	}
	var code int16
	if adder, ok := v.(TxnPartitionAdder); add && ok {
		code = adder.AddTxnPartition(ctx, transactionalID, producerID, producerEpoch, p.Topic(), p.Index())
	} else if add {
		return 0, fmt.Errorf("%w: no transaction coordinator adds partitions on this broker (transaction.version 2)", ErrInvalidTxnState)
	} else {
		code = v.VerifyTxnPartition(ctx, transactionalID, producerID, producerEpoch, p.Topic(), p.Index())
	}
	if err := p.CheckLeading(); err != nil {
		return 0, err
	}
	return code, nil
}

// AskTxnCoordinator is askTxnCoordinator for topic-partition as this
// broker leads it: the group coordinator's check (or, add, KIP-890 part
// 2's addition) of a TxnOffsetCommit's __consumer_offsets partition.
func (b *Broker) AskTxnCoordinator(ctx context.Context, v TxnVerifier, topic string, partition int32, transactionalID string,
	producerID int64, producerEpoch int16, add bool) (int16, error) {
	p, err := b.partition(topic, partition)
	if err != nil {
		return 0, err
	}
	code, err := b.askTxnCoordinator(ctx, p, v, transactionalID, producerID, producerEpoch, add)
	if err != nil || code != KafkaNone || !add {
		return code, err
	}
	// As a produce's (verifyTxnBatch): the add may be answered before
	// the previous transaction's marker is in this partition.
	return code, b.awaitTxnOrder(ctx, p, producerID, producerEpoch, DefaultProduceTimeout)
}

// leadershipWatchBound bounds a whileLeading watch whose caller forgot to
// stop it; callers stop it long before.
const leadershipWatchBound = 10 * time.Minute
