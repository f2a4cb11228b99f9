package kafka

// OffsetCommit (key 8), versions 0–9.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// v0 commits carry no generation or member (they are taken as from outside
// any generation) and, where Kafka kept v0 offsets in ZooKeeper, go to the
// one offset store, so OffsetFetch of any version reads them; v1 adds the
// generation and member, v2–v4 a retention time that is ignored.
// Versions 10+ (topic ids) are not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleOffsetCommit(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleOffsetCommit(ctx, req.(*kmsg.OffsetCommitRequest))
}
