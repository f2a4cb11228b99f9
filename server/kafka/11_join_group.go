package kafka

// JoinGroup (key 11), versions 0–9.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener decodes, hands over who sent the request (the header's client
// id, which Kafka uses to name the member "<client.id>-<uuid>", and the
// peer's host, which DescribeGroups reports), sets the response version
// and encodes.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/group"
)

func (s *Server) handleJoinGroup(ctx context.Context, req kmsg.Request) kmsg.Response {
	rc := requestClientFrom(ctx)
	ctx = group.WithClient(ctx, rc.id, clientHost(rc.remote))
	return s.groups.HandleJoinGroup(ctx, req.(*kmsg.JoinGroupRequest))
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
