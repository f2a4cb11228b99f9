package kafka

// OffsetFetch (key 9), versions 0–9.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v0 (ZooKeeper-stored offsets in Kafka) reads the one offset store like
// v1; v0–v1 report errors per partition, v2+ per group too.
// v8 carries several groups per request. v9's MemberID and MemberEpoch
// (KIP-848) are ignored, as Kafka does for classic groups (the only kind
// ferry has); v10 (topic ids) is not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleOffsetFetch(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleOffsetFetch(ctx, req.(*kmsg.OffsetFetchRequest))
}
