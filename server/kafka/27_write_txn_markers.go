package kafka

// WriteTxnMarkers (key 27), versions 0–1.
//
// A transaction coordinator asks this broker, as the leader of each listed
// partition, to end a producer's transaction there with a commit or abort
// marker (Broker.WriteTxnMarkers: appended, then acknowledged by every
// in-sync replica). Each partition answers its own error: NOT_LEADER_OR_
// FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH (a marker
// older than the producer's epoch), TRANSACTION_COORDINATOR_FENCED (an
// older coordinator epoch than the last marker's), NOT_ENOUGH_REPLICAS,
// REQUEST_TIMED_OUT. Markers may go to internal topics (__consumer_offsets,
// for transactional offset commits), as in Kafka. The request carries no
// timeout: the wait for acks=all is the core's produce timeout.
//
// ACLs: CLUSTER_ACTION on the cluster (it is an inter-broker request), else
// CLUSTER_AUTHORIZATION_FAILED for every partition, as Kafka answers.
//
// A ferry coordinator adds to each marker entry (v1+) the tagged field
// server.TxnEpochTag: the epoch of the data the markers end, which lets
// the leader answer a resent marker of a transaction it closed already
// without ending the producer's next one (Broker.WriteTxnMarkers); and
// server.TxnProbeTag, which makes the entry a probe: nothing is written,
// and each partition answers CONCURRENT_TRANSACTIONS when the producer
// has a transaction open there, 0 when not (Broker.WriteTxnMarkers).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleWriteTxnMarkers(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.authorizedCluster(ctx, auth.OpClusterAction)
	var markers []server.TxnMarker
	for _, m := range req.Markers {
		var txnEpoch int16
		hasTxnEpoch, probe := false, false
		m.UnknownTags.Each(func(tag uint32, v []byte) {
			switch tag {
			case server.TxnEpochTag:
				txnEpoch, hasTxnEpoch = server.DecodeTxnEpochTag(v)
			case server.TxnProbeTag:
				probe = true
			}
		})
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				markers = append(markers, server.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
					Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch, Topic: t.Topic, Partition: p,
					TxnEpoch: txnEpoch, HasTxnEpoch: hasTxnEpoch, Probe: probe})
			}
		}
	}
	var errs []error
	if allowed {
		errs = s.broker.WriteTxnMarkers(ctx, markers)
	}
	k := 0
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if allowed {
					rp.ErrorCode = errorCode(errs[k])
				} else {
					rp.ErrorCode = codeClusterAuthFailed
				}
				k++
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
