package kafka

// InitProducerId (key 22), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// Idempotent producers only: a request without a transactional id gets a
// new producer id (never reused, also across restarts) with epoch 0; with
// the producer's current id and epoch (v3+, KIP-360) the epoch is bumped.
// Unlike Kafka, the current id and epoch are not checked against a
// transaction coordinator's record (there is none). A non-empty
// transactional id is refused with INVALID_REQUEST: ferry has no
// transaction coordinator and advertises no transaction APIs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleInitProducerID(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		resp.ErrorCode = codeInvalidRequest
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
