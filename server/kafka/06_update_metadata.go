package kafka

// UpdateMetadata (key 6), versions 0–7: the controller's description of
// the whole cluster (live brokers; every partition's leader, epoch, ISR,
// replicas, offline replicas), kept as the broker's cluster view
// (server/clusterview.go). Inter-broker: served only by a cluster's broker.
// A broker's address is its first endpoint (v1+) or its host and port
// (v0); every endpoint is kept, for answering each listener with its own.
//
// ACLs: CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleUpdateMetadata(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.UpdateMetadataRequest)
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if !s.authorizedCluster(ctx, auth.OpClusterAction) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	brokers := make([]server.ClusterBroker, 0, len(req.LiveBrokers))
	for _, lb := range req.LiveBrokers {
		cb := server.ClusterBroker{ID: lb.ID, Host: lb.Host, Port: lb.Port}
		if len(lb.Endpoints) > 0 {
			cb.Host, cb.Port = lb.Endpoints[0].Host, lb.Endpoints[0].Port
		}
		for _, e := range lb.Endpoints {
			name := e.ListenerName
			if name == "" { // v1–v2: the listener is named after its protocol
				name = auth.SecurityProtocol(e.SecurityProtocol).String()
			}
			cb.Endpoints = append(cb.Endpoints, server.Endpoint{Listener: name, Host: e.Host, Port: e.Port, Protocol: e.SecurityProtocol})
		}
		if lb.Rack != nil {
			cb.Rack = *lb.Rack
		}
		brokers = append(brokers, cb)
	}
	states := req.PartitionStates        // v0–v4
	for _, ts := range req.TopicStates { // v5+
		for _, ps := range ts.PartitionStates {
			ps.Topic = ts.Topic
			states = append(states, ps)
		}
	}
	parts := make(map[server.TopicPartition]server.PartitionView, len(states))
	for _, ps := range states {
		parts[server.TopicPartition{Topic: ps.Topic, Partition: ps.Partition}] = server.PartitionView{
			Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: ps.ISR, Replicas: ps.Replicas, Offline: ps.OfflineReplicas}
	}
	if err := s.broker.ApplyUpdateMetadata(req.ControllerID, req.ControllerEpoch, brokers, parts); err != nil {
		resp.ErrorCode = errorCode(err)
	}
	return resp
}
