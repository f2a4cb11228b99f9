package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// Transactor writes the HTTP gateway's all-or-nothing batches (POST
// /kafka, docs/http-transactions.md): each request is one Kafka
// transaction of one of a pool of transactional ids, run in this process
// as a transactional producer would run it over the wire. It asks the
// id's coordinator for a producer id (InitProducerId), adds the request's
// partitions (AddPartitionsToTxn), appends one batch per partition with
// the producer's id, epoch and sequence and the transactional attribute,
// and ends the transaction (EndTxn): commit when every batch was
// acknowledged by its in-sync replicas, abort otherwise. A coordinator or
// a leader on this broker is called directly (the Coordinator's methods,
// Broker.AppendBatch, which applies KIP-890's verification, the sequence
// rules and the last stable offset as for any producer); one on another
// broker gets the same Kafka request through Peers. Nothing goes through
// this broker's own Kafka listener.
//
// A pooled producer runs one transaction at a time. Its transactional id
// (IDPrefix-N) outlives the process, so a restarted broker's first
// InitProducerId for it bumps the epoch and aborts the transaction the
// previous process left open (fencing its old epoch); a transaction this
// broker abandons otherwise is aborted by the coordinator after Timeout.
// After an abort, or any outcome it cannot be sure of, the producer asks
// for a new epoch before its next transaction, which starts every
// partition's sequence afresh.
type Transactor struct {
	cfg  TransactorConfig
	free chan *txnProducer
}

// TransactorConfig describes the pool.
type TransactorConfig struct {
	// Broker appends to the partitions this broker leads. Required.
	Broker *server.Broker
	// Coordinator is this broker's transaction coordinator. Required.
	Coordinator *Coordinator
	// Peers reaches other brokers (forward.Forwarder): a coordinator or a
	// partition leader elsewhere. Nil on a single node.
	Peers PeerRequester
	// IDPrefix names the transactional ids; unique per broker (e.g.
	// "__ferry-http-<broker id>") and the same across restarts.
	IDPrefix string
	// Size is the number of producers, the transactions in flight at
	// once. Default 4.
	Size int
	// Timeout is each transaction's transaction.timeout.ms: the
	// coordinator aborts a transaction this broker left open (it died
	// mid-request) after it. Default 60 s.
	Timeout time.Duration
	// RequestTimeout bounds one request, from InitProducerId to the
	// commit; a partition whose leader is gone makes it abort rather
	// than wait. Default 30 s.
	RequestTimeout time.Duration
	// LeaderWait bounds how long a request waits for a partition without
	// a live leader (an election) before it aborts. Default 5 s.
	LeaderWait time.Duration
	Logger     *slog.Logger
}

// txnProducer is one pooled transactional id and what a producer keeps
// about it; owned by whoever took it from the pool.
type txnProducer struct {
	id    string
	pid   int64 // -1: ask for an epoch before the next transaction
	epoch int16
	// next is each partition's next sequence in this epoch.
	next    map[TopicPartition]int32
	builder records.Builder
}

// NewTransactor builds the pool; each producer asks for its producer id
// when first used.
func NewTransactor(cfg TransactorConfig) (*Transactor, error) {
	if cfg.Broker == nil || cfg.Coordinator == nil {
		return nil, errors.New("txn: a transactor needs the broker and its coordinator")
	}
	if cfg.IDPrefix == "" {
		return nil, errors.New("txn: a transactor needs a transactional id prefix")
	}
	if cfg.Size <= 0 {
		cfg.Size = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "http-transactions")
	t := &Transactor{cfg: cfg, free: make(chan *txnProducer, cfg.Size)}
	for i := range cfg.Size {
		t.free <- &txnProducer{id: fmt.Sprintf("%s-%d", cfg.IDPrefix, i), pid: -1}
	}
	return t, nil
}

// txnPartition is one partition's share of a request.
type txnPartition struct {
	tp      TopicPartition
	indexes []int // the request's records, in order
	seq     int32
	batch   []byte
	base    int64 // the first record's offset once appended
}

