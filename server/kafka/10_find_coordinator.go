package kafka

// FindCoordinator (key 10), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// server/group.Coordinator serves every version and owns the semantics
// (shared with the HTTP gateway's consumer API); the listener then
// answers the coordinator's endpoint on the listener the request came
// on, as Kafka does: a coordinator without that listener answers
// COORDINATOR_NOT_AVAILABLE (retriable).
// Transactional ids (key type 1) are server/txn.Coordinator's, when
// Config.Txns is set; without it they answer COORDINATOR_NOT_AVAILABLE.
// Both coordinators answer COORDINATOR_NOT_AVAILABLE rather than name
// this broker while it leads the key's partition but fenced itself (cut
// from ZooKeeper: server/ownership.Topic), as Metadata then names no
// leader.
//
// ACLs: DESCRIBE on the group (or, for a transaction coordinator, the
// transactional id), else GROUP_AUTHORIZATION_FAILED
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for that key.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleFindCoordinator(ctx context.Context, req kmsg.Request) kmsg.Response {
	resp := s.findAuthorizedCoordinators(ctx, req.(*kmsg.FindCoordinatorRequest))
	listener := requestClientFrom(ctx).listener
	view, _ := s.broker.Cluster()
	onListener := func(id *int32, host *string, port *int32, code *int16, msg **string) {
		if *code != 0 {
			return
		}
		h, p, ok := s.endpointOn(view, *id, listener)
		if !ok {
			text := "the coordinator has no endpoint on listener " + listener
			*id, *host, *port, *code, *msg = -1, "", -1, kerr.CoordinatorNotAvailable.Code, &text
			return
		}
		*host, *port = h, p
	}
	for i := range resp.Coordinators {
		c := &resp.Coordinators[i]
		onListener(&c.NodeID, &c.Host, &c.Port, &c.ErrorCode, &c.ErrorMessage)
	}
	if len(resp.Coordinators) == 0 {
		onListener(&resp.NodeID, &resp.Host, &resp.Port, &resp.ErrorCode, &resp.ErrorMessage)
	}
	return resp
}

// findAuthorizedCoordinators asks the coordinator for the keys the
// principal may DESCRIBE and answers the others refused.
func (s *Server) findAuthorizedCoordinators(ctx context.Context, r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	typ, denied := auth.ResourceGroup, codeGroupAuthFailed
	if r.CoordinatorType == 1 {
		typ, denied = auth.ResourceTransactionalID, codeTxnIDAuthFailed
	}
	if r.Version < 4 {
		if !s.authorized(ctx, auth.OpDescribe, typ, r.CoordinatorKey) {
			resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
			resp.Default()
			resp.Version, resp.ErrorCode, resp.NodeID, resp.Port = r.Version, denied, -1, -1
			return resp
		}
		return s.lookupCoordinators(ctx, r)
	}
	var refused []string
	keys := r.CoordinatorKeys[:0:0]
	for _, k := range r.CoordinatorKeys {
		if s.authorized(ctx, auth.OpDescribe, typ, k) {
			keys = append(keys, k)
		} else {
			refused = append(refused, k)
		}
	}
	if len(refused) == 0 {
		return s.lookupCoordinators(ctx, r)
	}
	r.CoordinatorKeys = keys
	var resp *kmsg.FindCoordinatorResponse
	if len(keys) > 0 {
		resp = s.lookupCoordinators(ctx, r)
	} else {
		resp = r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	}
	for _, k := range refused {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, denied
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// lookupCoordinators sends transactional ids to the transaction
// coordinator, groups to the group coordinator.
func (s *Server) lookupCoordinators(ctx context.Context, r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	if r.CoordinatorType == 1 && s.cfg.Txns != nil {
		return s.cfg.Txns.HandleFindCoordinator(r)
	}
	return s.groups.HandleFindCoordinator(ctx, r)
}
