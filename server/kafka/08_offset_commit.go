package kafka

// OffsetCommit (key 8), versions 2–9.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
// Versions 10+ (topic ids) are not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleOffsetCommit(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.groups.HandleOffsetCommit(ctx, req.(*kmsg.OffsetCommitRequest))
}
