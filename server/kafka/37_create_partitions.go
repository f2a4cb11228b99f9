package kafka

// CreatePartitions (key 37), versions 0–3.
//
// Raises a topic's partition count (Broker.CreatePartitionsAssigned); the
// count must grow (INVALID_PARTITIONS). Without a manual assignment the
// new replicas continue the topic's assignment over the live brokers, as
// Kafka's do (INVALID_REPLICATION_FACTOR when there are too few); a manual
// one must give each new partition the topic's replication factor in live,
// distinct brokers (INVALID_REPLICA_ASSIGNMENT otherwise). ValidateOnly
// checks without creating, including the broker's max.partitions budget
// (POLICY_VIOLATION). Internal topics are INVALID_TOPIC_EXCEPTION, as
// Kafka's tools refuse them. Any broker takes the request, as Kafka 2.8's
// do with ZooKeeper: the topic znode is written at the version read, so a
// concurrent add elsewhere makes one of them INVALID_PARTITIONS. The answer
// comes once the assignment is recorded; leaders follow from the controller
// (TimeoutMillis is not used). A topic named twice in one request fails
// both (INVALID_REQUEST), as in Kafka.
//
// ACLs: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleCreatePartitions(ctx context.Context, kreq kmsg.Request) kmsg.Response {
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
		var err error
		if !s.authorizedTopic(ctx, auth.OpAlter, t.Topic) {
			code = codeTopicAuthFailed
		} else if seen[t.Topic] > 1 {
			code, err = codeInvalidRequest, fmt.Errorf("topic %q appears %d times in the request", t.Topic, seen[t.Topic])
		} else {
			err = s.createPartitions(t.Topic, t.Count, assignment(t.Assignment), req.ValidateOnly)
			code = errorCode(err)
		}
		rt.ErrorCode, rt.ErrorMessage = code, errorMessage(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// assignment is a request's manual assignment, nil when it gives none.
func assignment(as []kmsg.CreatePartitionsRequestTopicAssignment) [][]int32 {
	if len(as) == 0 {
		return nil
	}
	out := make([][]int32, len(as))
	for i, a := range as {
		out[i] = a.Replicas
	}
	return out
}

func (s *Server) createPartitions(topic string, count int32, assignment [][]int32, validateOnly bool) error {
	if validateOnly {
		return s.broker.ValidateCreatePartitions(topic, count, assignment)
	}
	return s.broker.CreatePartitionsAssigned(topic, count, assignment)
}
