package cluster

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// unknownBrokerEpoch goes on the wire as the broker epoch: the driver's
// broker epochs are registration timestamps, not the czxid Kafka's
// brokers compare theirs with (see Config), and -1 is the protocol's
// "unknown", which a broker does not check.
const unknownBrokerEpoch = -1

// queued is a request waiting in a broker's queue: one of the
// controller's Send actions, encoded when it is sent.
type queued interface {
	kind() string
	// merge folds next (queued after it) into this request when the two
	// together say exactly what the broker would have learnt from both in
	// order; false leaves both.
	merge(next queued) bool
	request(controllerID int32, listener string) kmsg.Request
	key() int16
	version() int16
}

type leaderAndIsr struct{ controller.SendLeaderAndIsr }

type updateMetadata struct{ controller.SendUpdateMetadata }

// stopReplica is a StopReplica; answered, when set (deletions), hears the
// broker's answer.
type stopReplica struct {
	controller.SendStopReplica
	answered func(broker, controllerEpoch int32, resp *kmsg.StopReplicaResponse)
}

func (leaderAndIsr) key() int16       { return kmsg.LeaderAndISR.Int16() }
func (updateMetadata) key() int16     { return kmsg.UpdateMetadata.Int16() }
func (stopReplica) key() int16        { return kmsg.StopReplica.Int16() }
func (leaderAndIsr) version() int16   { return leaderAndIsrVersion }
func (updateMetadata) version() int16 { return updateMetadataVersion }
func (stopReplica) version() int16    { return stopReplicaVersion }

func (leaderAndIsr) kind() string   { return "LeaderAndIsr" }
func (updateMetadata) kind() string { return "UpdateMetadata" }
func (stopReplica) kind() string    { return "StopReplica" }

// A later state of a partition supersedes an earlier one: the broker
// applies each state whole, so only the last counts.
func (r *leaderAndIsr) merge(next queued) bool {
	n, ok := next.(*leaderAndIsr)
	if !ok || n.ControllerEpoch != r.ControllerEpoch {
		return false
	}
	r.Partitions = mergePartitions(r.Partitions, n.Partitions)
	for _, l := range n.Leaders {
		i := slices.IndexFunc(r.Leaders, func(b controller.Broker) bool { return b.ID == l.ID })
		if i < 0 {
			r.Leaders = append(r.Leaders, l)
		} else {
			r.Leaders[i] = l
		}
	}
	return true
}

func (r *updateMetadata) merge(next queued) bool {
	n, ok := next.(*updateMetadata)
	if !ok || n.ControllerEpoch != r.ControllerEpoch {
		return false
	}
	r.Partitions = mergePartitions(r.Partitions, n.Partitions)
	r.LiveBrokers = n.LiveBrokers
	return true
}

func (r *stopReplica) merge(next queued) bool {
	n, ok := next.(*stopReplica)
	if !ok || n.ControllerEpoch != r.ControllerEpoch || n.Delete != r.Delete {
		return false
	}
	for _, tp := range n.Partitions {
		if !slices.Contains(r.Partitions, tp) {
			r.Partitions = append(r.Partitions, tp)
		}
	}
	return true
}

// mergePartitions copies before writing: the slices came from the
// controller's actions, which the driver does not own.
func mergePartitions(old, later []controller.PartitionInfo) []controller.PartitionInfo {
	out := slices.Clone(old)
	for _, p := range later {
		i := slices.IndexFunc(out, func(o controller.PartitionInfo) bool { return o.Partition == p.Partition })
		if i < 0 {
			out = append(out, p)
			continue
		}
		// The broker never heard the earlier state: for it the partition
		// is still as new as the earlier request said.
		p.IsNew = p.IsNew || out[i].IsNew
		out[i] = p
	}
	return out
}

func (r *leaderAndIsr) request(controllerID int32, listener string) kmsg.Request {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(leaderAndIsrVersion)
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = controllerID, r.ControllerEpoch, unknownBrokerEpoch
	byTopic := map[string]int{}
	for _, p := range r.Partitions {
		k := wire.TopicSlot(byTopic, &req.TopicStates, p.Partition.Topic, func(topic string) kmsg.LeaderAndISRRequestTopicState {
			ts := kmsg.NewLeaderAndISRRequestTopicState()
			ts.Topic = topic
			return ts
		})
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch = p.Partition.Partition, p.State.ControllerEpoch
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion = p.State.Leader, p.State.LeaderEpoch, p.State.ISR, p.State.ZkVersion
		ps.Replicas, ps.AddingReplicas, ps.RemovingReplicas, ps.IsNew = p.Replicas, p.Adding, p.Removing, p.IsNew
		req.TopicStates[k].PartitionStates = append(req.TopicStates[k].PartitionStates, ps)
	}
	for _, l := range r.Leaders {
		host, port := endpoint(l, listener)
		req.LiveLeaders = append(req.LiveLeaders, kmsg.LeaderAndISRRequestLiveLeader{BrokerID: l.ID, Host: host, Port: port})
	}
	return req
}

