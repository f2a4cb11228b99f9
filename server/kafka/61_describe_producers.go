package kafka

// DescribeProducers (key 61), version 0.
//
// Lists the idempotent producers each partition remembers (the state the
// core keeps for duplicate detection, per partition; after a restart it
// comes from the partition's newest snapshot file plus the log after
// it), with the coordinator epoch of each one's last transaction marker
// and the first offset of its ongoing transaction there (-1: none), as
// kafka-transactions.sh find-hanging reads them.
//
// ACLs: READ on the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeProducers(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		allowed := s.authorizedTopic(ctx, auth.OpRead, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if !allowed {
				rp.ErrorCode = codeTopicAuthFailed
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			states, err := s.broker.Producers(t.Topic, p)
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			}
			for _, st := range states {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = st.ProducerID, int32(st.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = st.LastSequence, st.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = st.CoordinatorEpoch, st.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
