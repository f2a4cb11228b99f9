package kafka

// Authorization on the Kafka listener. Each handler asks, in one place
// near its top, whether the request's principal (auth.PrincipalFrom, the
// connection's) from the client's host may do what the request asks,
// with the operation and resource Kafka's KafkaApis checks for that API,
// and answers Kafka's code when not:
// TOPIC_AUTHORIZATION_FAILED (29), GROUP_AUTHORIZATION_FAILED (30),
// CLUSTER_AUTHORIZATION_FAILED (31), TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (53). With no authorizer (ACLs off) every check passes without work.
//
// Inter-broker requests (a follower's Fetch, the controller's
// LeaderAndIsr, UpdateMetadata, StopReplica) arrive as User:ANONYMOUS on
// a PLAINTEXT listener: a secured cluster lists that principal (or the
// brokers' own, once they authenticate) in super.users, as Kafka's users
// do.

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server/auth"
)

var (
	codeTopicAuthFailed   = kerr.TopicAuthorizationFailed.Code
	codeGroupAuthFailed   = kerr.GroupAuthorizationFailed.Code
	codeClusterAuthFailed = kerr.ClusterAuthorizationFailed.Code
	codeTxnIDAuthFailed   = kerr.TransactionalIDAuthorizationFailed.Code
	codeSecurityDisabled  = kerr.SecurityDisabled.Code
)

// authorized reports whether the request in ctx may do op on the
// resource; always true when ACLs are off.
func (s *Server) authorized(ctx context.Context, op auth.Operation, typ auth.ResourceType, name string) bool {
	if s.allows(ctx, op, typ, name) {
		return true
	}
	// Kafka's authorizer logger names every denial; the audit log does,
	// once a minute for each (audit.go).
	s.auditDenied(ctx, auth.Action{Principal: auth.PrincipalFrom(ctx), Host: requestHost(ctx),
		Operation: op, Resource: auth.Resource{Type: typ, Name: name}})
	return false
}

// allows is authorized without the denial's log line.
func (s *Server) allows(ctx context.Context, op auth.Operation, typ auth.ResourceType, name string) bool {
	return s.authz == nil || s.authz.Authorize(ctx, auth.Action{Principal: auth.PrincipalFrom(ctx), Host: requestHost(ctx),
		Operation: op, Resource: auth.Resource{Type: typ, Name: name}})
}

// supportedOperations are the operations Kafka's authorized-operations
// fields report per resource type (AclEntry.supportedOperations).
var supportedOperations = map[auth.ResourceType][]auth.Operation{
	auth.ResourceTopic: {auth.OpRead, auth.OpWrite, auth.OpCreate, auth.OpDescribe, auth.OpDelete, auth.OpAlter,
		auth.OpDescribeConfigs, auth.OpAlterConfigs},
	auth.ResourceGroup: {auth.OpRead, auth.OpDescribe, auth.OpDelete},
	auth.ResourceCluster: {auth.OpCreate, auth.OpClusterAction, auth.OpDescribeConfigs, auth.OpAlterConfigs,
		auth.OpIdempotentWrite, auth.OpAlter, auth.OpDescribe},
}

// authorizedOperations is the bitfield (bit n: operation code n) of what
// the request's principal may do on the resource, for Metadata,
// DescribeGroups and DescribeCluster when the client asks; with ACLs off,
// every supported operation, as Kafka without an authorizer.
func (s *Server) authorizedOperations(ctx context.Context, typ auth.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[typ] {
		if s.allows(ctx, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}

func (s *Server) authorizedTopic(ctx context.Context, op auth.Operation, topic string) bool {
	return s.authorized(ctx, op, auth.ResourceTopic, topic)
}

func (s *Server) authorizedGroup(ctx context.Context, op auth.Operation, group string) bool {
	return s.authorized(ctx, op, auth.ResourceGroup, group)
}

func (s *Server) authorizedCluster(ctx context.Context, op auth.Operation) bool {
	return s.authorized(ctx, op, auth.ResourceCluster, auth.ClusterName)
}

// aclsOn reports whether an authorizer is set: the ACL APIs answer
// SECURITY_DISABLED otherwise, and some handlers skip filtering work.
func (s *Server) aclsOn() bool { return s.authz != nil }

// requestHost is the client's IP address as ACLs name hosts.
func requestHost(ctx context.Context) string {
	remote := requestClientFrom(ctx).remote
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