func (r *updateMetadata) request(controllerID int32, listener string) kmsg.Request {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.SetVersion(updateMetadataVersion)
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = controllerID, r.ControllerEpoch, unknownBrokerEpoch
	byTopic := map[string]int{}
	for _, p := range r.Partitions {
		k := wire.TopicSlot(byTopic, &req.TopicStates, p.Partition.Topic, func(topic string) kmsg.UpdateMetadataRequestTopicState {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic = topic
			return ts
		})
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.ControllerEpoch = p.Partition.Partition, p.State.ControllerEpoch
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion = p.State.Leader, p.State.LeaderEpoch, p.State.ISR, p.State.ZkVersion
		ps.Replicas, ps.OfflineReplicas = p.Replicas, p.Offline
		req.TopicStates[k].PartitionStates = append(req.TopicStates[k].PartitionStates, ps)
	}
	for _, b := range r.LiveBrokers {
		req.LiveBrokers = append(req.LiveBrokers, liveBroker(b, listener))
	}
	return req
}

func liveBroker(b controller.Broker, listener string) kmsg.UpdateMetadataRequestLiveBroker {
	lb := kmsg.NewUpdateMetadataRequestLiveBroker()
	lb.ID = b.ID
	lb.Host, lb.Port = endpoint(b, listener)
	if b.Rack != "" {
		lb.Rack = kmsg.StringPtr(b.Rack)
	}
	eps, _ := b.Endpoints.([]zookeeper.Endpoint)
	for _, e := range eps {
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = e.Host, int32(e.Port), e.Listener
		ep.SecurityProtocol = securityProtocols[e.SecurityProtocol]
		lb.Endpoints = append(lb.Endpoints, ep)
	}
	return lb
}

// securityProtocols are Kafka's SecurityProtocol ids.
var securityProtocols = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// endpoint is the broker's address on listener ("": its first endpoint),
// the one LiveLeaders and UpdateMetadata's host and port carry: the
// inter-broker listener, which followers fetch from.
func endpoint(b controller.Broker, listener string) (string, int32) {
	eps, _ := b.Endpoints.([]zookeeper.Endpoint)
	for _, e := range eps {
		if listener == "" || e.Listener == listener {
			return e.Host, int32(e.Port)
		}
	}
	return "", -1
}

// StopReplica v3 carries a leader epoch per partition; -1 (Kafka's
// NoEpoch) asks the broker not to compare it, as the controller does not
// carry one in SendStopReplica.
func (r *stopReplica) request(controllerID int32, listener string) kmsg.Request {
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(stopReplicaVersion)
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = controllerID, r.ControllerEpoch, unknownBrokerEpoch
	byTopic := map[string]int{}
	for _, tp := range r.Partitions {
		k := wire.TopicSlot(byTopic, &req.Topics, tp.Topic, func(topic string) kmsg.StopReplicaRequestTopic {
			t := kmsg.NewStopReplicaRequestTopic()
			t.Topic = topic
			return t
		})
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition, ps.LeaderEpoch, ps.Delete = tp.Partition, -1, r.Delete
		req.Topics[k].PartitionStates = append(req.Topics[k].PartitionStates, ps)
	}
	return req
}

type responseError struct {
	what string
	code int16
}

// responseErrors lists the non-zero error codes of a controller request's
// answer: the whole request's, then each partition's.
func responseErrors(resp kmsg.Response) []responseError {
	var out []responseError
	add := func(what string, code int16) {
		if code != 0 {
			out = append(out, responseError{what, code})
		}
	}
	switch r := resp.(type) {
	case *kmsg.LeaderAndISRResponse:
		add("request", r.ErrorCode)
		for _, p := range r.Partitions {
			add(p.Topic+"-"+strconv.Itoa(int(p.Partition)), p.ErrorCode)
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add("topic id partition "+strconv.Itoa(int(p.Partition)), p.ErrorCode)
			}
		}
	case *kmsg.UpdateMetadataResponse:
		add("request", r.ErrorCode)
	case *kmsg.StopReplicaResponse:
		add("request", r.ErrorCode)
		for _, p := range r.Partitions {
			add(p.Topic+"-"+strconv.Itoa(int(p.Partition)), p.ErrorCode)
		}
	}
	return out
}
