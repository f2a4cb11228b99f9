package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/ferry-mq/ferry/server/auth"
)

// ErrInvalid marks a binding or filter Kafka refuses with INVALID_REQUEST.
var ErrInvalid = errors.New("invalid ACL")

// Pattern is a resource pattern: a type, a name and whether the name is
// the resource's own (LITERAL; "*" names every resource of the type) or a
// prefix of it (PREFIXED).
type Pattern struct {
	Type        auth.ResourceType
	Name        string
	PatternType auth.PatternType
}

func (p Pattern) String() string {
	return fmt.Sprintf("%s:%s:%s", p.Type, patternTypeName(p.PatternType), p.Name)
}

// Entry is what a binding grants or refuses, and to whom.
type Entry struct {
	Principal  auth.Principal
	Host       string
	Operation  auth.Operation
	Permission auth.Permission
}

// Binding is one ACL: an entry on a pattern.
type Binding struct {
	Pattern Pattern
	Entry   Entry
}

func (b Binding) String() string {
	return fmt.Sprintf("%s %s %s from %s on %s", b.Entry.Principal, permissionName(b.Entry.Permission),
		b.Entry.Operation, b.Entry.Host, b.Pattern)
}

// Validate applies Kafka's checks on a binding to create: every field
// definite (no ANY, MATCH or UNKNOWN), a non-empty name, the cluster named
// kafka-cluster, a principal of the form Type:Name and a host that is "*"
// or an IP address.
func (b Binding) Validate() error {
	p, e := b.Pattern, b.Entry
	switch {
	case !definiteResourceType(p.Type):
		return fmt.Errorf("%w: resource type %s", ErrInvalid, p.Type)
	case p.PatternType != auth.PatternLiteral && p.PatternType != auth.PatternPrefixed:
		return fmt.Errorf("%w: pattern type %s: want LITERAL or PREFIXED", ErrInvalid, patternTypeName(p.PatternType))
	case p.Name == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	case p.Type == auth.ResourceCluster && p.Name != auth.ClusterName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalid, auth.ClusterName)
	case e.Principal.Type == "" || e.Principal.Name == "":
		return fmt.Errorf("%w: principal %q: want Type:Name, like User:alice", ErrInvalid, e.Principal)
	case !definiteOperation(e.Operation):
		return fmt.Errorf("%w: operation %s", ErrInvalid, e.Operation)
	case e.Permission != auth.Allow && e.Permission != auth.Deny:
		return fmt.Errorf("%w: permission type %s: want ALLOW or DENY", ErrInvalid, permissionName(e.Permission))
	}
	return validHost(e.Host)
}

func validHost(h string) error {
	if h == auth.Wildcard {
		return nil
	}
	if _, err := netip.ParseAddr(h); err != nil {
		return fmt.Errorf("%w: host %q: want * or an IP address", ErrInvalid, h)
	}
	return nil
}

func definiteResourceType(t auth.ResourceType) bool {
	_, known := resourceKafkaNames[t]
	return known
}

func definiteOperation(o auth.Operation) bool {
	return o >= auth.OpAll && o <= auth.OpDescribeTokens
}

// Filter selects bindings, as Kafka's AclBindingFilter: a zero-ish field
// (ResourceAny, nil Name, PatternAny, nil Principal, nil Host, OpAny,
// PermissionAny) matches every value. PatternMatch selects the bindings
// that apply to the resource Name names: LITERAL with that name or "*",
// PREFIXED with a prefix of it.
type Filter struct {
	Type        auth.ResourceType
	Name        *string
	PatternType auth.PatternType
	Principal   *auth.Principal
	Host        *string
	Operation   auth.Operation
	Permission  auth.Permission
}

// MatchAll is the filter selecting every binding.
var MatchAll = Filter{Type: auth.ResourceAny, PatternType: auth.PatternAny, Operation: auth.OpAny, Permission: auth.PermissionAny}

// Validate refuses a filter with an UNKNOWN field, as Kafka does.
func (f Filter) Validate() error {
	switch {
	case f.Type != auth.ResourceAny && !definiteResourceType(f.Type):
		return fmt.Errorf("%w: filter resource type %s", ErrInvalid, f.Type)
	case f.PatternType < auth.PatternAny || f.PatternType > auth.PatternPrefixed:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalid, patternTypeName(f.PatternType))
	case f.Operation != auth.OpAny && !definiteOperation(f.Operation):
		return fmt.Errorf("%w: filter operation %s", ErrInvalid, f.Operation)
	case f.Permission < auth.PermissionAny || f.Permission > auth.Allow:
		return fmt.Errorf("%w: filter permission type %s", ErrInvalid, permissionName(f.Permission))
	}
	return nil
}

