package kafka

// OffsetDelete (key 47), versions 0.
//
// A thin pass-through: server/group.Coordinator serves every version and
// owns the semantics (shared with the HTTP gateway's consumer API); the
// listener only decodes, sets the response version and encodes.
//
// ACLs: DELETE on the group (else GROUP_AUTHORIZATION_FAILED) and READ
// on each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleOffsetDelete(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.OffsetDeleteRequest)
	if !s.authorizedGroup(ctx, auth.OpDelete, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = codeGroupAuthFailed
		return resp
	}
	var refused []kmsg.OffsetDeleteResponseTopic
	topics := r.Topics[:0:0]
	for _, t := range r.Topics {
		if s.authorizedTopic(ctx, auth.OpRead, t.Topic) {
			topics = append(topics, t)
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: codeTopicAuthFailed})
		}
		refused = append(refused, rt)
	}
	r.Topics = topics
	resp := s.groups.HandleOffsetDelete(ctx, r)
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
