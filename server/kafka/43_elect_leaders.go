package kafka

// ElectLeaders (key 43), versions 0–2 (v0 is preferred elections only; v1
// adds the election type and a top-level error; v2 is flexible). Kafka
// sends it to the controller: another broker answers NOT_CONTROLLER and
// the admin client finds the controller in Metadata. A null topic list
// asks for every partition. The answer comes once the elections are
// written (Kafka waits likewise, up to the request's timeout).
//
// A single node answers every partition it holds ELECTION_NOT_NEEDED: its
// one replica is the preferred leader and leads.
//
// ACLs: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// ElectLeadersFunc is the controller driver's ElectLeaders.
type ElectLeadersFunc func(ctx context.Context, typ controller.ElectionType, partitions []controller.TopicPartition) (map[controller.TopicPartition]error, error)

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
	if typ != controller.PreferredElection && typ != controller.UncleanElection {
		return fail(fmt.Errorf("%w: unknown election type %d", server.ErrInvalidRequest, typ))
	}
	var results map[controller.TopicPartition]error
	if s.cfg.ElectLeaders == nil {
		results = s.singleNodeElections(parts)
	} else {
		if req.TimeoutMillis > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
			defer cancel()
		}
		var err error
		results, err = s.cfg.ElectLeaders(ctx, typ, parts)
		if err != nil {
			return fail(err)
		}
	}
	for _, tp := range sortedResults(results) {
		addElectionResult(resp, tp, results[tp])
	}
	return resp
}

func (s *Server) singleNodeElections(parts []controller.TopicPartition) map[controller.TopicPartition]error {
	out := map[controller.TopicPartition]error{}
	if parts == nil {
		for _, name := range s.broker.Topics() {
			n, err := s.broker.PartitionCount(name)
			if err != nil {
				continue
			}
			for p := int32(0); p < n; p++ {
				parts = append(parts, controller.TopicPartition{Topic: name, Partition: p})
			}
		}
	}
	for _, tp := range parts {
		if _, err := s.broker.Partition(tp.Topic, tp.Partition); err != nil {
			out[tp] = controller.ErrUnknownPartition
			continue
		}
		out[tp] = controller.ErrElectionNotNeeded
	}
	return out
}

func sortedResults[V any](m map[controller.TopicPartition]V) []controller.TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(a, b controller.TopicPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
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
