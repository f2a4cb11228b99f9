package kafka

// SyncGroup (key 14), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
//
// ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleSyncGroup(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.SyncGroupRequest)
	if !s.authorizedGroup(ctx, auth.OpRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.Default()
		resp.Version, resp.ErrorCode = r.Version, codeGroupAuthFailed
		return resp
	}
	return s.groups.HandleSyncGroup(ctx, r)
}
