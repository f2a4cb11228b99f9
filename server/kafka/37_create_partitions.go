package kafka

// CreatePartitions (key 37), versions 0–3.
//
// Raises a topic's partition count (Broker.CreatePartitions); the count
// must grow. A manual assignment must give each new partition this broker
// as its only replica (INVALID_REPLICA_ASSIGNMENT otherwise). ValidateOnly
// checks without creating, including the broker's max.partitions budget
// (POLICY_VIOLATION). Internal topics are INVALID_TOPIC_EXCEPTION, as
// Kafka's tools refuse them. Synchronous: TimeoutMillis is not used. A topic
// named twice in one request fails both (INVALID_REQUEST), as in Kafka.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleCreatePartitions(_ context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var code int16
		err := s.checkPartitionAssignment(&t)
		if err != nil {
			code = codeInvalidReplicaAssign
		}
		if seen[t.Topic] > 1 {
			code, err = codeInvalidRequest, fmt.Errorf("topic %q appears %d times in the request", t.Topic, seen[t.Topic])
		}
		if err == nil {
			err = s.createPartitions(t.Topic, t.Count, req.ValidateOnly)
			code = errorCode(err)
		}
		rt.ErrorCode, rt.ErrorMessage = code, errorMessage(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) checkPartitionAssignment(t *kmsg.CreatePartitionsRequestTopic) error {
	for i, a := range t.Assignment {
		if len(a.Replicas) != 1 || a.Replicas[0] != s.broker.BrokerID() {
			return fmt.Errorf("new partition %d: replicas %v; the only broker is %d", i, a.Replicas, s.broker.BrokerID())
		}
	}
	return nil
}

func (s *Server) createPartitions(topic string, count int32, validateOnly bool) error {
	if validateOnly {
		return s.broker.ValidateCreatePartitions(topic, count)
	}
	return s.broker.CreatePartitions(topic, count)
}
