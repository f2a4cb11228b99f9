package kafka

// InitProducerId (key 22), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// Idempotent producers only: a request without a transactional id gets a
// new producer id (never reused, also across restarts) with epoch 0; with
// the producer's current id and epoch (v3+, KIP-360) the epoch is bumped.
// Unlike Kafka, the current id and epoch are not checked against a
// transaction coordinator's record (there is none).
//
// A transactional id goes to the transaction coordinator (Config.Txns;
// without one it is refused with INVALID_REQUEST): a new producer id, or
// the id's epoch bumped and its previous producer fenced, KIP-360's
// current id and epoch checked (v3+). PRODUCER_FENCED is answered
// INVALID_PRODUCER_EPOCH below v4, which older clients know (KIP-588).
//
// ACLs: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on
// the cluster or WRITE on some topic, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/txn"
)

func (s *Server) handleInitProducerID(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if code := s.initProducerIDDenied(ctx, req.TransactionalID); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		if s.cfg.Txns == nil {
			resp.ErrorCode = codeInvalidRequest
			return resp
		}
		expected := txn.ProducerIDAndEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}
		if req.Version < 3 {
			expected.ID = -1
		}
		id, epoch, code := s.cfg.Txns.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, expected)
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = id, epoch, fencedCode(code, req.Version < 4)
		return resp
	}
	id, epoch, err := s.broker.InitProducerID(req.ProducerID, req.ProducerEpoch)
	if err != nil {
		s.logger.Error("init producer id", "err", err)
		resp.ErrorCode = errorCode(err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return resp
}

// initProducerIDDenied is Kafka's check: WRITE on the transactional id,
// or for an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE
// on some topic (KIP-679).
func (s *Server) initProducerIDDenied(ctx context.Context, txnID *string) int16 {
	if !s.aclsOn() {
		return 0
	}
	if txnID != nil && *txnID != "" {
		if !s.authorized(ctx, auth.OpWrite, auth.ResourceTransactionalID, *txnID) {
			return codeTxnIDAuthFailed
		}
		return 0
	}
	if s.authorizedCluster(ctx, auth.OpIdempotentWrite) || s.writesSomeTopic(ctx) {
		return 0
	}
	return codeClusterAuthFailed
}

// writesSomeTopic reports whether the principal may WRITE some topic: an
// existing one, or any name at all through a wildcard or a prefix (Kafka's
// authorizeByResourceType).
func (s *Server) writesSomeTopic(ctx context.Context) bool {
	if a, ok := s.authz.(interface {
		AllowsSomeResource(context.Context, auth.Principal, string, auth.Operation, auth.ResourceType) bool
	}); ok {
		return a.AllowsSomeResource(ctx, auth.PrincipalFrom(ctx), requestHost(ctx), auth.OpWrite, auth.ResourceTopic)
	}
	for _, t := range s.broker.Topics() {
		if s.authorizedTopic(ctx, auth.OpWrite, t) {
			return true
		}
	}
	return false
}
