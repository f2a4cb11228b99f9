package kafka

// DeleteRecords (key 21), versions 0–2.
//
// Moves each partition's log start offset (Broker.DeleteRecords, which
// persists it and drops whole segments below it); offset -1 means the high
// watermark. An offset above the high watermark is OFFSET_OUT_OF_RANGE.
// TimeoutMillis is not used: there are no replicas to wait for.
//
// ACLs: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDeleteRecords(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		allowed := s.authorizedTopic(ctx, auth.OpDelete, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			if !allowed {
				rp.ErrorCode, rp.LowWatermark = codeTopicAuthFailed, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			low, err := s.broker.DeleteRecords(t.Topic, p.Partition, p.Offset)
			if err != nil {
				rp.ErrorCode, rp.LowWatermark = errorCode(err), -1
			} else {
				rp.LowWatermark = low
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
