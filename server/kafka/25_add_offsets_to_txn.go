package kafka

// AddOffsetsToTxn (key 25), versions 0–4 (v4 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// The group's __consumer_offsets partition joins the producer's
// transaction, so the transaction's markers reach the group coordinator,
// which then materializes or drops the producer's TxnOffsetCommits.
// PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v2 (KIP-588).
//
// ACLs: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// READ on the group (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/txn"
)

func (s *Server) handleAddOffsetsToTxn(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = codeTxnIDAuthFailed
		return resp
	case !s.authorizedGroup(ctx, auth.OpRead, req.Group):
		resp.ErrorCode = codeGroupAuthFailed
		return resp
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	n, err := s.broker.PartitionCountInCluster(group.OffsetsTopic)
	if err != nil || n < 1 {
		// The group coordinator creates __consumer_offsets on its first
		// FindCoordinator; a producer that skipped it retries.
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.OffsetsPartition(req.Group, n)}
	code := s.cfg.Txns.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})
	resp.ErrorCode = fencedCode(code, req.Version < 2)
	return resp
}
