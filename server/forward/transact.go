package forward

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server"
)

// Transactor writes the HTTP gateway's all-or-nothing batches: each
// request is one Kafka transaction of a pooled transactional producer
// (franz-go), which asks the transactional id's coordinator for its
// producer id (InitProducerId), adds the request's partitions
// (AddPartitionsToTxn), appends to their leaders, wherever they are, and
// ends the transaction with EndTxn: commit when every record was
// acknowledged, abort on any failure, so that read_committed readers see
// all of a request's records or none.
//
// A producer runs one transaction at a time; the pool holds Size of them,
// each with its own transactional id (IDPrefix-N), so a restarted broker
// reuses its ids and its first InitProducerId aborts whatever transaction
// the previous process left open (fencing its old epoch).
type Transactor struct {
	cfg  TransactorConfig
	free chan *txnProducer
}

// TransactorConfig describes the pool.
type TransactorConfig struct {
	// Seeds and Dial reach the brokers' Kafka listeners (as Config's).
	Seeds []string
	Dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	// IDPrefix names the producers' transactional ids; it must be unique
	// per broker (e.g. "__ferry-http-<broker id>").
	IDPrefix string
	// Size is the number of producers, the transactions in flight at
	// once. Default 4.
	Size int
	// Timeout is each transaction's transaction.timeout.ms: the
	// coordinator aborts a transaction this broker left open (it died
	// mid-request) after it. Default 60 s.
	Timeout time.Duration
	// RequestTimeout bounds one request's appends (a partition whose
	// leader is gone mid-request fails the request, aborted, rather than
	// holding it). Default 30 s.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

type txnProducer struct {
	id string
	cl *kgo.Client // nil until first used, and after a failure that may have left it unusable
}

// NewTransactor builds the pool; producers connect when first used.
func NewTransactor(cfg TransactorConfig) *Transactor {
	if cfg.Size <= 0 {
		cfg.Size = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Transactor{cfg: cfg, free: make(chan *txnProducer, cfg.Size)}
	for i := range cfg.Size {
		t.free <- &txnProducer{id: fmt.Sprintf("%s-%d", cfg.IDPrefix, i)}
	}
	return t
}

// Close ends the idle producers; those in use end when their request
// returns them.
func (t *Transactor) Close() {
	for {
		select {
		case p := <-t.free:
			if p.cl != nil {
				p.cl.Close()
			}
		default:
			return
		}
	}
}

func (t *Transactor) client(p *txnProducer) (*kgo.Client, error) {
	if p.cl != nil {
		return p.cl, nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(t.cfg.Seeds...),
		kgo.ClientID(p.id),
		kgo.TransactionalID(p.id),
		kgo.TransactionTimeout(t.cfg.Timeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// A request's records are all handed over at once: waiting for
		// more only delays the commit.
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(250 * time.Millisecond),
		// A record the leader refuses (too large, invalid) must fail the
		// request, not be retried until the timeout.
		kgo.RecordRetries(10),
	}
	if t.cfg.Dial != nil {
		opts = append(opts, kgo.Dialer(t.cfg.Dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("transactional producer: %w", err)
	}
	p.cl = cl
	return cl, nil
}

// Transact writes recs as one transaction and returns each record's
// offset, in request order. On any failure the transaction is aborted
// and the error wraps server.ErrTransactionAborted and the failure's core
// error (ErrLeaderNotAvailable, ErrRecordTooLarge, ...). An error that
// wraps ErrRequestTimedOut instead leaves the outcome unknown (EndTxn
// commit was sent and not answered).
func (t *Transactor) Transact(ctx context.Context, recs []server.TopicRecord) ([]server.TopicOffset, error) {
	var p *txnProducer
	select {
	case p = <-t.free:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: every transactional producer of this gateway is busy", server.ErrRequestTimedOut)
	}
	defer func() { t.free <- p }()
	cl, err := t.client(p)
	if err != nil {
		return nil, err
	}
	if err := cl.BeginTransaction(); err != nil {
		t.reset(p)
		return nil, fmt.Errorf("%w: begin: %w", server.ErrLeaderNotAvailable, err)
	}
	krs := make([]*kgo.Record, len(recs))
	for i := range recs {
		r := &recs[i]
		kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Record.Key, Value: r.Record.Value}
		if r.Record.Timestamp > 0 {
			kr.Timestamp = time.UnixMilli(r.Record.Timestamp)
		}
		for _, h := range r.Record.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs[i] = kr
	}
	// ProduceSync answers in completion order; the records themselves
	// carry their offsets, in request order.
	pctx, cancel := context.WithTimeout(ctx, t.cfg.RequestTimeout)
	defer cancel()
	var failed error
	for _, r := range cl.ProduceSync(pctx, krs...) {
		if r.Err != nil && failed == nil {
			failed = produceError(r.Record.Topic, r.Record.Partition, r.Err)
		}
	}
	out := make([]server.TopicOffset, len(recs))
	for i, kr := range krs {
		out[i] = server.TopicOffset{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset}
	}
	if failed != nil {
		if errors.Is(failed, server.ErrRequestTimedOut) {
			// Aborted below: nothing of it commits, so the answer is a
			// leader not reached in time, not an outcome unknown.
			failed = fmt.Errorf("%w: %v", server.ErrLeaderNotAvailable, failed)
		}
		t.abort(ctx, p, cl)
		return nil, fmt.Errorf("%w: %w", server.ErrTransactionAborted, failed)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// Whether the coordinator wrote PrepareCommit is unknown: try to
		// abort (refused if it committed), then start afresh.
		t.abort(ctx, p, cl)
		return nil, fmt.Errorf("%w: the commit was not confirmed (%v); it may or may not have committed", server.ErrRequestTimedOut, err)
	}
	return out, nil
}

// abort ends p's transaction with an abort; a producer that cannot is
// closed, and its next use's InitProducerId fences and aborts it.
func (t *Transactor) abort(ctx context.Context, p *txnProducer, cl *kgo.Client) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := cl.AbortBufferedRecords(actx); err == nil {
		if err = cl.EndTransaction(actx, kgo.TryAbort); err == nil {
			return
		}
		t.cfg.Logger.Warn("HTTP transaction not aborted; its producer is replaced", "transactional_id", p.id, "err", err)
	}
	t.reset(p)
}

func (t *Transactor) reset(p *txnProducer) {
	if p.cl != nil {
		p.cl.Close()
		p.cl = nil
	}
}
