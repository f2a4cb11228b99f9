package kafka

// OffsetForLeaderEpoch (key 23), versions 0–4.
//
// A single node has one leader epoch per partition (0), so the epoch
// history is that one entry: asking for the current epoch gives the log
// end offset; any other epoch gives UNDEFINED (epoch -1, offset -1), as
// Kafka answers for an epoch above its latest or below its first.
// CurrentLeaderEpoch (v2+) is checked as in Kafka (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleOffsetForLeaderEpoch(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			part, err := s.broker.Partition(t.Topic, p.Partition)
			switch {
			case err != nil:
				rp.ErrorCode = errorCode(err)
			case checkLeaderEpoch(p.CurrentLeaderEpoch, part.LeaderEpoch()) != 0:
				rp.ErrorCode = checkLeaderEpoch(p.CurrentLeaderEpoch, part.LeaderEpoch())
			case p.LeaderEpoch == part.LeaderEpoch():
				rp.LeaderEpoch, rp.EndOffset = part.LeaderEpoch(), part.LogEndOffset()
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
