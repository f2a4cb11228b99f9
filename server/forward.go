package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// On a cluster the HTTP gateway serves every partition from every node: a
// produce appends here the records of the partitions this broker leads and
// hands the others to a Forwarder, which writes them to their leaders over
// the Kafka protocol; a read this broker cannot serve from an in-sync
// replica of its own is fetched from the leader through it too. The
// decisions (which records go where, what the request answers) are this
// package's (produceplan.go, consumerfetch.go); the Forwarder only moves
// bytes. A single node has none: every partition is here.

// Forwarder reaches the partitions other brokers lead. Implementations
// keep pooled connections and are safe for concurrent use
// (server/forward, on franz-go).
type Forwarder interface {
	// Produce writes recs (each naming its partition) to topic acks=all,
	// in order per partition, idempotently (a retried forward is never
	// written twice), and fills out[i] with record i's offset or error. It
	// returns by timeout even when some leaders have not answered; their
	// records are then ErrRequestTimedOut (written or not: unknown).
	Produce(ctx context.Context, topic string, recs []ProduceRecord, timeout time.Duration, out []ForwardOutcome)
	// Fetch reads req's partition from broker leader as a consumer does
	// (below its high watermark), long-polling up to req.MaxWait; dst may
	// be reused for the batches.
	Fetch(ctx context.Context, leader int32, req FetchRequest, dst []byte) (FetchResult, error)
	// ListOffset is broker leader's answer to ListOffsets for ts
	// (OffsetEarliest, OffsetLatest or a timestamp), as Broker.ListOffset.
	ListOffset(ctx context.Context, leader int32, topic string, partition int32, ts int64) (offset, timestamp int64, err error)
	// LiveBrokers is told the live brokers each time the controller
	// describes them (UpdateMetadata). A request waiting on a broker that
	// is no longer among them fails at once, for its caller to retry with
	// the new leader, instead of waiting out a broker that may never
	// answer (frozen, or cut off with its connections open).
	LiveBrokers(brokers []ClusterBroker)
}

// ForwardOutcome is one forwarded record's answer.
type ForwardOutcome struct {
	Offset int64
	Err    error
}

// ErrLeaderNotAvailable: the partition has no live leader (an election in
// progress, or every in-sync replica down); nothing was written to it.
// HTTP answers 503 with Retry-After.
var ErrLeaderNotAvailable = errors.New("leader not available")

// PartitionFailure is one partition of a request that was not written
// (or not acknowledged).
type PartitionFailure struct {
	Partition int32
	Records   int
	Err       error
}

// PartialWriteError: some partitions of a produce request were written
// and acknowledged, others failed. ProduceResult.Offsets holds the offsets
// of the written records and -1 for the others; Failures names the rest.
// It unwraps to the first failure's error, so listeners map it as that.
type PartialWriteError struct {
	Topic    string
	Written  int
	Failures []PartitionFailure
}

func (e *PartialWriteError) Error() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = fmt.Sprintf("partition %d (%d records): %v", f.Partition, f.Records, f.Err)
	}
	return fmt.Sprintf("%d records of the request to %s were written; not written or not acknowledged: %s",
		e.Written, e.Topic, strings.Join(parts, "; "))
}

func (e *PartialWriteError) Unwrap() error { return e.Failures[0].Err }

// FailedPartition is the error of a partition the result names as not
// written (nil when it was).
func (e *PartialWriteError) FailedPartition(p int32) error {
	for _, f := range e.Failures {
		if f.Partition == p {
			return f.Err
		}
	}
	return nil
}

// TopicRecord is one record of a request spanning topics (the HTTP
// gateway's transactional batch); Partition is explicit.
type TopicRecord struct {
	Topic     string
	Partition int32
	Record    records.Record
}

// TopicOffset is where one TopicRecord landed.
type TopicOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// ErrTransactionAborted: a transactional request failed and its
// transaction was aborted; none of its records is visible to
// read_committed readers. It wraps the failure's own error.
var ErrTransactionAborted = errors.New("transaction aborted")
