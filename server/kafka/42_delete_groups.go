package kafka

// DeleteGroups (key 42), versions 0–2.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v3 is not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleDeleteGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleDeleteGroups(ctx, req.(*kmsg.DeleteGroupsRequest))
}
