package kafka

// Produce (key 0), versions 0–11, and 12 with a transaction coordinator
// (KIP-890 part 2; the body is v11's; clients use it once the cluster's
// transaction.version is 2): a transactional batch opening its
// producer's transaction on a partition adds the partition to the
// transaction at the coordinator (server.BatchProduce.AddToTxn) instead of
// only verifying it is there.
//
// v0–v2 may carry magic 0 or 1 message sets (clients before 0.11): they
// are converted up to a magic 2 batch first (00_produce_legacy.go). An
// answer has no throttle time in v0 and no log append time in v0–v1, as
// Kafka's schemas say. Every partition's data goes to Broker.AppendBatch,
// which validates the batch (CRC, one batch, count = lastOffsetDelta+1, no
// control batch, records framed, decompressed under a cap) and applies the
// idempotent producer rules before appending; nothing is written for a
// rejected partition. The partitions of a request are appended in parallel
// (appendInParallel); then an acks=-1 request waits once for all of them
// to reach every in-sync replica, up to TimeoutMillis (server/acks.go:
// REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND
// per partition). acks=0 gets no response; an acks=0 request with a failed
// partition closes the connection, as in Kafka. On one node acks=1 and
// acks=-1 answer alike (a topic with flush.messages=1 answers after fsync)
// unless min.insync.replicas is above 1.
// A batch refused for some of its records (a keyless record to a
// compacted topic, a timestamp out of bounds) is refused whole, with the
// first record's error, and from v8 names every bad record in
// record_errors (KIP-467), as Kafka does: librdkafka then fails those with
// INVALID_RECORD and the rest of the batch with _INVALID_DIFFERENT_RECORD.
// ACLs (authz.go): WRITE on each topic, and on the transactional id when
// one is given. Deviations: transactional batches are rejected with INVALID_RECORD. v10's new-leader
// hints (KIP-951) stay empty, since one node never answers NOT_LEADER; v11
// only allows TRANSACTION_ABORTABLE (KIP-890), which ferry never returns.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

func (s *Server) handleProduce(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksOK := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	// Kafka checks WRITE on the transactional id of a transactional
	// produce, then WRITE on each topic (TOPIC_AUTHORIZATION_FAILED for
	// its partitions, nothing written).
	txnDenied := req.TransactionID != nil && !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, *req.TransactionID)
	txnID := "" // for the leader's KIP-890 check of a transactional batch
	if req.TransactionID != nil {
		txnID = *req.TransactionID
	}
	var work []func()
	recordBytes := 0
	// appended[k] is the append of the partition answered by answers[k].
	var appended []server.Appended
	var answers []*kmsg.ProduceResponseTopicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		denied := codeTxnIDAuthFailed
		if !txnDenied {
			denied = 0
			if !s.authorizedTopic(ctx, auth.OpWrite, t.Topic) {
				denied = codeTopicAuthFailed
			}
		}
		for i := range t.Partitions {
			rp := &rt.Partitions[i]
			rp.Default()
			rp.Partition = t.Partitions[i].Partition
			if denied != 0 {
				rp.ErrorCode = denied
			} else if acksOK {
				p, topic, k := &t.Partitions[i], t.Topic, len(appended)
				recordBytes += len(p.Records)
				appended, answers = append(appended, server.Appended{}), append(answers, rp)
				work = append(work, func() {
					appended[k] = s.producePartition(ctx, req.Version, req.Acks, txnID, topic, p, rp)
				})
			} else {
				rp.ErrorCode = codeInvalidRequiredAcks
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	woken := s.broker.WokenMark()
	appendInParallel(work, recordBytes >= parallelAppendBytes && distinctPartitions(req))
	s.broker.YieldToWoken(woken) // the consumers these records woke go first
	if req.Acks == server.AcksAll {
		timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
		parked := quota.Park(ctx)
		acked := s.broker.WaitAcks(ctx, appended, timeout)
		parked.End()
		for k, err := range acked {
			if err != nil && answers[k].ErrorCode == 0 {
				answers[k].ErrorCode, answers[k].ErrorMessage = errorCode(err), errorMessage(err)
			}
		}
	}
	if req.Acks == 0 {
		// The client expects no response. As Kafka does, a failed
		// partition closes the connection, so the client notices and
		// refreshes its metadata.
		if failed(resp) {
			return closeConnection
		}
		return nil
	}
	return resp
}

func failed(resp *kmsg.ProduceResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return true
			}
		}
	}
	return false
}

