package kafka

// OffsetForLeaderEpoch (key 23), versions 0–4.
//
// Answered from the partition's leader-epoch history (KIP-101, KIP-279;
// replication/epoch): the largest epoch not above the one asked and where
// the next starts, the log end for the current epoch, UNDEFINED (epoch -1,
// offset -1) above the latest. CurrentLeaderEpoch (v2+) is checked as in
// Kafka (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); a broker that does
// not lead the partition answers NOT_LEADER_OR_FOLLOWER.
//
// ACLs: a follower (replica id set) needs CLUSTER_ACTION on the cluster,
// a consumer DESCRIBE on the topic; else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleOffsetForLeaderEpoch(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	follower := req.Version >= 3 && req.ReplicaID >= 0
	followerOK := follower && s.authorizedCluster(ctx, auth.OpClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		allowed := followerOK || !follower && s.authorizedTopic(ctx, auth.OpDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			if !allowed {
				rp.ErrorCode = codeTopicAuthFailed
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			current := p.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1 // not in the request
			}
			end, err := s.broker.EndOffsetForEpoch(t.Topic, p.Partition, current, p.LeaderEpoch)
			if err != nil {
				rp.ErrorCode = errorCode(err)
			} else {
				rp.LeaderEpoch, rp.EndOffset = end.Epoch, end.Offset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
