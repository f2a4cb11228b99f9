package kafka

// DeleteTopics (key 20), versions 0–6 (v0–v3 are the same).
//
// Deletion is synchronous (the topic disappears at once, its files in the
// background), so TimeoutMillis is not used. v6 may name topics by id; a
// topic given both a name and an id is INVALID_REQUEST, an unknown id
// UNKNOWN_TOPIC_ID, as in Kafka. Internal topics (__consumer_offsets) are
// refused with INVALID_TOPIC_EXCEPTION: Kafka's broker deletes them and
// loses every committed offset, only its tools refuse; ferry refuses in
// the core, for both listeners.
//
// ACLs: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDeleteTopics(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	targets := req.Topics
	if req.Version < 6 {
		targets = make([]kmsg.DeleteTopicsRequestTopic, 0, len(req.TopicNames))
		for _, name := range req.TopicNames {
			targets = append(targets, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
	}
	for _, t := range targets {
		resp.Topics = append(resp.Topics, s.deleteTopic(ctx, t))
	}
	return resp
}

func (s *Server) deleteTopic(ctx context.Context, t kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
	rt := kmsg.NewDeleteTopicsResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	var name string
	switch {
	case t.Topic != nil && t.TopicID != [16]byte{}:
		rt.ErrorCode = codeInvalidRequest
		rt.ErrorMessage = errorMessage(fmt.Errorf("give a topic name or a topic id, not both"))
		return rt
	case t.Topic != nil:
		name = *t.Topic
	default:
		n, ok := s.broker.TopicByID(t.TopicID)
		if !ok {
			rt.ErrorCode = codeUnknownTopicID
			return rt
		}
		name = n
		rt.Topic = &n
	}
	if !s.authorizedTopic(ctx, auth.OpDelete, name) {
		if t.Topic == nil {
			rt.Topic = nil // a topic named by id keeps its name from who may not delete it
		}
		rt.ErrorCode = codeTopicAuthFailed
		return rt
	}
	id, _ := s.broker.TopicID(name)
	if err := s.broker.DeleteTopic(name); err != nil {
		rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
		return rt
	}
	rt.TopicID = id
	return rt
}
