package kafka

// AlterPartitionReassignments (key 45) and ListPartitionReassignments (key
// 46), version 0 each (KIP-455, as Kafka 3.9 serves them). Both go to the
// controller: another broker answers NOT_CONTROLLER and the admin client
// finds the controller in Metadata. A null replica list cancels the
// partition's reassignment. The answer comes once the topic znodes hold
// the new replica sets; the move itself goes on (ListPartitionReassignments
// shows it until the target replicas are in sync and the old ones gone).
//
// Both are the core's (server.Admin, used at this broker only); this file
// encodes them. A single node has one broker: a target of that broker
// alone changes nothing; any other is INVALID_REPLICA_ASSIGNMENT.
//
// ACLs: ALTER on the cluster to reassign, DESCRIBE to list, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func requestContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	if timeoutMillis > 0 {
		return context.WithTimeout(ctx, time.Duration(timeoutMillis)*time.Millisecond)
	}
	return context.WithCancel(ctx)
}

func (s *Server) handleAlterPartitionReassignments(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !s.authorizedCluster(ctx, auth.OpAlter) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	targets := map[controller.TopicPartition][]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			targets[controller.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Replicas
		}
	}
	ctx, cancel := requestContext(ctx, req.TimeoutMillis)
	defer cancel()
	results, err := s.admin.AlterReassignments(ctx, targets)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	for _, tp := range server.SortedPartitions(results) {
		i := len(resp.Topics) - 1
		if i < 0 || resp.Topics[i].Topic != tp.Topic {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i++
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = tp.Partition, errorCode(results[tp]), errorMessage(results[tp])
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

func (s *Server) handleListPartitionReassignments(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.authorizedCluster(ctx, auth.OpDescribe) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	ctx, cancel := requestContext(ctx, req.TimeoutMillis)
	defer cancel()
	moving, err := s.admin.Reassignments(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	wanted := func(controller.TopicPartition) bool { return true }
	if req.Topics != nil {
		asked := map[controller.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				asked[controller.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
		wanted = func(tp controller.TopicPartition) bool { return asked[tp] }
	}
	for _, tp := range server.SortedPartitions(moving) {
		if !wanted(tp) {
			continue
		}
		a := moving[tp]
		i := len(resp.Topics) - 1
		if i < 0 || resp.Topics[i].Topic != tp.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i++
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = tp.Partition, a.Replicas, a.Adding, a.Removing
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}
