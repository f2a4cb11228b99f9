package kafka

// FindCoordinator (key 10), versions 0–5 (v5 only allows the
// TRANSACTION_ABORTABLE error, KIP-890, which ferry never returns).
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// This node coordinates every group; transaction coordinators (key type 1) are the coordinator's to refuse.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleFindCoordinator(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleFindCoordinator(ctx, req.(*kmsg.FindCoordinatorRequest))
}
