package kafka

// ListGroups (key 16), versions 0–4.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v5 (KIP-848 type filter) is not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleListGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleListGroups(ctx, req.(*kmsg.ListGroupsRequest))
}
