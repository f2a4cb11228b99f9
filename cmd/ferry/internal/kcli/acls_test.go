package kcli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

func TestACLSpecBindings(t *testing.T) {
	s := ACLSpec{AllowPrincipals: []string{"User:alice"}, DenyPrincipals: []string{"User:bob"}, DenyHosts: []string{"10.0.0.1", "10.0.0.2"},
		Operations: []string{"Read", "describe_configs", "read"},
		Resources:  []auth.Resource{{Type: auth.ResourceTopic, Name: "t"}}, PatternType: "Prefixed"}
	bs, err := s.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	// alice: 1 host × 2 operations; bob: 2 hosts × 2 operations
	if len(bs) != 6 {
		t.Fatalf("%d bindings: %v", len(bs), bs)
	}
	for _, b := range bs {
		if b.Pattern.PatternType != auth.PatternPrefixed || b.Validate() != nil {
			t.Fatalf("binding %v", b)
		}
	}
	if bs[0].Entry.Host != "*" || bs[0].Entry.Permission != auth.Allow || bs[2].Entry.Permission != auth.Deny {
		t.Fatalf("hosts or permissions: %v", bs)
	}
	noOp, _ := ACLSpec{AllowPrincipals: []string{"User:a"}, Resources: s.Resources}.Bindings()
	if len(noOp) != 1 || noOp[0].Entry.Operation != auth.OpAll || noOp[0].Pattern.PatternType != auth.PatternLiteral {
		t.Fatalf("defaults: %v", noOp)
	}
	for name, bad := range map[string]ACLSpec{
		"no resource":     {AllowPrincipals: []string{"User:a"}},
		"no principal":    {Resources: s.Resources},
		"bad principal":   {AllowPrincipals: []string{"alice"}, Resources: s.Resources},
		"bad operation":   {AllowPrincipals: []string{"User:a"}, Resources: s.Resources, Operations: []string{"fly"}},
		"any operation":   {AllowPrincipals: []string{"User:a"}, Resources: s.Resources, Operations: []string{"any"}},
		"match pattern":   {AllowPrincipals: []string{"User:a"}, Resources: s.Resources, PatternType: "match"},
		"unknown pattern": {AllowPrincipals: []string{"User:a"}, Resources: s.Resources, PatternType: "fuzzy"},
	} {
		if _, err := bad.Bindings(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestACLSpecFilters(t *testing.T) {
	all, err := ACLSpec{}.Filters()
	if err != nil || len(all) != 1 || all[0].Type != auth.ResourceAny || all[0].PatternType != auth.PatternAny ||
		all[0].Operation != auth.OpAny || all[0].Permission != auth.PermissionAny || all[0].Name != nil {
		t.Fatalf("list everything: %+v %v", all, err)
	}
	fs, err := ACLSpec{AllowPrincipals: []string{"User:a"}, AllowHosts: []string{"1.2.3.4"}, Operations: []string{"Write"},
		Resources: []auth.Resource{{Type: auth.ResourceGroup, Name: "g"}, {Type: auth.ResourceTopic, Name: "t"}}, PatternType: "match"}.Filters()
	if err != nil || len(fs) != 2 {
		t.Fatalf("filters: %+v %v", fs, err)
	}
	f := fs[1]
	if f.Type != auth.ResourceTopic || *f.Name != "t" || f.PatternType != auth.PatternMatch || f.Principal.String() != "User:a" ||
		*f.Host != "1.2.3.4" || f.Operation != auth.OpWrite || f.Permission != auth.Allow {
		t.Fatalf("filter %+v", f)
	}
	if lit, _ := (ACLSpec{Resources: []auth.Resource{{Type: auth.ResourceTopic, Name: "t"}}}).Filters(); lit[0].PatternType != auth.PatternLiteral {
		t.Fatalf("a named resource defaults to literal, as kafka-acls.sh: %+v", lit[0])
	}
}

func TestWriteBindings(t *testing.T) {
	var buf bytes.Buffer
	WriteBindings(&buf, nil)
	if !strings.Contains(buf.String(), "No ACLs") {
		t.Fatalf("empty: %q", buf.String())
	}
	buf.Reset()
	p := acl.Pattern{Type: auth.ResourceTopic, Name: "t", PatternType: auth.PatternLiteral}
	WriteBindings(&buf, []acl.Binding{
		{Pattern: p, Entry: acl.Entry{Principal: auth.User("a"), Host: "*", Operation: auth.OpRead, Permission: auth.Allow}},
		{Pattern: p, Entry: acl.Entry{Principal: auth.User("b"), Host: "*", Operation: auth.OpWrite, Permission: auth.Deny}},
	})
	out := buf.String()
	if strings.Count(out, "Current ACLs for resource") != 1 || !strings.Contains(out, "(principal=User:b, host=*, operation=WRITE, permissionType=DENY)") {
		t.Fatalf("output:\n%s", out)
	}
}
