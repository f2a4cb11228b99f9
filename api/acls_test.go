package api

import (
	"net/url"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

func aclEnv(t *testing.T, cfg acl.Config) (*testEnv, *acl.Manager) {
	t.Helper()
	m := acl.NewManager(acl.New(cfg), &acl.MemoryStore{})
	return newTestEnv(t, func(_ *server.Config, c *Config) { c.ACLs = m }), m
}

func TestACLRoutesOff(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, "GET", "/admin/acls", "", "").wantError(t, 501, codeSecurityOff)
	e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[]}`).wantError(t, 501, codeSecurityOff)
}

func TestACLRoutesNeedClusterPermissions(t *testing.T) {
	e, _ := aclEnv(t, acl.Config{})
	e.do(t, "GET", "/admin/acls", "", "").wantError(t, 403, codeACLForbidden)
	e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[]}`).wantError(t, 403, codeACLForbidden)
	e.do(t, "DELETE", "/admin/acls", "application/json", `{}`).wantError(t, 403, codeACLForbidden)
}

func TestACLRoutesRoundTrip(t *testing.T) {
	e, m := aclEnv(t, acl.Config{SuperUsers: []auth.Principal{auth.Anonymous}})
	a := e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[
		{"resource_type":"topic","resource_name":"orders","principal":"User:alice","operation":"read"},
		{"resource_type":"TOPIC","resource_name":"ord","pattern_type":"prefixed","principal":"User:bob","operation":"Write","permission":"deny","host":"10.0.0.1"},
		{"resource_type":"subject","resource_name":"orders-value","principal":"User:alice","operation":"DescribeConfigs"}]}`)
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if m.Authorizer().Len() != 3 {
		t.Fatalf("%d bindings stored", m.Authorizer().Len())
	}
	// One invalid binding creates none.
	e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[
		{"resource_type":"topic","resource_name":"x","principal":"User:a","operation":"read"},
		{"resource_type":"cluster","resource_name":"mine","principal":"User:a","operation":"alter"}]}`).wantError(t, 422, codeInvalidACL)
	e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[{"resource_type":"topic","resource_name":"x","principal":"alice","operation":"read"}]}`).
		wantError(t, 422, codeInvalidACL)
	e.do(t, "POST", "/admin/acls", "application/json", `{"acls":[{"resource_type":"topic","resource_name":"x","principal":"User:a","operation":"fly"}]}`).
		wantError(t, 422, codeInvalidACL)
	e.do(t, "POST", "/admin/acls", "application/json", `{"nope":1}`).wantError(t, 400, codeMalformed)
	if m.Authorizer().Len() != 3 {
		t.Fatalf("a refused request stored bindings: %d", m.Authorizer().Len())
	}

	var list ACLList
	a = e.do(t, "GET", "/admin/acls?resource_type=topic&resource_name=orders-eu&pattern_type=match", "", "")
	a.decode(t, &list)
	if a.status != 200 || len(list.ACLs) != 1 || list.ACLs[0].Principal != "User:bob" || list.ACLs[0].PatternType != "PREFIXED" {
		t.Fatalf("match orders-eu: %d %s", a.status, a.body)
	}
	a = e.do(t, "GET", "/admin/acls", "", "")
	a.decode(t, &list)
	if len(list.ACLs) != 3 {
		t.Fatalf("all: %s", a.body)
	}
	e.do(t, "GET", "/admin/acls?pattern_type=sideways", "", "").wantError(t, 422, codeInvalidACL)

	a = e.do(t, "DELETE", "/admin/acls", "application/json", `{"principal":"User:alice","resource_type":"topic"}`)
	a.decode(t, &list)
	if a.status != 200 || len(list.ACLs) != 1 || list.ACLs[0].ResourceName != "orders" {
		t.Fatalf("delete alice's topic ACLs: %d %s", a.status, a.body)
	}
	if m.Authorizer().Len() != 2 {
		t.Fatalf("%d bindings left, want 2", m.Authorizer().Len())
	}
	e.do(t, "DELETE", "/admin/acls", "application/json", `{"operation":"nothing"}`).wantError(t, 422, codeInvalidACL)
}

// FuzzACLFilterQuery feeds arbitrary query strings and binding fields to
// the parsers: no panic, and what parses is a valid filter or binding.
func FuzzACLFilterQuery(f *testing.F) {
	f.Add("resource_type=topic&resource_name=orders&pattern_type=match&principal=User:a&host=*&operation=read&permission=allow",
		"TOPIC", "orders", "PREFIXED", "User:alice", "10.0.0.1", "WRITE", "DENY")
	f.Add("pattern_type=&operation=any", "cluster", "kafka-cluster", "", "User:*", "", "alter", "")
	f.Add("%zz", "", "", "", ":", "::1", "all", "any")
	f.Fuzz(func(t *testing.T, query, typ, name, pattern, principal, host, op, perm string) {
		if q, err := url.ParseQuery(query); err == nil {
			if fl, err := filterFromQuery(q); err == nil && fl.Validate() != nil {
				t.Fatalf("filter %+v parsed but is invalid", fl)
			}
		}
		j := ACLBinding{ResourceType: typ, ResourceName: name, PatternType: pattern, Principal: principal, Host: host,
			Operation: op, Permission: perm}
		if b, err := j.binding(); err == nil {
			_ = b.Validate() // may refuse; must not panic
			if got := aclList([]acl.Binding{b}).ACLs[0]; got.ResourceName != name {
				t.Fatalf("round trip changed the name: %+v", got)
			}
		}
	})
}