// producePartition appends one partition's batches and fills its answer;
// the acks=all wait comes after every partition of the request appended.
func (s *Server) producePartition(ctx context.Context, version, acks int16, txnID, topic string, p *kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition) server.Appended {
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	switch {
	case len(p.Records) == 0:
		rp.ErrorCode = codeInvalidRecord
		return server.Appended{}
	}
	data, code, err := s.upConvertProduced(version, p.Records)
	if code != 0 {
		rp.ErrorCode, rp.ErrorMessage = code, errorMessage(err)
		return server.Appended{}
	}
	a, err := s.broker.AppendBatch(ctx, server.BatchProduce{Topic: topic, Partition: p.Partition, Batches: data, Acks: acks, TransactionalID: txnID, AddToTxn: version >= 12 && txnID != ""})
	if err != nil {
		rp.ErrorCode = errorCode(err)
		rp.ErrorMessage = errorMessage(err)
		rp.ErrorRecords = recordErrors(version, err)
		s.logger.Debug("produce rejected", "topic", topic, "partition", p.Partition, "err", err)
		return server.Appended{}
	}
	res := a.AppendResult
	rp.BaseOffset = res.BaseOffset
	rp.LogAppendTime = res.LogAppendTime
	if part, err := s.broker.Partition(topic, p.Partition); err == nil {
		rp.LogStartOffset = part.LogStartOffset()
	}
	return a
}

// parallelAppendBytes is the least a produce request carries for its
// partitions to be appended on several goroutines. Below it the appends
// take a few microseconds each, less than waking another goroutine (a
// futex wake, and often a wait for an idle P to pick it up) and waiting
// for it: four 100-byte appends took 8.5 µs on the caller and 13 to 15 µs
// spread over two goroutines (BenchmarkProduceAppendsInline). Large
// requests (the throughput benchmark's) keep the parallel appends.
const parallelAppendBytes = 64 << 10

// appendInParallel runs a request's partition appends on up to GOMAXPROCS
// goroutines when parallel is set: the partitions are independent logs,
// and one client's large request would otherwise be served on one core.
// A request that names a partition twice, or is small, is served in
// order, as written, on the caller. A panic in a worker is raised again
// in the caller, where the dispatcher recovers it.
func appendInParallel(fns []func(), parallel bool) {
	workers := min(len(fns), runtime.GOMAXPROCS(0))
	if workers <= 1 || !parallel {
		for _, fn := range fns {
			fn()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Value
	work := func() {
		defer func() {
			if r := recover(); r != nil {
				panicked.CompareAndSwap(nil, fmt.Sprintf("%v\n%s", r, debug.Stack()))
			}
		}()
		for i := next.Add(1) - 1; i < int64(len(fns)); i = next.Add(1) - 1 {
			fns[i]()
		}
	}
	for range workers - 1 {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
}

// distinctPartitions says whether no partition appears twice in req: a
// scan of what came before while the request is small (most name a few
// partitions, so no map per request), a set beyond that.
func distinctPartitions(req *kmsg.ProduceRequest) bool {
	type key struct {
		topic     string
		partition int32
	}
	var small [16]key
	keys := small[:0]
	var seen map[key]struct{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			if seen == nil && len(keys) < len(small) {
				if slices.Contains(keys, k) {
					return false
				}
				keys = append(keys, k)
				continue
			}
			if seen == nil {
				seen = make(map[key]struct{}, 2*len(keys))
				for _, k := range keys {
					seen[k] = struct{}{}
				}
			}
			if _, dup := seen[k]; dup {
				return false
			}
			seen[k] = struct{}{}
		}
	}
	return true
}

// recordErrors names the refused records of a batch (KIP-467, Produce v8+):
// a client fails those with the partition's error and the rest of the
// batch with its own.
func recordErrors(version int16, err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var bad *server.InvalidRecordsError
	if version < 8 || !errors.As(err, &bad) {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(bad.Records))
	for i, r := range bad.Records {
		out[i].RelativeOffset = r.Index
		out[i].ErrorMessage = &bad.Records[i].Message
	}
	return out
}
