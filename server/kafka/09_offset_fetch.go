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
//
// ACLs: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on
// each topic: a named one answers TOPIC_AUTHORIZATION_FAILED, and
// fetching every topic leaves it out, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleOffsetFetch(ctx context.Context, req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.OffsetFetchRequest)
	if !s.aclsOn() {
		return s.groups.HandleOffsetFetch(ctx, r)
	}
	if r.Version < 8 && !s.authorizedGroup(ctx, auth.OpDescribe, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = codeGroupAuthFailed
		for _, t := range r.Topics { // v0–v1 have no top-level code
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, codeGroupAuthFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	// Fetching offsets has no effect: the answer is filtered after the fact.
	resp := s.groups.HandleOffsetFetch(ctx, r)
	if r.Version < 8 {
		resp.Topics = s.describedOffsetTopics(ctx, resp.Topics, r.Topics == nil)
		return resp
	}
	allTopics := make(map[string]bool, len(r.Groups))
	for _, g := range r.Groups {
		allTopics[g.Group] = g.Topics == nil
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if !s.authorizedGroup(ctx, auth.OpDescribe, g.Group) {
			g.Topics, g.ErrorCode = nil, codeGroupAuthFailed
			continue
		}
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if s.authorizedTopic(ctx, auth.OpDescribe, t.Topic) {
				kept = append(kept, t)
			} else if !allTopics[g.Group] {
				for j := range t.Partitions {
					t.Partitions[j].Offset, t.Partitions[j].Metadata, t.Partitions[j].ErrorCode = -1, nil, codeTopicAuthFailed
				}
				kept = append(kept, t)
			}
		}
		g.Topics = kept
	}
	return resp
}

// describedOffsetTopics leaves out (all) or marks TOPIC_AUTHORIZATION_FAILED
// (named) the topics the principal may not DESCRIBE.
func (s *Server) describedOffsetTopics(ctx context.Context, topics []kmsg.OffsetFetchResponseTopic, all bool) []kmsg.OffsetFetchResponseTopic {
	kept := topics[:0]
	for _, t := range topics {
		if s.authorizedTopic(ctx, auth.OpDescribe, t.Topic) {
			kept = append(kept, t)
			continue
		}
		if all {
			continue
		}
		for j := range t.Partitions {
			t.Partitions[j].Offset, t.Partitions[j].Metadata, t.Partitions[j].ErrorCode = -1, nil, codeTopicAuthFailed
		}
		kept = append(kept, t)
	}
	return kept
}
