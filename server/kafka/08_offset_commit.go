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
//
// ACLs: READ on the group (else GROUP_AUTHORIZATION_FAILED for every
// partition) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED for
// its partitions, which are not committed).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleOffsetCommit(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.OffsetCommitRequest)
	groupOK := s.authorizedGroup(ctx, auth.OpRead, r.Group)
	var refused []kmsg.OffsetCommitResponseTopic
	topics := r.Topics[:0:0]
	for _, t := range r.Topics {
		code := codeGroupAuthFailed
		if groupOK {
			if s.authorizedTopic(ctx, auth.OpRead, t.Topic) {
				topics = append(topics, t)
				continue
			}
			code = codeTopicAuthFailed
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		refused = append(refused, rt)
	}
	if len(refused) == 0 {
		return s.groups.HandleOffsetCommit(ctx, r)
	}
	r.Topics = topics
	var resp *kmsg.OffsetCommitResponse
	if len(topics) > 0 {
		resp = s.groups.HandleOffsetCommit(ctx, r)
	} else {
		resp = r.ResponseKind().(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
