package kafka

// LeaveGroup (key 13), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleLeaveGroup(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleLeaveGroup(ctx, req.(*kmsg.LeaveGroupRequest))
}
