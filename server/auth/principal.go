package auth

import (
	"context"
	"fmt"
	"strings"
)

// Principal is who a request runs as, Kafka's KafkaPrincipal: a type and a
// name, written "User:alice".
type Principal struct {
	Type, Name string
}

// UserType is the only principal type Kafka's own authenticators produce.
const UserType = "User"

// Anonymous is the principal of a request that did not authenticate: a
// PLAINTEXT listener, or HTTP with security off. Kafka spells it the same.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal of an authenticated user name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsZero reports an unset principal.
func (p Principal) IsZero() bool { return p.Type == "" && p.Name == "" }

// ParsePrincipal reads "Type:Name" (super.users, ACL principals). The
// name may itself hold colons; "User:*" is the wildcard of ACLs.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || typ == "" || name == "" {
		return Principal{}, fmt.Errorf("principal %q: want Type:Name, like User:alice", s)
	}
	return Principal{Type: typ, Name: name}, nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p, for handlers and the authorizer.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal ctx carries, Anonymous when none.
func PrincipalFrom(ctx context.Context) Principal {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok && !p.IsZero() {
		return p
	}
	return Anonymous
}
