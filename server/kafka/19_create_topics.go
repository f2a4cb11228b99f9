package kafka

// CreateTopics (key 19), versions 0–7 (v0 has no ValidateOnly).
//
// Topics are created synchronously, so TimeoutMillis is not used.
// ValidateOnly checks everything CreateTopic would and creates nothing.
// NumPartitions and ReplicationFactor of -1 take the broker defaults
// (num.partitions, default.replication.factor). A manual
// ReplicaAssignment must name partitions 0..n-1, each with the same number
// of distinct live brokers (else INVALID_REPLICA_ASSIGNMENT), and comes
// with NumPartitions and ReplicationFactor -1 (else INVALID_REQUEST), as in
// Kafka. A name twice in one request fails both (INVALID_REQUEST). v5+
// answers with the topic's partitions, replication factor and configs
// (source DYNAMIC_TOPIC_CONFIG for overrides, STATIC_BROKER_CONFIG for the
// broker's settings, DEFAULT_CONFIG otherwise),
// v7 with the topic id.
//
// ACLs: CREATE on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED for it.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleCreateTopics(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	clusterCreate := s.authorizedCluster(ctx, auth.OpCreate)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if !clusterCreate && !s.authorizedTopic(ctx, auth.OpCreate, t.Topic) {
			rt.ErrorCode = codeTopicAuthFailed
		} else if seen[t.Topic] > 1 {
			rt.ErrorCode = codeInvalidRequest
			rt.ErrorMessage = errorMessage(fmt.Errorf("topic %q appears %d times in the request", t.Topic, seen[t.Topic]))
		} else {
			s.createTopic(&t, req.ValidateOnly, &rt)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) createTopic(t *kmsg.CreateTopicsRequestTopic, validateOnly bool, rt *kmsg.CreateTopicsResponseTopic) {
	spec, code, err := s.topicSpec(t)
	if err == nil {
		if validateOnly {
			err = s.broker.ValidateTopicSpec(spec)
		} else {
			err = s.broker.CreateTopic(spec)
		}
		code = errorCode(err)
	}
	if err != nil {
		rt.ErrorCode, rt.ErrorMessage = code, errorMessage(err)
		return
	}
	if validateOnly {
		rt.NumPartitions, rt.ReplicationFactor = spec.Partitions, spec.ReplicationFactor
		if spec.Assignment != nil {
			rt.NumPartitions, rt.ReplicationFactor = int32(len(spec.Assignment)), int16(len(spec.Assignment[0]))
		}
		if rt.NumPartitions <= 0 {
			rt.NumPartitions = s.broker.Config().NumPartitions
		}
		if rt.ReplicationFactor <= 0 {
			rt.ReplicationFactor = s.broker.Config().DefaultReplicationFactor
		}
		return
	}
	info, err := s.broker.DescribeTopic(spec.Name)
	if err != nil {
		return // deleted meanwhile; the create itself succeeded
	}
	rt.TopicID, _ = s.broker.TopicID(spec.Name)
	rt.NumPartitions = int32(len(info.Partitions))
	rt.ReplicationFactor = info.ReplicationFactor
	for _, c := range info.Configs {
		rc := kmsg.NewCreateTopicsResponseTopicConfig()
		rc.Name, rc.Value = c.Name, &c.Value
		rc.Source = int8(configSource(c.Source))
		rt.Configs = append(rt.Configs, rc)
	}
}

// topicSpec turns a request topic into a core spec, checking what only
// the wire form can get wrong (assignments, null config values).
func (s *Server) topicSpec(t *kmsg.CreateTopicsRequestTopic) (server.TopicSpec, int16, error) {
	spec := server.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
	for _, c := range t.Configs {
		if c.Value == nil {
			return spec, codeInvalidRequest, fmt.Errorf("config %q has a null value", c.Name)
		}
		if spec.Configs == nil {
			spec.Configs = make(map[string]string, len(t.Configs))
		}
		spec.Configs[c.Name] = *c.Value
	}
	if len(t.ReplicaAssignment) == 0 {
		return spec, 0, nil
	}
	if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
		return spec, codeInvalidRequest, fmt.Errorf("a replica assignment comes with numPartitions and replicationFactor -1")
	}
	spec.Assignment = make([][]int32, len(t.ReplicaAssignment))
	for _, a := range t.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(spec.Assignment) || spec.Assignment[a.Partition] != nil {
			return spec, codeInvalidReplicaAssign, fmt.Errorf("partitions must be numbered 0..%d once each", len(spec.Assignment)-1)
		}
		if len(a.Replicas) == 0 {
			return spec, codeInvalidReplicaAssign, fmt.Errorf("partition %d has no replicas", a.Partition)
		}
		spec.Assignment[a.Partition] = a.Replicas
	}
	return spec, 0, nil
}

func configSource(source string) kmsg.ConfigSource {
	switch source {
	case server.SourceTopic:
		return kmsg.ConfigSourceDynamicTopicConfig
	case server.SourceBroker:
		return kmsg.ConfigSourceStaticBrokerConfig
	case server.SourceDynamicBroker:
		return kmsg.ConfigSourceDynamicBrokerConfig
	case server.SourceDynamicDefaultBroker:
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return kmsg.ConfigSourceDefaultConfig
}