// Transact writes recs as one transaction and returns each record's
// offset, in request order. On any failure the transaction is aborted and
// the error wraps server.ErrTransactionAborted and the failure's core
// error (ErrLeaderNotAvailable, ErrRecordTooLarge, ...). An error that
// wraps ErrRequestTimedOut instead leaves the outcome unknown (the commit
// was asked for and not confirmed).
func (t *Transactor) Transact(ctx context.Context, recs []server.TopicRecord) ([]server.TopicOffset, error) {
	var p *txnProducer
	select {
	case p = <-t.free:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: every transactional producer of this gateway is busy", server.ErrRequestTimedOut)
	}
	defer func() { t.free <- p }()
	rctx, cancel := context.WithTimeout(ctx, t.cfg.RequestTimeout)
	defer cancel()
	if p.pid < 0 {
		if err := t.initProducer(rctx, p); err != nil {
			return nil, fmt.Errorf("%w: begin: %w", server.ErrLeaderNotAvailable, err)
		}
	}
	parts, err := t.begin(rctx, p, recs)
	if err != nil {
		return nil, err
	}
	if err := t.appendAll(rctx, p, parts); err != nil {
		t.abort(ctx, p)
		return nil, fmt.Errorf("%w: %w", server.ErrTransactionAborted, err)
	}
	for _, part := range parts {
		p.next[part.tp] = nextSequence(part.seq, len(part.indexes))
	}
	if err := t.endTxn(rctx, p, true); err != nil {
		if definitelyNotCommitted(err) {
			t.forget(p)
			return nil, fmt.Errorf("%w: %w", server.ErrTransactionAborted, err)
		}
		// Whether the coordinator wrote PrepareCommit is unknown: try to
		// abort (refused if it committed), then start afresh.
		t.abort(ctx, p)
		return nil, fmt.Errorf("%w: the commit was not confirmed (%v); it may or may not have committed", server.ErrRequestTimedOut, err)
	}
	out := make([]server.TopicOffset, len(recs))
	for _, part := range parts {
		for j, i := range part.indexes {
			out[i] = server.TopicOffset{Topic: part.tp.Topic, Partition: part.tp.Partition, Offset: part.base + int64(j)}
		}
	}
	return out, nil
}

// begin encodes the request's batches and adds their partitions to p's
// transaction. A producer whose epoch the coordinator fenced meanwhile
// (it aborted a transaction of p's that timed out) takes a new epoch and
// begins again: nothing was written yet.
func (t *Transactor) begin(ctx context.Context, p *txnProducer, recs []server.TopicRecord) ([]*txnPartition, error) {
	for attempt := 0; ; attempt++ {
		parts, err := t.encode(p, recs)
		if err != nil {
			return nil, err // nothing sent anywhere
		}
		err = t.addPartitions(ctx, p, parts)
		if err == nil {
			return parts, nil
		}
		// Its outcome may be unknown: the next epoch fences whatever it did.
		t.forget(p)
		if attempt > 0 || !fenced(err) {
			return nil, fmt.Errorf("%w: %w", server.ErrTransactionAborted, err)
		}
		if err := t.initProducer(ctx, p); err != nil {
			return nil, fmt.Errorf("%w: begin: %w", server.ErrLeaderNotAvailable, err)
		}
	}
}

// fenced: the coordinator no longer knows p's producer id and epoch.
func fenced(err error) bool {
	var ce *coordinatorError
	return errors.As(err, &ce) && (ce.code == kerr.ProducerFenced.Code || ce.code == kerr.InvalidProducerEpoch.Code ||
		ce.code == kerr.InvalidProducerIDMapping.Code)
}

// encode groups recs by partition, in order of first appearance, and
// builds each partition's transactional batch at its next sequence.
func (t *Transactor) encode(p *txnProducer, recs []server.TopicRecord) ([]*txnPartition, error) {
	var parts []*txnPartition
	at := map[TopicPartition]*txnPartition{}
	for i := range recs {
		tp := TopicPartition{Topic: recs[i].Topic, Partition: recs[i].Partition}
		part := at[tp]
		if part == nil {
			part = &txnPartition{tp: tp, seq: p.next[tp]}
			at[tp] = part
			parts = append(parts, part)
		}
		part.indexes = append(part.indexes, i)
	}
	now := time.Now().UnixMilli()
	for _, part := range parts {
		p.builder.Reset()
		for _, i := range part.indexes {
			r := recs[i].Record
			if r.Timestamp == 0 {
				r.Timestamp = now // the gateway's "no timestamp given"
			}
			p.builder.Add(r)
		}
		batch, err := p.builder.AppendBatch(nil, records.BatchOptions{ProducerID: p.pid, ProducerEpoch: p.epoch,
			BaseSequence: part.seq, Transactional: true})
		if err != nil {
			return nil, fmt.Errorf("%w: %s-%d: %v", server.ErrInvalidRecord, part.tp.Topic, part.tp.Partition, err)
		}
		part.batch = batch
	}
	return parts, nil
}

// nextSequence is the sequence after n records from seq; sequences wrap
// to 0 after MaxInt32, as Kafka's.
func nextSequence(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

// forget makes p ask for a new epoch before its next transaction.
func (t *Transactor) forget(p *txnProducer) {
	p.pid, p.epoch, p.next = -1, -1, nil
}

// abort ends p's transaction with an abort and forgets its epoch (the
// sequences of partitions whose appends failed are not known). When the
// abort fails, the next InitProducerId for the id fences and aborts it,
// or the coordinator does after the timeout.
func (t *Transactor) abort(ctx context.Context, p *txnProducer) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.RequestTimeout)
	defer cancel()
	if err := t.endTxn(actx, p, false); err != nil {
		t.cfg.Logger.Warn("HTTP transaction not aborted; its producer takes a new epoch", "transactional_id", p.id, "err", err)
	}
	t.forget(p)
}

