package kcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

// ACLSpec is what `ferry acls add|list|remove` was given, in
// kafka-acls.sh's terms: principals to allow or deny (from hosts), the
// operations, and the resources (each a type and a name) under one
// pattern type.
type ACLSpec struct {
	AllowPrincipals, DenyPrincipals []string
	AllowHosts, DenyHosts           []string
	Operations                      []string
	Resources                       []auth.Resource
	// PatternType: literal or prefixed for add; also any or match for
	// list and remove. Empty: literal (list without resources: all).
	PatternType string
}

// Bindings are the ACLs add creates: every principal × host × operation
// × resource (hosts default to *, operations to ALL).
func (s ACLSpec) Bindings() ([]acl.Binding, error) {
	pt, err := s.patternType(auth.PatternLiteral)
	if err != nil {
		return nil, err
	}
	if pt != auth.PatternLiteral && pt != auth.PatternPrefixed {
		return nil, errors.New("--resource-pattern-type: add takes literal or prefixed")
	}
	if len(s.Resources) == 0 {
		return nil, errors.New("name a resource: --topic, --group, --cluster, --transactional-id or --subject")
	}
	if len(s.AllowPrincipals)+len(s.DenyPrincipals) == 0 {
		return nil, errors.New("name a principal: --allow-principal or --deny-principal")
	}
	ops, err := s.operations(auth.OpAll)
	if err != nil {
		return nil, err
	}
	var out []acl.Binding
	for _, side := range []struct {
		principals, hosts []string
		perm              auth.Permission
	}{{s.AllowPrincipals, s.AllowHosts, auth.Allow}, {s.DenyPrincipals, s.DenyHosts, auth.Deny}} {
		hosts := side.hosts
		if len(hosts) == 0 {
			hosts = []string{auth.Wildcard}
		}
		for _, ps := range side.principals {
			p, err := auth.ParsePrincipal(ps)
			if err != nil {
				return nil, err
			}
			for _, r := range s.Resources {
				for _, h := range hosts {
					for _, op := range ops {
						out = append(out, acl.Binding{Pattern: acl.Pattern{Type: r.Type, Name: r.Name, PatternType: pt},
							Entry: acl.Entry{Principal: p, Host: h, Operation: op, Permission: side.perm}})
					}
				}
			}
		}
	}
	return out, nil
}

// Filters are what list and remove select: per resource (none: every
// resource), per principal given (none: any), per operation given (none:
// any), with the hosts given.
func (s ACLSpec) Filters() ([]acl.Filter, error) {
	pt, err := s.patternType(auth.PatternLiteral)
	if err != nil {
		return nil, err
	}
	ops, err := s.operations(auth.OpAny)
	if err != nil {
		return nil, err
	}
	sides, err := s.filterSides()
	if err != nil {
		return nil, err
	}
	var out []acl.Filter
	resources := s.Resources
	if len(resources) == 0 {
		resources = []auth.Resource{{Type: auth.ResourceAny}}
		if s.PatternType == "" {
			pt = auth.PatternAny
		}
	}
	for _, r := range resources {
		for _, sd := range sides {
			for _, op := range ops {
				f := acl.Filter{Type: r.Type, PatternType: pt, Principal: sd.principal, Host: sd.host,
					Operation: op, Permission: sd.perm}
				if r.Type != auth.ResourceAny {
					name := r.Name
					f.Name = &name
				}
				out = append(out, f)
			}
		}
	}
	return out, nil
}

type filterSide struct {
	principal *auth.Principal
	host      *string
	perm      auth.Permission
}

func (s ACLSpec) filterSides() ([]filterSide, error) {
	if len(s.AllowPrincipals)+len(s.DenyPrincipals) == 0 {
		return []filterSide{{perm: auth.PermissionAny}}, nil
	}
	var out []filterSide
	for _, side := range []struct {
		principals, hosts []string
		perm              auth.Permission
	}{{s.AllowPrincipals, s.AllowHosts, auth.Allow}, {s.DenyPrincipals, s.DenyHosts, auth.Deny}} {
		for _, ps := range side.principals {
			p, err := auth.ParsePrincipal(ps)
			if err != nil {
				return nil, err
			}
			if len(side.hosts) == 0 {
				out = append(out, filterSide{principal: &p, perm: side.perm})
			}
			for _, h := range side.hosts {
				out = append(out, filterSide{principal: &p, host: &h, perm: side.perm})
			}
		}
	}
	return out, nil
}

func (s ACLSpec) patternType(def auth.PatternType) (auth.PatternType, error) {
	if s.PatternType == "" {
		return def, nil
	}
	pt, err := acl.ParsePatternType(s.PatternType)
	if err != nil {
		return 0, fmt.Errorf("--resource-pattern-type: %w", err)
	}
	return pt, nil
}

