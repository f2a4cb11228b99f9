package kafka

// DescribeGroups (key 15), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v6 (KIP-848 error messages) is not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleDescribeGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleDescribeGroups(ctx, req.(*kmsg.DescribeGroupsRequest))
}
