package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// The Transactor's requests to the transaction coordinator and to leaders
// on other brokers: function calls when the coordinator is this broker,
// else the Kafka request a producer would send, through Peers.

// coordinatorError is a coordinator's refusal of one of the transactor's
// requests, after the retries of retriable codes.
type coordinatorError struct {
	code int16
	op   string
}

func (e *coordinatorError) Error() string {
	return fmt.Sprintf("transaction coordinator: %s: %v", e.op, kerr.ErrorForCode(e.code))
}

// Unwrap is the core's error for the code: leadership and availability
// codes are ErrLeaderNotAvailable (HTTP 503 with Retry-After).
func (e *coordinatorError) Unwrap() error {
	switch e.code {
	case errConcurrentTransactions, errLoadInProgress, errNotCoordinator, errCoordinatorUnavailable,
		kerr.RequestTimedOut.Code, kerr.NotEnoughReplicas.Code:
		return server.ErrLeaderNotAvailable
	}
	if err := server.ErrorForKafkaCode(e.code); err != nil {
		return err
	}
	return server.ErrLeaderNotAvailable
}

// retriableCoordinatorCode: the coordinator moves, loads, or is busy with
// the id's previous transaction; the request is sent again.
func retriableCoordinatorCode(code int16) bool {
	switch code {
	case errConcurrentTransactions, errLoadInProgress, errNotCoordinator, errCoordinatorUnavailable:
		return true
	}
	return false
}

