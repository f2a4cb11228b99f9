package kafka

// DescribeCluster (key 60), versions 0–1.
//
// The brokers on the listener the request came on, as Metadata answers
// them: this node alone on a single node (which is also the controller),
// else the controller's view of the live brokers that have that listener.
// v1's EndpointType is answered with brokers whatever was asked (Kafka
// answers controllers only on KRaft controller listeners). Authorized
// operations are computed when asked for.
//
// ACLs: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeCluster(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if !s.authorizedCluster(ctx, auth.OpDescribe) {
		resp.ErrorCode, resp.ControllerID = codeClusterAuthFailed, -1
		return resp
	}
	resp.EndpointType = 1 // brokers
	resp.ClusterID = s.broker.ClusterID()
	resp.ControllerID = s.broker.BrokerID()
	listener := requestClientFrom(ctx).listener
	brokers := []kmsg.MetadataResponseBroker{s.brokerEntry(listener)}
	if view, ok := s.broker.Cluster(); ok {
		brokers, resp.ControllerID = clusterBrokers(view, listener), view.ControllerID
	}
	for _, mb := range brokers {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOperations(ctx, auth.ResourceCluster, auth.ClusterName)
	}
	return resp
}
