package kafka

// DeleteAcls (key 31), versions 0–3.
//
// Removes, per filter, every binding the filter selects (Kafka's
// AclBindingFilter, MATCH included; v0 filters are LITERAL) and answers
// those it removed. SECURITY_DISABLED when no authorizer is configured;
// the caller needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED); a
// filter with an UNKNOWN field or an unparsable principal is
// INVALID_REQUEST, for that filter only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDeleteACLs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i].Default()
	}
	if code, msg := s.aclAdminAllowed(ctx, auth.OpAlter); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return resp
	}
	filters := make([]acl.Filter, 0, len(req.Filters))
	var at []int
	for i, f := range req.Filters {
		filter, err := aclFilter(int8(f.ResourceType), f.ResourceName, int8(f.ResourcePatternType), f.Principal,
			f.Host, int8(f.Operation), int8(f.PermissionType))
		if err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclErrorCode(err), errorMessage(err)
			continue
		}
		filters, at = append(filters, filter), append(at, i)
	}
	for k, d := range s.cfg.ACLs.Delete(filters) {
		r := &resp.Results[at[k]]
		if d.Err != nil {
			r.ErrorCode, r.ErrorMessage = aclErrorCode(d.Err), errorMessage(d.Err)
		}
		for _, b := range d.Bindings {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			m.Principal, m.Host = b.Entry.Principal.String(), b.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
	}
	return resp
}
