package kafka

// EndTxn (key 26), versions 0–4 (v4 only allows the TRANSACTION_ABORTABLE
// error, KIP-890), and v5 (KIP-890 part 2; clients use it once the
// cluster's transaction.version is 2, and a transaction opened before a
// downgrade ends as it began): every end bumps the producer's epoch
// (txn.Txn.EndTxnV2), the markers
// carry the bumped epoch, and the answer holds the producer id and epoch
// of the producer's next transaction.
//
// The coordinator (server/txn) writes PrepareCommit or PrepareAbort to
// __transaction_state and answers; the markers then go to each
// partition's leader and CompleteCommit/CompleteAbort is written, the id
// answering CONCURRENT_TRANSACTIONS meanwhile, as Kafka does. A commit
// asked again after it completed is answered NONE (Kafka's tolerance,
// which Flink's resumeTransaction relies on: EndTxn with a stored producer
// id and epoch on a new connection, without InitProducerId).
// PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v2 (KIP-588).
//
// ACLs: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleEndTxn(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = codeTxnIDAuthFailed
		return resp
	}
	if req.Version >= 5 {
		pid, epoch, code := s.cfg.Txns.EndTxnV2(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, pid, epoch
		return resp
	}
	code := s.cfg.Txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = fencedCode(code, req.Version < 2)
	return resp
}