func (s ACLSpec) operations(def auth.Operation) ([]auth.Operation, error) {
	if len(s.Operations) == 0 {
		return []auth.Operation{def}, nil
	}
	var out []auth.Operation
	for _, name := range s.Operations {
		op, err := auth.ParseOperation(name)
		if err != nil || op == auth.OpUnknown || op == auth.OpAny {
			return nil, fmt.Errorf("--operation %q: want one of Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All", name)
		}
		if !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	return out, nil
}

// CreateACLs sends CreateAcls and returns the first refusal.
func CreateACLs(ctx context.Context, r kmsg.Requestor, bs []acl.Binding) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceType(b.Pattern.Type), b.Pattern.Name
		c.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.PatternType)
		c.Principal, c.Host = b.Entry.Principal.String(), b.Entry.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(b.Entry.Operation), kmsg.ACLPermissionType(b.Entry.Permission)
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return err
	}
	var errs []error
	for i, res := range resp.Results {
		if err := kerrWithMessage(res.ErrorCode, res.ErrorMessage); err != nil && i < len(bs) {
			errs = append(errs, fmt.Errorf("%s: %w", bs[i], err))
		}
	}
	return errors.Join(errs...)
}

// DescribeACLs sends one DescribeAcls per filter and returns the bindings
// found, sorted and without duplicates.
func DescribeACLs(ctx context.Context, r kmsg.Requestor, fs []acl.Filter) ([]acl.Binding, error) {
	var out []acl.Binding
	for _, f := range fs {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName = kmsg.ACLResourceType(f.Type), f.Name
		req.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
		req.Principal, req.Host = principalString(f.Principal), f.Host
		req.Operation, req.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
		resp, err := req.RequestWith(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := kerrWithMessage(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return nil, err
		}
		for _, res := range resp.Resources {
			p := acl.Pattern{Type: auth.ResourceType(res.ResourceType), Name: res.ResourceName, PatternType: auth.PatternType(res.ResourcePatternType)}
			for _, e := range res.ACLs {
				b, err := describedBinding(p, e.Principal, e.Host, int8(e.Operation), int8(e.PermissionType))
				if err != nil {
					return nil, err
				}
				if !slices.Contains(out, b) {
					out = append(out, b)
				}
			}
		}
	}
	acl.SortBindings(out)
	return out, nil
}

// DeleteACLs sends DeleteAcls and returns the bindings removed.
func DeleteACLs(ctx context.Context, r kmsg.Requestor, fs []acl.Filter) ([]acl.Binding, error) {
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, f := range fs {
		df := kmsg.NewDeleteACLsRequestFilter()
		df.ResourceType, df.ResourceName = kmsg.ACLResourceType(f.Type), f.Name
		df.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
		df.Principal, df.Host = principalString(f.Principal), f.Host
		df.Operation, df.PermissionType = kmsg.ACLOperation(f.Operation), kmsg.ACLPermissionType(f.Permission)
		req.Filters = append(req.Filters, df)
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	var out []acl.Binding
	var errs []error
	for _, res := range resp.Results {
		if err := kerrWithMessage(res.ErrorCode, res.ErrorMessage); err != nil {
			errs = append(errs, err)
		}
		for _, m := range res.MatchingACLs {
			p := acl.Pattern{Type: auth.ResourceType(m.ResourceType), Name: m.ResourceName, PatternType: auth.PatternType(m.ResourcePatternType)}
			b, err := describedBinding(p, m.Principal, m.Host, int8(m.Operation), int8(m.PermissionType))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, b)
		}
	}
	acl.SortBindings(out)
	return out, errors.Join(errs...)
}

func describedBinding(p acl.Pattern, principal, host string, op, perm int8) (acl.Binding, error) {
	pr, err := auth.ParsePrincipal(principal)
	if err != nil {
		return acl.Binding{}, fmt.Errorf("broker answered a binding with principal %q: %w", principal, err)
	}
	return acl.Binding{Pattern: p, Entry: acl.Entry{Principal: pr, Host: host, Operation: auth.Operation(op), Permission: auth.Permission(perm)}}, nil
}

func principalString(p *auth.Principal) *string {
	if p == nil {
		return nil
	}
	s := p.String()
	return &s
}

func kerrWithMessage(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// WriteBindings prints bindings grouped by resource pattern, as
// kafka-acls.sh --list does.
func WriteBindings(w io.Writer, bs []acl.Binding) {
	WriteBindingsHeaded(w, "Current ACLs for resource", bs)
	if len(bs) == 0 {
		fmt.Fprintln(w, "No ACLs found.")
	}
}

// WriteBindingsHeaded prints bindings grouped by resource, each group
// under heading (kafka-acls.sh's "Adding ACLs for resource").
func WriteBindingsHeaded(w io.Writer, heading string, bs []acl.Binding) {
	var last *acl.Pattern
	for i := range bs {
		b := &bs[i]
		if last == nil || *last != b.Pattern {
			if last != nil {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s `ResourcePattern(resourceType=%s, name=%s, patternType=%s)`:\n",
				heading, b.Pattern.Type, b.Pattern.Name, acl.PatternTypeName(b.Pattern.PatternType))
			last = &b.Pattern
		}
		fmt.Fprintf(w, " \t(principal=%s, host=%s, operation=%s, permissionType=%s)\n",
			b.Entry.Principal, b.Entry.Host, b.Entry.Operation, acl.PermissionName(b.Entry.Permission))
	}
}
