package kafka

// ListGroups (key 16), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v5's TypesFilter (KIP-848) is honoured by the coordinator: every ferry
// group is "classic".

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleListGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleListGroups(ctx, req.(*kmsg.ListGroupsRequest))
}