// definitelyNotCommitted: EndTxn's answer says the commit was refused, not
// lost (a fenced or invalid producer, a transaction in another state).
func definitelyNotCommitted(err error) bool {
	var ce *coordinatorError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.code {
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code, kerr.InvalidTxnState.Code,
		kerr.InvalidProducerIDMapping.Code, kerr.TransactionalIDAuthorizationFailed.Code:
		return true
	}
	return false
}

// appendAll appends every partition's batch to its leader, all leaders at
// once, and waits for their in-sync replicas. A partition whose leader
// moved is sent again to the new one (its sequence makes a batch the old
// leader already wrote a duplicate, answered with the first offsets);
// one without a live leader for LeaderWait, or any other failure, fails
// the request.
func (t *Transactor) appendAll(ctx context.Context, p *txnProducer, parts []*txnPartition) error {
	pending := parts
	leaderDeadline := time.Now().Add(t.cfg.LeaderWait)
	backoff := 10 * time.Millisecond
	for {
		byLeader := map[int32][]*txnPartition{}
		var lastErr error
		var waiting []*txnPartition
		for _, part := range pending {
			leader, err := t.leaderOf(part.tp)
			if err != nil {
				waiting, lastErr = append(waiting, part), err
				continue
			}
			byLeader[leader] = append(byLeader[leader], part)
		}
		var mu sync.Mutex
		var failed error
		var wg sync.WaitGroup
		for leader, group := range byLeader {
			wg.Go(func() {
				errs := t.appendTo(ctx, p, leader, group)
				mu.Lock()
				defer mu.Unlock()
				for k, err := range errs {
					switch {
					case err == nil:
					case retriableAppend(err):
						waiting, lastErr = append(waiting, group[k]), err
					case failed == nil:
						failed = err
					}
				}
			})
		}
		wg.Wait()
		if failed != nil {
			return failed
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(leaderDeadline) {
			return lastErr
		}
		select {
		case <-ctx.Done():
			return lastErr
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
		pending = waiting
	}
}

// retriableAppend: the partition's leader moved or is being elected, or
// the connection to it failed; the batch can go again (to the leader of
// then), where its sequence makes it a duplicate if it was written.
func retriableAppend(err error) bool {
	return errors.Is(err, server.ErrNotLeader) || errors.Is(err, server.ErrLeaderNotAvailable)
}

// leaderOf is the broker leading tp: this one on a single node, else the
// controller's view's live leader.
func (t *Transactor) leaderOf(tp TopicPartition) (int32, error) {
	b := t.cfg.Broker
	view, clustered := b.Cluster()
	if !clustered || !b.Config().AwaitRoles || t.cfg.Peers == nil {
		return b.BrokerID(), nil
	}
	pv, ok := view.Partition(tp.Topic, tp.Partition)
	switch {
	case !ok || pv.Leader < 0:
		return -1, fmt.Errorf("%w: %s-%d has no leader (an election is in progress or its in-sync replicas are down); retry shortly",
			server.ErrLeaderNotAvailable, tp.Topic, tp.Partition)
	case pv.Leader != b.BrokerID() && !view.Live(pv.Leader):
		return -1, fmt.Errorf("%w: %s-%d: its leader, broker %d, is not live; retry shortly",
			server.ErrLeaderNotAvailable, tp.Topic, tp.Partition, pv.Leader)
	}
	return pv.Leader, nil
}

// appendTo appends group's batches on leader and waits for them to be
// acknowledged; one error per partition, setting each base offset.
func (t *Transactor) appendTo(ctx context.Context, p *txnProducer, leader int32, group []*txnPartition) []error {
	if leader != t.cfg.Broker.BrokerID() {
		return t.produceRemote(ctx, p, leader, group)
	}
	b := t.cfg.Broker
	errs := make([]error, len(group))
	appended := make([]server.Appended, 0, len(group))
	which := make([]int, 0, len(group))
	for k, part := range group {
		a, err := b.AppendBatch(ctx, server.BatchProduce{Topic: part.tp.Topic, Partition: part.tp.Partition,
			Batches: part.batch, Acks: server.AcksAll, TransactionalID: p.id})
		if err != nil {
			errs[k] = txnAppendError(err)
			continue
		}
		part.base = a.BaseOffset
		appended = append(appended, a)
		which = append(which, k)
	}
	if len(appended) > 0 {
		for j, err := range b.WaitAcks(ctx, appended, remaining(ctx)) {
			errs[which[j]] = err
		}
	}
	return errs
}

// txnAppendError maps the coordinator's answer to a leader's KIP-890
// check (a code, not a core error) to the core's errors.
func txnAppendError(err error) error {
	var ce *server.TxnCodeError
	if !errors.As(err, &ce) {
		return err
	}
	return &coordinatorError{code: ce.Code, op: "verify the partition"}
}

// remaining is what is left of ctx's deadline, for the acks=all wait.
func remaining(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return server.DefaultProduceTimeout
}