// Matches reports whether b is one of the bindings f selects.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b.Pattern) && f.matchesEntry(b.Entry)
}

func (f Filter) matchesPattern(p Pattern) bool {
	if f.Type != auth.ResourceAny && f.Type != p.Type {
		return false
	}
	match := f.PatternType == auth.PatternMatch
	if f.PatternType != auth.PatternAny && !match && f.PatternType != p.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	name := *f.Name
	if !match {
		return name == p.Name
	}
	if p.PatternType == auth.PatternPrefixed {
		return strings.HasPrefix(name, p.Name)
	}
	return name == p.Name || p.Name == auth.Wildcard
}

func (f Filter) matchesEntry(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == auth.OpAny || f.Operation == e.Operation) &&
		(f.Permission == auth.PermissionAny || f.Permission == e.Permission)
}

// Kafka's names of the resource types in ZooKeeper paths and the ACL JSON
// (SecurityUtils), plus ferry's Subject.
var resourceKafkaNames = map[auth.ResourceType]string{
	auth.ResourceTopic: "Topic", auth.ResourceGroup: "Group", auth.ResourceCluster: "Cluster",
	auth.ResourceTransactionalID: "TransactionalId", auth.ResourceDelegationToken: "DelegationToken",
	auth.ResourceUser: "User", auth.ResourceSubject: "Subject",
}

// ResourceTypeKafkaName is t as Kafka spells it in ZooKeeper ("Topic").
func ResourceTypeKafkaName(t auth.ResourceType) string { return resourceKafkaNames[t] }

// ParseResourceTypeKafkaName reads a ZooKeeper resource type name.
func ParseResourceTypeKafkaName(s string) (auth.ResourceType, bool) {
	for t, n := range resourceKafkaNames {
		if n == s {
			return t, true
		}
	}
	return auth.ResourceUnknown, false
}

var operationKafkaNames = map[auth.Operation]string{
	auth.OpAll: "All", auth.OpRead: "Read", auth.OpWrite: "Write", auth.OpCreate: "Create",
	auth.OpDelete: "Delete", auth.OpAlter: "Alter", auth.OpDescribe: "Describe",
	auth.OpClusterAction: "ClusterAction", auth.OpDescribeConfigs: "DescribeConfigs",
	auth.OpAlterConfigs: "AlterConfigs", auth.OpIdempotentWrite: "IdempotentWrite",
	auth.OpCreateTokens: "CreateTokens", auth.OpDescribeTokens: "DescribeTokens",
}

// OperationKafkaName is o as Kafka's ACL JSON spells it ("DescribeConfigs").
func OperationKafkaName(o auth.Operation) string { return operationKafkaNames[o] }

func patternTypeName(p auth.PatternType) string {
	switch p {
	case auth.PatternAny:
		return "ANY"
	case auth.PatternMatch:
		return "MATCH"
	case auth.PatternLiteral:
		return "LITERAL"
	case auth.PatternPrefixed:
		return "PREFIXED"
	}
	return "UNKNOWN"
}

// PatternTypeName is p's name, LITERAL, PREFIXED, ANY or MATCH.
func PatternTypeName(p auth.PatternType) string { return patternTypeName(p) }

// ParsePatternType reads a pattern type name, case-insensitively.
func ParsePatternType(s string) (auth.PatternType, error) {
	for p := auth.PatternAny; p <= auth.PatternPrefixed; p++ {
		if strings.EqualFold(s, patternTypeName(p)) {
			return p, nil
		}
	}
	return auth.PatternUnknown, fmt.Errorf("unknown pattern type %q: want literal, prefixed, any or match", s)
}

func permissionName(p auth.Permission) string {
	switch p {
	case auth.PermissionAny:
		return "ANY"
	case auth.Allow:
		return "ALLOW"
	case auth.Deny:
		return "DENY"
	}
	return "UNKNOWN"
}

// PermissionName is p's name, ALLOW, DENY or ANY.
func PermissionName(p auth.Permission) string { return permissionName(p) }

// ParsePermission reads a permission name, case-insensitively.
func ParsePermission(s string) (auth.Permission, error) {
	for p := auth.PermissionAny; p <= auth.Allow; p++ {
		if strings.EqualFold(s, permissionName(p)) {
			return p, nil
		}
	}
	return auth.PermissionUnknown, fmt.Errorf("unknown permission type %q: want allow, deny or any", s)
}
