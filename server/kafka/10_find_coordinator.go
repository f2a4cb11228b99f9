package kafka

// FindCoordinator (key 10), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// This node coordinates every group; transaction coordinators (key type 1) are the coordinator's to refuse.
//
// ACLs: DESCRIBE on the group (or, for a transaction coordinator, the
// transactional id), else GROUP_AUTHORIZATION_FAILED
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for that key.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleFindCoordinator(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.FindCoordinatorRequest)
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
		return s.groups.HandleFindCoordinator(ctx, r)
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
		return s.groups.HandleFindCoordinator(ctx, r)
	}
	r.CoordinatorKeys = keys
	var resp *kmsg.FindCoordinatorResponse
	if len(keys) > 0 {
		resp = s.groups.HandleFindCoordinator(ctx, r)
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
