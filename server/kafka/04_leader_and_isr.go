package kafka

// LeaderAndIsr (key 4), versions 0–5, and StopReplica (key 5), versions
// 0–3 (and UpdateMetadata, 06_update_metadata.go): the controller's orders
// to a broker (Kafka's ZooKeeper-era
// inter-broker protocol). Served only by a broker of a cluster
// (Config.InterBroker); a single node does not advertise them and closes a
// connection that sends them, as for any API it does not serve.
//
// LeaderAndIsr: each partition state makes this broker lead the partition
// or follow its leader (found among LiveLeaders); an older controller
// epoch than one already heard is STALE_CONTROLLER_EPOCH for the whole
// request, an older leader epoch for one partition STALE_CONTROLLER_EPOCH
// for it, a partition this broker does not hold UNKNOWN_TOPIC_OR_PARTITION.
// StopReplica stops following the partitions. Deviation: its Delete flag
// does not remove the replica's files yet (topic deletion across a cluster
// comes with the next issue); they go when the topic is deleted.
//
// ACLs: CLUSTER_ACTION on the cluster (the controller's principal), else
// CLUSTER_AUTHORIZATION_FAILED; the same for StopReplica.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleLeaderAndIsr(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.LeaderAndISRRequest)
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	if !s.authorizedCluster(ctx, auth.OpClusterAction) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	states := req.PartitionStates // v0–v1
	topicIDs := map[string][16]byte{}
	for _, ts := range req.TopicStates { // v2+
		topicIDs[ts.Topic] = ts.TopicID
		for _, ps := range ts.PartitionStates {
			ps.Topic = ts.Topic
			states = append(states, ps)
		}
	}
	roles := make([]server.PartitionRole, len(states))
	for i, ps := range states {
		roles[i] = server.PartitionRole{Topic: ps.Topic, Partition: ps.Partition, Role: replication.Role{
			Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR, Replicas: ps.Replicas,
			ZkVersion: ps.ZKVersion, ControllerEpoch: ps.ControllerEpoch}}
	}
	leaders := make([]server.BrokerAddress, len(req.LiveLeaders))
	for i, l := range req.LiveLeaders {
		leaders[i] = server.BrokerAddress{ID: l.BrokerID, Host: l.Host, Port: l.Port}
	}
	errs, err := s.broker.ApplyLeaderAndIsr(req.ControllerEpoch, roles, leaders)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	byTopic := map[string]int{}
	for i, ps := range states {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition, rp.ErrorCode = ps.Topic, ps.Partition, errorCode(errs[i])
		if req.Version < 5 {
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		k, ok := byTopic[ps.Topic]
		if !ok {
			k = len(resp.Topics)
			byTopic[ps.Topic] = k
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = topicIDs[ps.Topic]
			resp.Topics = append(resp.Topics, rt)
		}
		resp.Topics[k].Partitions = append(resp.Topics[k].Partitions, rp)
	}
	return resp
}

func (s *Server) handleStopReplica(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.StopReplicaRequest)
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	if !s.authorizedCluster(ctx, auth.OpClusterAction) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	for _, t := range req.Topics {
		// v0–v2 delete every partition or none; v3 says it per partition.
		var stop, del []int32
		switch {
		case req.Version == 0:
			stop = []int32{t.Partition}
		case req.Version >= 3:
			for _, ps := range t.PartitionStates {
				if ps.Delete {
					del = append(del, ps.Partition)
				} else {
					stop = append(stop, ps.Partition)
				}
			}
		default:
			stop = t.Partitions
		}
		if req.Version < 3 && req.DeletePartitions {
			stop, del = nil, stop
		}
		for _, group := range []struct {
			parts  []int32
			delete bool
		}{{stop, false}, {del, true}} {
			if len(group.parts) == 0 {
				continue
			}
			errs, err := s.broker.StopReplicas(req.ControllerEpoch, t.Topic, group.parts, group.delete)
			if err != nil {
				resp.ErrorCode = errorCode(err)
				resp.Partitions = nil
				return resp
			}
			for i, part := range group.parts {
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition, rp.ErrorCode = t.Topic, part, errorCode(errs[i])
				resp.Partitions = append(resp.Partitions, rp)
			}
		}
	}
	return resp
}
