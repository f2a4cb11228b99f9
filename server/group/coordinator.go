// Package group is ferry's consumer group coordinator. THIS FILE IS A STUB
// pinning the API the Kafka listener (server/kafka) codes against; the group
// coordinator work replaces it.
package group

import (
	"context"
	"errors"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// Config holds the coordinator's settings.
type Config struct {
	Logger *slog.Logger
}

// Coordinator runs every consumer group of this node.
type Coordinator struct {
	broker *server.Broker
}

// New loads committed offsets and starts the coordinator.
func New(b *server.Broker, cfg Config) (*Coordinator, error) {
	return &Coordinator{broker: b}, nil
}

// Close stops the coordinator's goroutines.
func (c *Coordinator) Close() error { return nil }

var errNotImplemented = errors.New("group coordinator not implemented")

// Each Handle method serves every version of its request (req.Version) and
// returns the response of the same version. The listener sets the version
// and the header; the coordinator fills the body.

func (c *Coordinator) HandleFindCoordinator(ctx context.Context, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.ErrorCode = 15 // COORDINATOR_NOT_AVAILABLE
	return resp
}

func (c *Coordinator) HandleJoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = 15
	return resp
}

func (c *Coordinator) HandleSyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = 15
	return resp
}

func (c *Coordinator) HandleHeartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = 15
	return resp
}

func (c *Coordinator) HandleLeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = 15
	return resp
}

func (c *Coordinator) HandleOffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return req.ResponseKind().(*kmsg.OffsetCommitResponse)
}

func (c *Coordinator) HandleOffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.ErrorCode = 15
	return resp
}

func (c *Coordinator) HandleDescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	return req.ResponseKind().(*kmsg.DescribeGroupsResponse)
}

func (c *Coordinator) HandleListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	return req.ResponseKind().(*kmsg.ListGroupsResponse)
}

func (c *Coordinator) HandleDeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	return req.ResponseKind().(*kmsg.DeleteGroupsResponse)
}

func (c *Coordinator) HandleOffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = 15
	return resp
}

var _ = errNotImplemented
