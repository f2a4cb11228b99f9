package jepsen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// CopyOutcome is one transaction of a copying worker (Copy): whether it
// began, how many records it copied, whether they were committed, the
// produces that failed (so it was aborted) and the error of its Begin or
// End.
type CopyOutcome struct {
	Begun     bool
	Copied    int64
	Committed bool
	Failed    []string
	Err       error
	// Reopened: the Begin or End failed, and the worker goes on in a new
	// session.
	Reopened bool
}

// CopySession is a copying worker's GroupTransactSession: transactional
// id id in group, read_committed with stable offsets, acks=all, copying
// in to out, retrying produces for a minute and a transaction timeout of
// 20 s; opts come after, so they may change any of it.
func CopySession(seeds []string, id, group, in, out string, opts ...kgo.Opt) (*kgo.GroupTransactSession, error) {
	return kgo.NewGroupTransactSession(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(20 * time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(out),
		kgo.RecordRetries(100),
		kgo.RetryTimeout(60 * time.Second),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RebalanceTimeout(30 * time.Second),
	}, opts...)...)
}

// Copy is a consume-transform-produce worker, the shape of a Kafka
// Streams thread or a Flink exactly-once sink: until ctx ends, each poll
// of its session's records is produced again, unchanged, to the session's
// default produce topic in one transaction that also commits the poll's
// offsets (GroupTransactSession). open makes the session, and a new one
// after a Begin or End failed: franz-go's GroupTransactSession says no End
// error is retryable, and the usual one under faults is a fenced
// producer. A transaction that outlived its timeout while the worker was
// cut off is aborted by its coordinator, which bumps the producer's
// epoch; the worker's late produce is then answered INVALID_PRODUCER_EPOCH
// and its abort PRODUCER_FENCED (Kafka 4 with transaction.version 2
// decides the same), after which every Begin fails. A Kafka Streams
// thread replaces a fenced task producer the same way; a worker that only
// retried would stay in the group, holding its partitions, and copy
// nothing. The session in use is closed when Copy returns. report hears
// every transaction's outcome and every Begin that failed.
func Copy(ctx context.Context, open func() (*kgo.GroupTransactSession, error), report func(CopyOutcome)) {
	var s *kgo.GroupTransactSession
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	reopen := func() {
		s.Close() // leaves the group: its partitions go to the others, then to the new session
		s = nil
	}
	for ctx.Err() == nil {
		if s == nil {
			var err error
			if s, err = open(); err != nil {
				report(CopyOutcome{Err: fmt.Errorf("open a session: %w", err)})
				pause(ctx, 100*time.Millisecond)
				continue
			}
		}
		fs := s.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		if err := s.Begin(); err != nil {
			report(CopyOutcome{Err: fmt.Errorf("begin: %w", err), Reopened: true})
			reopen()
			continue
		}
		n, committed, failed, err := CopyTransaction(ctx, s, fs)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		report(CopyOutcome{Begun: true, Copied: n, Committed: committed, Failed: failed, Err: err, Reopened: err != nil})
		if err != nil {
			reopen()
		}
	}
}

// CopyTransaction produces fs's records (begun in s) and ends the
// transaction: a commit only when every produce succeeded. franz-go
// commits what was produced when asked to (unlike the Java client, which
// refuses once a send failed), and a produce that failed (its context
// ended while the partition had no reachable leader, its retries ran out,
// a broker refused it) would otherwise have its input's offset committed
// without its output: exactly-once lost by the client, whatever the
// brokers did. It returns how many records were copied, whether they
// were committed, the failed produces and End's error.
func CopyTransaction(ctx context.Context, s *kgo.GroupTransactSession, fs kgo.Fetches) (n int64, committed bool, failed []string, err error) {
	var mu sync.Mutex
	fs.EachRecord(func(r *kgo.Record) {
		n++
		s.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s (%v)", r.Value, err))
				mu.Unlock()
			}
		})
	})
	endCtx, endCancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer endCancel()
	// End flushes before it decides, but the decision is taken before:
	// flush here so that every produce's outcome is known.
	if err := s.Client().Flush(endCtx); err != nil {
		return n, false, nil, err
	}
	mu.Lock()
	try := kgo.TransactionEndTry(len(failed) == 0)
	mu.Unlock()
	committed, err = s.End(endCtx, try)
	return n, committed, failed, err
}

// ProducePaced writes the values 0..total-1 (each its own key) to topic,
// step records every period, through an idempotent acks=all producer
// that retries for minutes, so that a copying chain is mid-stream while
// brokers are killed or cut off.
func ProducePaced(seeds []string, topic string, total, step int, period time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000), kgo.RetryTimeout(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	pace := time.NewTicker(period)
	defer pace.Stop()
	for from := 0; from < total; from += step {
		var rs []*kgo.Record
		for n := from; n < min(from+step, total); n++ {
			v := strconv.Itoa(n)
			rs = append(rs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		err := cl.ProduceSync(ctx, rs...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("records %d..: %w", from, err)
		}
		<-pace.C
	}
	return nil
}
