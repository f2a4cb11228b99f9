package kafka

// DeleteGroups (key 42), versions 0–2.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v3 is not advertised.
//
// ACLs: DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDeleteGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.DeleteGroupsRequest)
	var refused []string
	groups := r.Groups[:0:0]
	for _, g := range r.Groups {
		if s.authorizedGroup(ctx, auth.OpDelete, g) {
			groups = append(groups, g)
		} else {
			refused = append(refused, g)
		}
	}
	if len(refused) == 0 {
		return s.groups.HandleDeleteGroups(ctx, r)
	}
	r.Groups = groups
	var resp *kmsg.DeleteGroupsResponse
	if len(groups) > 0 {
		resp = s.groups.HandleDeleteGroups(ctx, r)
	} else {
		resp = r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	}
	for _, g := range refused {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group, d.ErrorCode = g, codeGroupAuthFailed
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}
