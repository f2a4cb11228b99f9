package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
)

// A produce is two steps, as in Kafka's ReplicaManager: append to every
// partition of the request (AppendBatch, Produce), then wait once for
// all of them to be acknowledged as the request's acks asks (WaitAcks), on
// the purgatory, up to the request's timeout.
//
//   - acks=0 and acks=1 are acknowledged by the leader's append;
//   - acks=all (-1) by every in-sync replica: the partition's high
//     watermark reaching the end of the appended records. A partition
//     with fewer in-sync replicas than min.insync.replicas refuses the
//     append (NOT_ENOUGH_REPLICAS); one that falls below it while the
//     request waits answers NOT_ENOUGH_REPLICAS_AFTER_APPEND, and one not
//     acknowledged in time REQUEST_TIMED_OUT. Those two have appended: a
//     retry may duplicate the records unless the producer is idempotent.
//
// With one replica the high watermark follows each append, so the wait
// completes when it is registered.

// Acks values of a produce request, as Kafka numbers them.
const (
	AcksNone   int16 = 0
	AcksLeader int16 = 1
	AcksAll    int16 = -1
)

// DefaultProduceTimeout bounds the acks=all wait of requests that carry no
// timeout (the HTTP gateway): Kafka producers' request.timeout.ms.
const DefaultProduceTimeout = 30 * time.Second

// Appended is one partition's append, waiting for its acknowledgement.
type Appended struct {
	storage.AppendResult
	partition *replication.Replica
	acks      int16
}

// checkReplicas refuses an acks=all append up front when the partition
// has fewer in-sync replicas than min.insync.replicas.
func checkReplicas(p *replication.Replica, acks int16) error {
	if acks != AcksAll {
		return nil
	}
	return p.CheckEnoughReplicas()
}

// WaitAcks waits until every appended partition is acknowledged as its
// acks asks, timeout passes or ctx ends, and returns one error per item
// (nil: acknowledged). Items with acks 0 or 1 are acknowledged already.
func (b *Broker) WaitAcks(ctx context.Context, appended []Appended, timeout time.Duration) []error {
	return b.waitAcksInto(ctx, appended, timeout, nil)
}

// waitAcksInto is WaitAcks answering in errs' array when it is large
// enough (the gateway's pooled produce scratch), so a request allocates
// no slice for it.
func (b *Broker) waitAcksInto(ctx context.Context, appended []Appended, timeout time.Duration, errs []error) []error {
	errs = slices.Grow(errs[:0], len(appended))[:len(appended)]
	clear(errs)
	var waits []delayed.Wait
	var which []int
	for i, a := range appended {
		if a.acks != AcksAll || a.partition == nil {
			continue
		}
		// Acknowledged already (one replica, or followers that were quick):
		// no wait in the purgatory for it.
		if done, err := a.partition.AcksAllDone(a.LastOffset + 1); done {
			errs[i] = err
			continue
		}
		waits = append(waits, delayed.Wait{
			Key:    delayed.Key{Topic: a.partition.Topic(), Partition: a.partition.Index()},
			Offset: a.LastOffset + 1,
		})
		which = append(which, i)
	}
	if len(waits) == 0 {
		return errs
	}
	op := b.waiters.Register(delayed.NewProduce(waits), timeout, b.waitState)
	outcome := op.Wait(ctx)
	for _, i := range which {
		errs[i] = ackError(appended[i], outcome, timeout)
	}
	return errs
}

// ackError is the answer for one acks=all partition once the wait ended.
func ackError(a Appended, outcome delayed.Outcome, timeout time.Duration) error {
	p := a.partition
	done, err := p.AcksAllDone(a.LastOffset + 1)
	switch {
	case done:
		return err // nil, NOT_ENOUGH_REPLICAS_AFTER_APPEND or NOT_LEADER
	case outcome == delayed.Closed:
		return fmt.Errorf("%w: %s-%d", ErrShuttingDown, p.Topic(), p.Index())
	case outcome == delayed.Cancelled:
		// The listener shutting down cuts the wait (a client that went away
		// reads no answer). REQUEST_TIMED_OUT would tell the client this
		// broker still leads, so it would retry here after its backoff;
		// BROKER_NOT_AVAILABLE sends it to the metadata, which a controlled
		// shutdown has just pointed at the new leader.
		return fmt.Errorf("%w: %s-%d: stopped waiting for the replicas to acknowledge offsets %d to %d",
			ErrShuttingDown, p.Topic(), p.Index(), a.BaseOffset, a.LastOffset)
	case outcome == delayed.Ready: // the partition is gone from this broker
		return fmt.Errorf("%w: %s-%d moved or was deleted before its replicas acknowledged", ErrNotLeader, p.Topic(), p.Index())
	}
	return fmt.Errorf("%w: %s-%d: the in-sync replicas did not acknowledge offsets %d to %d within %v",
		ErrRequestTimedOut, p.Topic(), p.Index(), a.BaseOffset, a.LastOffset, timeout)
}
