package auth

// The vocabulary of authorization (Kafka's operations, resource types,
// pattern types, permissions) and the Authorizer port the listeners ask.
// The ACLs themselves, their stores and the decision live in server/acl.

import (
	"context"
	"fmt"
	"strings"
)

// Operation is Kafka's AclOperation, with its wire codes.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // a filter only: matches every operation
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var operationNames = map[Operation]string{
	OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL", OpRead: "READ", OpWrite: "WRITE",
	OpCreate: "CREATE", OpDelete: "DELETE", OpAlter: "ALTER", OpDescribe: "DESCRIBE",
	OpClusterAction: "CLUSTER_ACTION", OpDescribeConfigs: "DESCRIBE_CONFIGS",
	OpAlterConfigs: "ALTER_CONFIGS", OpIdempotentWrite: "IDEMPOTENT_WRITE",
	OpCreateTokens: "CREATE_TOKENS", OpDescribeTokens: "DESCRIBE_TOKENS",
}

func (o Operation) String() string {
	if n, ok := operationNames[o]; ok {
		return n
	}
	return fmt.Sprintf("OPERATION(%d)", int8(o))
}

// ParseOperation reads an operation name, case-insensitively, with or
// without underscores (Kafka's CLI writes "DescribeConfigs").
func ParseOperation(s string) (Operation, error) {
	want := normalName(s)
	for o, n := range operationNames {
		if normalName(n) == want {
			return o, nil
		}
	}
	return OpUnknown, fmt.Errorf("unknown operation %q", s)
}

// ResourceType is Kafka's ResourceType, with its wire codes, plus SUBJECT
// for the schema registry's subjects.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // a filter only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
	// ResourceSubject is ferry's: a schema registry subject. Kafka leaves
	// codes above 7 unused; Kafka clients that do not know it show a number.
	ResourceSubject ResourceType = 100
)

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "UNKNOWN", ResourceAny: "ANY", ResourceTopic: "TOPIC", ResourceGroup: "GROUP",
	ResourceCluster: "CLUSTER", ResourceTransactionalID: "TRANSACTIONAL_ID",
	ResourceDelegationToken: "DELEGATION_TOKEN", ResourceUser: "USER", ResourceSubject: "SUBJECT",
}

func (r ResourceType) String() string {
	if n, ok := resourceNames[r]; ok {
		return n
	}
	return fmt.Sprintf("RESOURCE(%d)", int8(r))
}

// ParseResourceType reads a resource type name, like ParseOperation.
func ParseResourceType(s string) (ResourceType, error) {
	want := normalName(s)
	for r, n := range resourceNames {
		if normalName(n) == want {
			return r, nil
		}
	}
	return ResourceUnknown, fmt.Errorf("unknown resource type %q", s)
}

// ClusterName is the one CLUSTER resource's name, as Kafka names it.
const ClusterName = "kafka-cluster"

// Wildcard as a resource name or principal name matches every one.
const Wildcard = "*"

// PatternType is Kafka's PatternType (KIP-290).
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // a filter only: literal or prefixed
	PatternMatch    PatternType = 2 // a filter only: bindings that apply to a name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Permission is Kafka's AclPermissionType.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // a filter only
	Deny              Permission = 2
	Allow             Permission = 3
)

// Resource is what an action is on: a type and a name (ClusterName for
// the cluster).
type Resource struct {
	Type ResourceType
	Name string
}

func (r Resource) String() string { return r.Type.String() + ":" + r.Name }

// Action is one thing a request asks to do, for the authorizer to decide.
// Host is the client's IP address as text ("127.0.0.1"), as ACLs name it.
type Action struct {
	Principal Principal
	Host      string
	Operation Operation
	Resource  Resource
}

func (a Action) String() string {
	return fmt.Sprintf("%s from %s: %s on %s", a.Principal, a.Host, a.Operation, a.Resource)
}

// Authorizer decides actions. It must be safe for concurrent use and must
// not block on I/O: stores feed it, requests only ask it.
type Authorizer interface {
	Authorize(ctx context.Context, a Action) bool
}

// AllowAll is the authorizer when ACLs are off (no authorizer.class.name):
// every action is allowed, as on a Kafka broker without an authorizer.
type AllowAll struct{}

func (AllowAll) Authorize(context.Context, Action) bool { return true }

func normalName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(strings.ReplaceAll(s, "_", ""), "-", ""))
}
