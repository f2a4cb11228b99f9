package kafka

// DescribeCluster (key 60), versions 0–1.
//
// One broker, this node, which is also the controller. v1's EndpointType
// is answered with brokers whatever was asked (Kafka answers controllers
// only on KRaft controller listeners). Authorized operations are
// computed when asked for.
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
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = s.broker.BrokerID(), s.host, s.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOperations(ctx, auth.ResourceCluster, auth.ClusterName)
	}
	return resp
}
