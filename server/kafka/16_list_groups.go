package kafka

// ListGroups (key 16), versions 0–5.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v5's TypesFilter (KIP-848) is honoured by the coordinator: every ferry
// group is "classic".
//
// ACLs: every group with DESCRIBE on the cluster; otherwise only the
// groups the principal may DESCRIBE, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleListGroups(ctx context.Context, req kmsg.Request) kmsg.Response {
	resp := s.groups.HandleListGroups(ctx, req.(*kmsg.ListGroupsRequest))
	if s.authorizedCluster(ctx, auth.OpDescribe) {
		return resp
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if s.authorizedGroup(ctx, auth.OpDescribe, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	return resp
}
