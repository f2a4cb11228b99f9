package kafka

// CreateAcls (key 30), versions 0–3.
//
// Stores each creation (server/acl.Manager: the data dir's file on a
// single node, ZooKeeper on a cluster, whence every broker applies it);
// each gets its own result, as in Kafka. v0 creations are LITERAL.
// SECURITY_DISABLED when no authorizer is configured; the caller needs
// ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED); a binding with an
// ANY, MATCH or UNKNOWN field, an empty name, a CLUSTER not named
// kafka-cluster, a principal not Type:Name or a host neither * nor an IP
// is INVALID_REQUEST. Creating a binding that exists succeeds.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleCreateACLs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i].Default()
	}
	if code, msg := s.aclAdminAllowed(ctx, auth.OpAlter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return resp
	}
	bindings := make([]acl.Binding, 0, len(req.Creations))
	var at []int // at[k]: the creation bindings[k] came from
	for i, c := range req.Creations {
		p, err := auth.ParsePrincipal(c.Principal)
		if err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = codeInvalidRequest, errorMessage(err)
			continue
		}
		bindings = append(bindings, acl.Binding{
			Pattern: acl.Pattern{Type: auth.ResourceType(c.ResourceType), Name: c.ResourceName, PatternType: auth.PatternType(c.ResourcePatternType)},
			Entry:   acl.Entry{Principal: p, Host: c.Host, Operation: auth.Operation(c.Operation), Permission: auth.Permission(c.PermissionType)}})
		at = append(at, i)
	}
	for k, err := range s.cfg.ACLs.Create(bindings) {
		if err != nil {
			s.logger.Info("ACL not created", "binding", bindings[k].String(), "err", err)
			resp.Results[at[k]].ErrorCode, resp.Results[at[k]].ErrorMessage = aclErrorCode(err), errorMessage(err)
		}
	}
	return resp
}

// aclErrorCode is INVALID_REQUEST for what Kafka refuses as invalid,
// UNKNOWN_SERVER_ERROR for a store that failed.
func aclErrorCode(err error) int16 {
	if errors.Is(err, acl.ErrInvalid) {
		return codeInvalidRequest
	}
	return codeUnknownServerError
}

func wrapInvalid(err error) error { return fmt.Errorf("%w: %v", acl.ErrInvalid, err) }
