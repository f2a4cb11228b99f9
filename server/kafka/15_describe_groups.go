package kafka

// DescribeGroups (key 15), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v6 (KIP-848 error messages) is not advertised.
//
// ACLs: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it
// (describing has no effect, so the answer is filtered after the fact);
// authorized operations (v3+) are computed when asked for.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.DescribeGroupsRequest)
	resp := s.groups.HandleDescribeGroups(ctx, r)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if !s.authorizedGroup(ctx, auth.OpDescribe, g.Group) {
			denied := kmsg.NewDescribeGroupsResponseGroup()
			denied.Group, denied.ErrorCode = g.Group, codeGroupAuthFailed
			*g = denied
		} else if r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = s.authorizedOperations(ctx, auth.ResourceGroup, g.Group)
		}
	}
	return resp
}
