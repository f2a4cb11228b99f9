package kafka

// DescribeAcls (key 29), versions 0–3.
//
// Answers the bindings the filter selects (server/acl.Filter, Kafka's
// AclBindingFilter; v0 filters are LITERAL), grouped by resource pattern.
// SECURITY_DISABLED when no authorizer is configured; the caller needs
// DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); a filter with
// an UNKNOWN field or an unparsable principal is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeACLs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	code, msg := s.aclAdminAllowed(ctx, auth.OpDescribe)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp
	}
	f, err := aclFilter(int8(req.ResourceType), req.ResourceName, int8(req.ResourcePatternType), req.Principal,
		req.Host, int8(req.Operation), int8(req.PermissionType))
	var bs []acl.Binding
	if err == nil {
		bs, err = s.cfg.ACLs.Describe(f)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = aclErrorCode(err), errorMessage(err)
		return resp
	}
	for _, b := range bs { // sorted by pattern, so each pattern's run is contiguous
		n := len(resp.Resources)
		if n == 0 || !sameDescribedPattern(&resp.Resources[n-1], b.Pattern) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.PatternType)
			resp.Resources = append(resp.Resources, r)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = b.Entry.Principal.String(), b.Entry.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, e)
	}
	return resp
}

func sameDescribedPattern(r *kmsg.DescribeACLsResponseResource, p acl.Pattern) bool {
	return r.ResourceType == kmsg.ACLResourceType(p.Type) && r.ResourceName == p.Name &&
		r.ResourcePatternType == kmsg.ACLResourcePatternType(p.PatternType)
}

// aclAdminAllowed is the ACL APIs' common gate: ACLs on, and op on the
// cluster.
func (s *Server) aclAdminAllowed(ctx context.Context, op auth.Operation) (int16, *string) {
	if s.cfg.ACLs == nil {
		msg := "no authorizer is configured on the broker (authorizer.class.name)"
		return codeSecurityDisabled, &msg
	}
	if !s.authorizedCluster(ctx, op) {
		msg := auth.PrincipalFrom(ctx).String() + " may not " + op.String() + " the cluster"
		return codeClusterAuthFailed, &msg
	}
	return 0, nil
}

// aclFilter builds a filter from the wire's fields.
func aclFilter(typ int8, name *string, pattern int8, principal, host *string, op, perm int8) (acl.Filter, error) {
	f := acl.Filter{Type: auth.ResourceType(typ), Name: name, PatternType: auth.PatternType(pattern), Host: host,
		Operation: auth.Operation(op), Permission: auth.Permission(perm)}
	if principal != nil {
		p, err := auth.ParsePrincipal(*principal)
		if err != nil {
			return f, wrapInvalid(err)
		}
		f.Principal = &p
	}
	return f, f.Validate()
}
