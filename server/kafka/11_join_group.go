package kafka

// JoinGroup (key 11), versions 0–9.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener decodes, hands over who sent the request (the header's client
// id, which Kafka uses to name the member "<client.id>-<uuid>", and the
// peer's host, which DescribeGroups reports), sets the response version
// and encodes.
//
// ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"

	"github.com/ferry-mq/ferry/server/group"
)

func (s *Server) handleJoinGroup(ctx context.Context, req kmsg.Request) kmsg.Response {
	rc := requestClientFrom(ctx)
	ctx = group.WithClient(ctx, rc.id, clientHost(rc.remote))
	r := req.(*kmsg.JoinGroupRequest)
	if !s.authorizedGroup(ctx, auth.OpRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.Default()
		resp.Version, resp.ErrorCode, resp.Generation = r.Version, codeGroupAuthFailed, -1
		return resp
	}
	return s.groups.HandleJoinGroup(ctx, r)
}

// clientHost is a peer address as Kafka reports a member's host: the IP
// with a leading slash (Java's InetAddress.toString), e.g. "/127.0.0.1".
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if host == "" {
		return ""
	}
	return "/" + host
}
