package kafka

// ElectLeaders (key 43), versions 0–2 (v0 is preferred elections only; v1
// adds the election type and a top-level error; v2 is flexible). Kafka
// sends it to the controller: another broker answers NOT_CONTROLLER and
// the admin client finds the controller in Metadata. A null topic list
// asks for every partition. The answer comes once the elections are
// written (Kafka waits likewise, up to the request's timeout).
//
// The election itself is the core's (server.Admin, used at this broker
// only); this file encodes it. A single node answers every partition it
// holds ELECTION_NOT_NEEDED: its one replica is the preferred leader and
// leads.
//
// ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleElectLeaders(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := controller.PreferredElection
	if req.Version >= 1 {
		typ = controller.ElectionType(req.ElectionType)
	}
	var parts []controller.TopicPartition // nil: all
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, controller.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	if req.Topics != nil && parts == nil {
		parts = []controller.TopicPartition{}
	}
	fail := func(err error) kmsg.Response {
		code := errorCode(err)
		if req.Version >= 1 {
			resp.ErrorCode = code
			return resp
		}
		for _, tp := range parts { // v0 has no top-level error
			addElectionResult(resp, tp, err)
		}
		return resp
	}
	if !s.authorizedCluster(ctx, auth.OpAlter) {
		if req.Version >= 1 {
			resp.ErrorCode = codeClusterAuthFailed
			return resp
		}
		fail(server.ErrInvalidRequest)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode, resp.Topics[i].Partitions[j].ErrorMessage = codeClusterAuthFailed, nil
			}
		}
		return resp
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	results, err := s.admin.ElectLeaders(ctx, typ, parts)
	if err != nil {
		return fail(err)
	}
	for _, tp := range server.SortedPartitions(results) {
		addElectionResult(resp, tp, results[tp])
	}
	return resp
}

func addElectionResult(resp *kmsg.ElectLeadersResponse, tp controller.TopicPartition, err error) {
	i := len(resp.Topics) - 1
	if i < 0 || resp.Topics[i].Topic != tp.Topic {
		r := kmsg.NewElectLeadersResponseTopic()
		r.Topic = tp.Topic
		resp.Topics = append(resp.Topics, r)
		i++
	}
	pr := kmsg.NewElectLeadersResponseTopicPartition()
	pr.Partition, pr.ErrorCode, pr.ErrorMessage = tp.Partition, errorCode(err), errorMessage(err)
	resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, pr)
}
