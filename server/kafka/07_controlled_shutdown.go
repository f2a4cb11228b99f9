package kafka

// ControlledShutdown (key 7), versions 1–3 (v0 has a header of its own,
// without a client id, which no broker since Kafka 0.9 sends): a broker about to stop asks
// the controller to move the leadership of its partitions away first, so
// a rolling restart costs clients no errors. Inter-broker: served by a
// cluster's broker; a broker that is not the controller answers
// NOT_CONTROLLER (the asker finds the controller in ZooKeeper again).
// The answer lists the partitions the broker still leads (no other ISR
// member could take them); the asker retries while it is not empty.
//
// ACLs: CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server/auth"
)

// ControlledShutdownFunc is the controller driver's ControlledShutdown.
type ControlledShutdownFunc func(ctx context.Context, broker int32, brokerEpoch int64) ([]controller.TopicPartition, error)

func (s *Server) handleControlledShutdown(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ControlledShutdownRequest)
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if !s.authorizedCluster(ctx, auth.OpClusterAction) {
		resp.ErrorCode = codeClusterAuthFailed
		return resp
	}
	if s.cfg.ControlledShutdown == nil {
		resp.ErrorCode = errorCode(controller.ErrNotController)
		return resp
	}
	epoch := req.BrokerEpoch
	if req.Version < 2 {
		epoch = -1
	}
	remaining, err := s.cfg.ControlledShutdown(ctx, req.BrokerID, epoch)
	resp.ErrorCode = errorCode(err)
	for _, tp := range remaining {
		pr := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		pr.Topic, pr.Partition = tp.Topic, tp.Partition
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, pr)
	}
	return resp
}
