package kafka

// ListOffsets (key 2), versions 0–9.
//
// v0 answers a list of offsets (02_list_offsets_legacy.go). Timestamp -2
// is the log start offset, -1 the high watermark, or with IsolationLevel 1
// (read_committed, v2+) the last stable offset, below which a timestamp is
// then looked up too, as Kafka does; -3 (v7,
// KIP-734) the record with the largest timestamp, found by scanning batch
// headers; -4 (v8, earliest local offset) is the log start offset and -5
// (v9, latest tiered offset) is -1, as Kafka answers without remote
// storage. Any other value is the first record whose timestamp is at least
// it, or -1 with timestamp -1 when there is none, as Kafka answers. The
// leader epoch is the partition's (0 on one node); CurrentLeaderEpoch is
// checked (KIP-320). ACLs: DESCRIBE on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// Special timestamps beyond -1 (latest) and -2 (earliest).
const (
	offsetMaxTimestamp  = -3 // v7+, KIP-734
	offsetEarliestLocal = -4 // v8+, KIP-405
	offsetLatestTiered  = -5 // v9+, KIP-1005
)

func (s *Server) handleListOffsets(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		described := s.authorizedTopic(ctx, auth.OpDescribe, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if !described {
				rp.ErrorCode, rp.Offset, rp.Timestamp = codeTopicAuthFailed, -1, -1
			} else if req.Version == 0 {
				s.listOldStyleOffsets(t.Topic, &p, &rp)
			} else {
				s.listOffset(req.Version, req.Version >= 2 && req.IsolationLevel == 1, t.Topic, &p, &rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) listOffset(version int16, readCommitted bool, topic string, p *kmsg.ListOffsetsRequestTopicPartition, rp *kmsg.ListOffsetsResponseTopicPartition) {
	rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
	part, err := s.broker.Partition(topic, p.Partition)
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return
	}
	if code := checkLeaderEpoch(p.CurrentLeaderEpoch, part.LeaderEpoch()); code != 0 {
		rp.ErrorCode = code
		return
	}
	var offset, ts int64
	switch {
	case p.Timestamp == offsetMaxTimestamp:
		offset, ts, err = s.broker.MaxTimestampOffset(topic, p.Partition)
	case p.Timestamp == offsetEarliestLocal && version >= 8: // the whole log is local
		offset, ts, err = s.broker.ListOffset(topic, p.Partition, server.OffsetEarliest)
	case p.Timestamp == offsetLatestTiered && version >= 9: // nothing is tiered
		offset, ts = -1, -1
	default:
		offset, ts, err = s.broker.ListOffsetIsolated(topic, p.Partition, p.Timestamp, readCommitted)
	}
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return
	}
	rp.Offset, rp.Timestamp = offset, ts
	if offset >= 0 {
		rp.LeaderEpoch = part.LeaderEpoch()
	}
}