// coordinate runs one request for id until its coordinator answers other
// than a retriable code or ctx ends: local when this broker coordinates
// id, else remote to the broker that does.
func (t *Transactor) coordinate(ctx context.Context, id, op string, local func() int16, remote func(leader int32) (int16, error)) error {
	backoff := 5 * time.Millisecond
	for {
		code := t.coordinateOnce(ctx, id, local, remote)
		if code == 0 {
			return nil
		}
		if !retriableCoordinatorCode(code) {
			return &coordinatorError{code: code, op: op}
		}
		select {
		case <-ctx.Done():
			return &coordinatorError{code: code, op: op}
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func (t *Transactor) coordinateOnce(ctx context.Context, id string, local func() int16, remote func(leader int32) (int16, error)) int16 {
	c := t.cfg.Coordinator
	if c.Coordinates(id) == 0 || t.cfg.Peers == nil {
		return local()
	}
	leader, err := c.CoordinatorOf(id)
	if err != nil {
		return errCoordinatorUnavailable
	}
	if leader == t.cfg.Broker.BrokerID() {
		return local() // named by the controller, not loaded yet: its code
	}
	code, err := remote(leader)
	if err != nil {
		t.cfg.Logger.Debug("transaction coordinator not reached", "broker", leader, "transactional_id", id, "err", err)
		return errCoordinatorUnavailable
	}
	return code
}

// initProducer asks for p's producer id and a new epoch, which fences and
// aborts whatever transaction the id's previous producer left open.
func (t *Transactor) initProducer(ctx context.Context, p *txnProducer) error {
	timeoutMs := int32(min(t.cfg.Timeout.Milliseconds(), int64(1<<31-1)))
	var pid int64
	var epoch int16
	err := t.coordinate(ctx, p.id, "InitProducerId", func() int16 {
		var code int16
		pid, epoch, code = t.cfg.Coordinator.InitProducerID(ctx, p.id, timeoutMs, ProducerIDAndEpoch{ID: -1, Epoch: -1})
		return code
	}, func(leader int32) (int16, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &p.id
		req.TransactionTimeoutMillis = timeoutMs
		req.ProducerID, req.ProducerEpoch = -1, -1
		kresp, err := t.cfg.Peers.Request(ctx, leader, req)
		if err != nil {
			return 0, err
		}
		resp := kresp.(*kmsg.InitProducerIDResponse)
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode, nil
	})
	if err != nil {
		return err
	}
	p.pid, p.epoch, p.next = pid, epoch, map[TopicPartition]int32{}
	return nil
}

// addPartitions adds the request's partitions to p's transaction.
func (t *Transactor) addPartitions(ctx context.Context, p *txnProducer, parts []*txnPartition) error {
	tps := make([]TopicPartition, len(parts))
	for i, part := range parts {
		tps[i] = part.tp
	}
	return t.coordinate(ctx, p.id, "AddPartitionsToTxn", func() int16 {
		return t.cfg.Coordinator.AddPartitions(ctx, p.id, p.pid, p.epoch, tps)
	}, func(leader int32) (int16, error) {
		kresp, err := t.cfg.Peers.Request(ctx, leader, addPartitionsRequest(p.id, p.pid, p.epoch, tps))
		if err != nil {
			return 0, err
		}
		return addPartitionsAnswer(kresp.(*kmsg.AddPartitionsToTxnResponse)), nil
	})
}

// addPartitionsRequest is AddPartitionsToTxn in both shapes: v0–v3's (a
// producer's) and v4+'s (one transaction of a batch, not verifyOnly).
// The client sends the highest version both sides know, so which shape
// is encoded is only known then.
func addPartitionsRequest(id string, pid int64, epoch int16, tps []TopicPartition) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, pid, epoch
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			vt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			vt.Topic = tp.Topic
			tx.Topics = append(tx.Topics, vt)
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, tp.Partition)
		tx.Topics[len(tx.Topics)-1].Partitions = append(tx.Topics[len(tx.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tx)
	return req
}

// addPartitionsAnswer is the first error in the answer, whichever shape;
// OPERATION_NOT_ATTEMPTED only when no partition says why.
func addPartitionsAnswer(resp *kmsg.AddPartitionsToTxnResponse) int16 {
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	var codes []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	for _, tx := range resp.Transactions {
		for _, rt := range tx.Topics {
			for _, rp := range rt.Partitions {
				codes = append(codes, rp.ErrorCode)
			}
		}
	}
	if len(codes) == 0 {
		return errCoordinatorUnavailable
	}
	first := int16(0)
	for _, code := range codes {
		if code != 0 && code != kerr.OperationNotAttempted.Code {
			return code
		}
		if code != 0 {
			first = code
		}
	}
	return first
}

// endTxn commits or aborts p's transaction.
func (t *Transactor) endTxn(ctx context.Context, p *txnProducer, commit bool) error {
	op := "EndTxn abort"
	if commit {
		op = "EndTxn commit"
	}
	return t.coordinate(ctx, p.id, op, func() int16 {
		return t.cfg.Coordinator.EndTxn(ctx, p.id, p.pid, p.epoch, commit)
	}, func(leader int32) (int16, error) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
		kresp, err := t.cfg.Peers.Request(ctx, leader, req)
		if err != nil {
			return 0, err
		}
		return kresp.(*kmsg.EndTxnResponse).ErrorCode, nil
	})
}

// produceRemote sends group's batches to leader in one acks=all Produce
// request carrying p's transactional id (the leader's KIP-890 check asks
// the coordinator about it); one error per partition.
func (t *Transactor) produceRemote(ctx context.Context, p *txnProducer, leader int32, group []*txnPartition) []error {
	errs := make([]error, len(group))
	if t.cfg.Peers == nil {
		for k := range errs {
			errs[k] = fmt.Errorf("%w: broker %d leads it and this node reaches no other broker", server.ErrLeaderNotAvailable, leader)
		}
		return errs
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &p.id
	req.Acks = -1
	req.TimeoutMillis = int32(min(remaining(ctx).Milliseconds(), int64(server.DefaultProduceTimeout.Milliseconds())))
	for _, part := range group {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != part.tp.Topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = part.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part.tp.Partition, part.batch
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	kresp, err := t.cfg.Peers.Request(ctx, leader, req)
	if err != nil {
		// No answer: the leader may have written some batches; sent
		// again, their sequences make them duplicates.
		for k, part := range group {
			errs[k] = fmt.Errorf("%w: %s-%d: no answer from its leader, broker %d: %v",
				server.ErrLeaderNotAvailable, part.tp.Topic, part.tp.Partition, leader, err)
		}
		return errs
	}
	type answer struct {
		code int16
		base int64
	}
	answers := map[TopicPartition]answer{}
	for _, rt := range kresp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			answers[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = answer{rp.ErrorCode, rp.BaseOffset}
		}
	}
	for k, part := range group {
		a, ok := answers[part.tp]
		switch {
		case !ok:
			errs[k] = fmt.Errorf("%w: %s-%d: broker %d did not answer for it", server.ErrLeaderNotAvailable, part.tp.Topic, part.tp.Partition, leader)
		case a.code != 0:
			errs[k] = leaderAnswerError(part.tp, leader, a.code)
		default:
			part.base = a.base
		}
	}
	return errs
}

// leaderAnswerError maps a leader's error code for a partition to the
// core's errors, naming the partition.
func leaderAnswerError(tp TopicPartition, leader int32, code int16) error {
	kind := server.ErrorForKafkaCode(code)
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code, kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code, kerr.BrokerNotAvailable.Code:
		kind = server.ErrLeaderNotAvailable
	case kerr.InvalidTxnState.Code, kerr.ProducerFenced.Code, kerr.NotCoordinator.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code:
		// The leader's KIP-890 check: the coordinator's answer.
		return fmt.Errorf("%s-%d on broker %d: %w", tp.Topic, tp.Partition, leader, &coordinatorError{code: code, op: "verify the partition"})
	}
	if kind == nil {
		kind = server.ErrInvalidRequest
	}
	return fmt.Errorf("%w: %s-%d: its leader, broker %d, answered %v", kind, tp.Topic, tp.Partition, leader, kerr.ErrorForCode(code))
}
