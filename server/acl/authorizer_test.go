package acl

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferry-mq/ferry/server/auth"
)

var (
	alice = auth.User("alice")
	bob   = auth.User("bob")
	anyU  = auth.Principal{Type: auth.UserType, Name: auth.Wildcard}
)

func lit(t auth.ResourceType, name string) Pattern {
	return Pattern{Type: t, Name: name, PatternType: auth.PatternLiteral}
}

func pre(t auth.ResourceType, name string) Pattern {
	return Pattern{Type: t, Name: name, PatternType: auth.PatternPrefixed}
}

func allow(p auth.Principal, host string, op auth.Operation) Entry {
	return Entry{Principal: p, Host: host, Operation: op, Permission: auth.Allow}
}

func deny(p auth.Principal, host string, op auth.Operation) Entry {
	return Entry{Principal: p, Host: host, Operation: op, Permission: auth.Deny}
}

func topic(name string) auth.Resource { return auth.Resource{Type: auth.ResourceTopic, Name: name} }

func act(p auth.Principal, host string, op auth.Operation, r auth.Resource) auth.Action {
	return auth.Action{Principal: p, Host: host, Operation: op, Resource: r}
}

// TestAuthorizeRules scripts each of Kafka's rules: the bindings, then
// actions with the decision each must get.
func TestAuthorizeRules(t *testing.T) {
	type check struct {
		a    auth.Action
		want bool
	}
	cases := []struct {
		name     string
		cfg      Config
		bindings []Binding
		checks   []check
	}{
		{"no bindings: denied by default", Config{}, nil, []check{
			{act(alice, "1.2.3.4", auth.OpRead, topic("t")), false},
		}},
		{"no bindings on the resource: allow.everyone.if.no.acl.found", Config{AllowIfNoACL: true},
			[]Binding{{lit(auth.ResourceTopic, "other"), allow(bob, "*", auth.OpRead)}}, []check{
				{act(alice, "1.2.3.4", auth.OpRead, topic("t")), true},
				// a binding on the resource, even for someone else, turns it off
				{act(alice, "1.2.3.4", auth.OpRead, topic("other")), false},
			}},
		{"literal allow of one operation", Config{}, []Binding{{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpWrite)}}, []check{
			{act(alice, "1.2.3.4", auth.OpWrite, topic("t")), true},
			{act(alice, "1.2.3.4", auth.OpRead, topic("t")), false},
			{act(bob, "1.2.3.4", auth.OpWrite, topic("t")), false},
			{act(alice, "1.2.3.4", auth.OpWrite, topic("t2")), false},
			{act(alice, "1.2.3.4", auth.OpWrite, auth.Resource{Type: auth.ResourceGroup, Name: "t"}), false},
		}},
		{"implied describe", Config{}, []Binding{
			{lit(auth.ResourceTopic, "r"), allow(alice, "*", auth.OpRead)},
			{lit(auth.ResourceTopic, "w"), allow(alice, "*", auth.OpWrite)},
			{lit(auth.ResourceTopic, "d"), allow(alice, "*", auth.OpDelete)},
			{lit(auth.ResourceTopic, "a"), allow(alice, "*", auth.OpAlter)},
			{lit(auth.ResourceTopic, "c"), allow(alice, "*", auth.OpCreate)},
			{lit(auth.ResourceTopic, "ac"), allow(alice, "*", auth.OpAlterConfigs)},
		}, []check{
			{act(alice, "h", auth.OpDescribe, topic("r")), true},
			{act(alice, "h", auth.OpDescribe, topic("w")), true},
			{act(alice, "h", auth.OpDescribe, topic("d")), true},
			{act(alice, "h", auth.OpDescribe, topic("a")), true},
			{act(alice, "h", auth.OpDescribe, topic("c")), false},
			{act(alice, "h", auth.OpDescribeConfigs, topic("ac")), true},
			{act(alice, "h", auth.OpDescribe, topic("ac")), false},
			{act(alice, "h", auth.OpDescribeConfigs, topic("a")), false},
			// implication runs one way
			{act(alice, "h", auth.OpRead, topic("w")), false},
		}},
		{"ALL matches every operation", Config{}, []Binding{{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpAll)}}, []check{
			{act(alice, "h", auth.OpRead, topic("t")), true},
			{act(alice, "h", auth.OpAlterConfigs, topic("t")), true},
			{act(alice, "h", auth.OpDescribe, topic("t")), true},
		}},
		{"deny wins over allow", Config{}, []Binding{
			{lit(auth.ResourceTopic, "t"), allow(anyU, "*", auth.OpAll)},
			{lit(auth.ResourceTopic, "t"), deny(alice, "*", auth.OpWrite)},
		}, []check{
			{act(alice, "h", auth.OpWrite, topic("t")), false},
			{act(alice, "h", auth.OpRead, topic("t")), true},
			{act(bob, "h", auth.OpWrite, topic("t")), true},
		}},
		{"a deny implies nothing", Config{}, []Binding{
			{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpAll)},
			{lit(auth.ResourceTopic, "t"), deny(alice, "*", auth.OpRead)},
		}, []check{
			{act(alice, "h", auth.OpDescribe, topic("t")), true},
		}},
		{"deny ALL", Config{}, []Binding{
			{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpRead)},
			{lit(auth.ResourceTopic, "*"), deny(alice, "*", auth.OpAll)},
		}, []check{
			{act(alice, "h", auth.OpRead, topic("t")), false},
		}},
		{"wildcard resource and principal", Config{}, []Binding{{lit(auth.ResourceTopic, "*"), allow(anyU, "*", auth.OpRead)}}, []check{
			{act(alice, "h", auth.OpRead, topic("anything")), true},
			{act(bob, "h", auth.OpRead, topic("x")), true},
			// as in Kafka, User:* matches principals of every type
			{act(auth.Principal{Type: "Group", Name: "g"}, "h", auth.OpRead, topic("x")), true},
			{act(alice, "h", auth.OpRead, auth.Resource{Type: auth.ResourceGroup, Name: "x"}), false},
		}},
		{"prefixed", Config{}, []Binding{
			{pre(auth.ResourceTopic, "orders-"), allow(alice, "*", auth.OpWrite)},
			{pre(auth.ResourceTopic, "orders-secret"), deny(alice, "*", auth.OpWrite)},
		}, []check{
			{act(alice, "h", auth.OpWrite, topic("orders-eu")), true},
			{act(alice, "h", auth.OpWrite, topic("orders-")), true},
			{act(alice, "h", auth.OpWrite, topic("orders")), false},
			{act(alice, "h", auth.OpWrite, topic("orders-secret-1")), false},
			{act(alice, "h", auth.OpWrite, topic("xorders-eu")), false},
		}},
		{"short prefixes and short names", Config{}, []Binding{
			{pre(auth.ResourceTopic, "o"), allow(alice, "*", auth.OpRead)},
			{pre(auth.ResourceTopic, "abc"), allow(alice, "*", auth.OpWrite)},
			{pre(auth.ResourceTopic, "abcdefgh"), deny(alice, "*", auth.OpWrite)},
		}, []check{
			{act(alice, "h", auth.OpRead, topic("o")), true},
			{act(alice, "h", auth.OpRead, topic("ox")), true},
			{act(alice, "h", auth.OpRead, topic("xo")), false},
			{act(alice, "h", auth.OpWrite, topic("ab")), false},
			{act(alice, "h", auth.OpWrite, topic("abc")), true},
			{act(alice, "h", auth.OpWrite, topic("abcdefg")), true},
			{act(alice, "h", auth.OpWrite, topic("abcdefghi")), false},
			{act(alice, "h", auth.OpWrite, topic("")), false},
		}},
		{"a prefixed * is a name, not the wildcard", Config{}, []Binding{{pre(auth.ResourceTopic, "*"), allow(alice, "*", auth.OpRead)}}, []check{
			{act(alice, "h", auth.OpRead, topic("t")), false},
			{act(alice, "h", auth.OpRead, topic("*x")), true},
		}},
		{"hosts", Config{}, []Binding{{lit(auth.ResourceTopic, "t"), allow(alice, "10.0.0.1", auth.OpRead)}}, []check{
			{act(alice, "10.0.0.1", auth.OpRead, topic("t")), true},
			{act(alice, "10.0.0.2", auth.OpRead, topic("t")), false},
		}},
		{"deny from one host", Config{}, []Binding{
			{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpRead)},
			{lit(auth.ResourceTopic, "t"), deny(alice, "10.0.0.9", auth.OpRead)},
		}, []check{
			{act(alice, "10.0.0.1", auth.OpRead, topic("t")), true},
			{act(alice, "10.0.0.9", auth.OpRead, topic("t")), false},
		}},
		{"super users", Config{SuperUsers: []auth.Principal{bob}}, []Binding{{lit(auth.ResourceTopic, "t"), deny(bob, "*", auth.OpAll)}}, []check{
			{act(bob, "h", auth.OpWrite, topic("t")), true},
			{act(bob, "h", auth.OpAlter, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName}), true},
			{act(alice, "h", auth.OpWrite, topic("t")), false},
		}},
		{"cluster and other types", Config{}, []Binding{
			{lit(auth.ResourceCluster, auth.ClusterName), allow(alice, "*", auth.OpIdempotentWrite)},
			{lit(auth.ResourceTransactionalID, "tx"), allow(alice, "*", auth.OpWrite)},
			{pre(auth.ResourceSubject, "orders-"), allow(alice, "*", auth.OpRead)},
		}, []check{
			{act(alice, "h", auth.OpIdempotentWrite, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName}), true},
			{act(alice, "h", auth.OpWrite, auth.Resource{Type: auth.ResourceTransactionalID, Name: "tx"}), true},
			{act(alice, "h", auth.OpRead, auth.Resource{Type: auth.ResourceSubject, Name: "orders-value"}), true},
			{act(alice, "h", auth.OpRead, auth.Resource{Type: auth.ResourceTopic, Name: "orders-value"}), false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := New(c.cfg)
			a.Replace(c.bindings)
			for _, ch := range c.checks {
				if got := a.Authorize(context.Background(), ch.a); got != ch.want {
					t.Errorf("%s: got %v, want %v", ch.a, got, ch.want)
				}
			}
		})
	}
}

func TestSetPatternKeepsIndexCurrent(t *testing.T) {
	a := New(Config{})
	p := pre(auth.ResourceTopic, "ab")
	a.SetPattern(p, []Entry{allow(alice, "*", auth.OpRead)})
	ctx := context.Background()
	if !a.Authorize(ctx, act(alice, "h", auth.OpRead, topic("abc"))) {
		t.Fatal("prefixed binding set by SetPattern not applied")
	}
	if a.Len() != 1 {
		t.Fatalf("Len = %d, want 1", a.Len())
	}
	a.SetPattern(p, nil)
	if a.Authorize(ctx, act(alice, "h", auth.OpRead, topic("abc"))) || a.Len() != 0 {
		t.Fatalf("removed binding still applies (len %d)", a.Len())
	}
}

func TestBindingValidate(t *testing.T) {
	good := Binding{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpRead)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Binding){
		"any resource type":  func(b *Binding) { b.Pattern.Type = auth.ResourceAny },
		"unknown type":       func(b *Binding) { b.Pattern.Type = 42 },
		"match pattern":      func(b *Binding) { b.Pattern.PatternType = auth.PatternMatch },
		"any pattern":        func(b *Binding) { b.Pattern.PatternType = auth.PatternAny },
		"empty name":         func(b *Binding) { b.Pattern.Name = "" },
		"cluster name":       func(b *Binding) { b.Pattern.Type = auth.ResourceCluster },
		"any operation":      func(b *Binding) { b.Entry.Operation = auth.OpAny },
		"unknown operation":  func(b *Binding) { b.Entry.Operation = auth.OpUnknown },
		"any permission":     func(b *Binding) { b.Entry.Permission = auth.PermissionAny },
		"no principal":       func(b *Binding) { b.Entry.Principal = auth.Principal{} },
		"host not an ip":     func(b *Binding) { b.Entry.Host = "example.com" },
		"empty host":         func(b *Binding) { b.Entry.Host = "" },
		"principal nameless": func(b *Binding) { b.Entry.Principal = auth.Principal{Type: "User"} },
	}
	for name, mutate := range bad {
		b := good
		mutate(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v accepted", name, b)
		}
	}
}

func strp(s string) *string { return &s }

// TestFilterMatches follows Kafka's ResourcePatternFilter and
// AccessControlEntryFilter.
func TestFilterMatches(t *testing.T) {
	bLit := Binding{lit(auth.ResourceTopic, "orders"), allow(alice, "*", auth.OpRead)}
	bWild := Binding{lit(auth.ResourceTopic, "*"), deny(bob, "10.0.0.1", auth.OpWrite)}
	bPre := Binding{pre(auth.ResourceTopic, "ord"), allow(alice, "*", auth.OpWrite)}
	bGroup := Binding{lit(auth.ResourceGroup, "orders"), allow(alice, "*", auth.OpRead)}
	all := []Binding{bLit, bWild, bPre, bGroup}
	f := func(mod func(*Filter)) Filter { x := MatchAll; mod(&x); return x }
	cases := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"match all", MatchAll, all},
		{"type", f(func(x *Filter) { x.Type = auth.ResourceGroup }), []Binding{bGroup}},
		{"any pattern, name exact", f(func(x *Filter) { x.Name = strp("orders") }), []Binding{bLit, bGroup}},
		{"literal", f(func(x *Filter) { x.PatternType = auth.PatternLiteral }), []Binding{bLit, bWild, bGroup}},
		{"prefixed", f(func(x *Filter) { x.PatternType = auth.PatternPrefixed }), []Binding{bPre}},
		{"prefixed name exact", f(func(x *Filter) { x.PatternType = auth.PatternPrefixed; x.Name = strp("orders") }), nil},
		{"match", f(func(x *Filter) {
			x.Type = auth.ResourceTopic
			x.PatternType = auth.PatternMatch
			x.Name = strp("orders")
		}),
			[]Binding{bLit, bWild, bPre}},
		{"match other", f(func(x *Filter) { x.PatternType = auth.PatternMatch; x.Name = strp("x") }), []Binding{bWild}},
		{"match without name", f(func(x *Filter) { x.PatternType = auth.PatternMatch }), all},
		{"literal wildcard name is a name", f(func(x *Filter) { x.PatternType = auth.PatternLiteral; x.Name = strp("*") }), []Binding{bWild}},
		{"principal", f(func(x *Filter) { x.Principal = &bob }), []Binding{bWild}},
		{"host", f(func(x *Filter) { x.Host = strp("*") }), []Binding{bLit, bPre, bGroup}},
		{"operation", f(func(x *Filter) { x.Operation = auth.OpWrite }), []Binding{bWild, bPre}},
		{"permission", f(func(x *Filter) { x.Permission = auth.Deny }), []Binding{bWild}},
	}
	for _, c := range cases {
		var got []Binding
		for _, b := range all {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	for name, bad := range map[string]Filter{
		"unknown type":       f(func(x *Filter) { x.Type = auth.ResourceUnknown }),
		"unknown pattern":    f(func(x *Filter) { x.PatternType = auth.PatternUnknown }),
		"unknown operation":  f(func(x *Filter) { x.Operation = auth.OpUnknown }),
		"unknown permission": f(func(x *Filter) { x.Permission = auth.PermissionUnknown }),
	} {
		if bad.Validate() == nil {
			t.Errorf("%s: filter accepted", name)
		}
	}
}

func TestManagerCreateDescribeDelete(t *testing.T) {
	a := New(Config{})
	m := NewManager(a, &MemoryStore{})
	bs := []Binding{
		{lit(auth.ResourceTopic, "a"), allow(alice, "*", auth.OpRead)},
		{lit(auth.ResourceTopic, "a"), allow(alice, "*", auth.OpRead)}, // a duplicate is stored once
		{pre(auth.ResourceTopic, "a"), allow(bob, "*", auth.OpWrite)},
		{lit(auth.ResourceCluster, "nope"), allow(bob, "*", auth.OpAlter)},
	}
	errs := m.Create(bs)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] == nil {
		t.Fatalf("create errors %v", errs)
	}
	got, err := m.Describe(MatchAll)
	if err != nil || len(got) != 2 {
		t.Fatalf("describe: %v %v", got, err)
	}
	if !a.Authorize(context.Background(), act(bob, "h", auth.OpWrite, topic("abc"))) {
		t.Fatal("created binding not enforced")
	}
	match := MatchAll
	match.PatternType, match.Name = auth.PatternMatch, strp("ab")
	del := m.Delete([]Filter{match, {Type: auth.ResourceUnknown}})
	if del[0].Err != nil || len(del[0].Bindings) != 1 || del[0].Bindings[0] != bs[2] {
		t.Fatalf("delete: %+v", del[0])
	}
	if del[1].Err == nil {
		t.Fatal("invalid filter accepted")
	}
	if a.Authorize(context.Background(), act(bob, "h", auth.OpWrite, topic("abc"))) || a.Len() != 1 {
		t.Fatal("deleted binding still enforced")
	}
}

func TestFileStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	a := New(Config{})
	s, err := OpenFileStore(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(a, s)
	bs := []Binding{
		{lit(auth.ResourceTopic, "a"), allow(alice, "*", auth.OpDescribeConfigs)},
		{pre(auth.ResourceGroup, "g-"), deny(bob, "::1", auth.OpRead)},
	}
	for _, err := range m.Create(bs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	a2 := New(Config{})
	if _, err := OpenFileStore(dir, a2); err != nil {
		t.Fatal(err)
	}
	got := a2.Bindings(MatchAll)
	SortBindings(got)
	if fmt.Sprint(got) != fmt.Sprint(bs) {
		t.Fatalf("reopened: %v, want %v", got, bs)
	}
}

// BenchmarkAuthorize decides against 10,000 bindings over 2,500 topics
// (literal and prefixed, allows and denies, several principals).
func BenchmarkAuthorize(b *testing.B) {
	a := New(Config{SuperUsers: []auth.Principal{auth.User("admin")}})
	a.Replace(benchBindings(10000))
	ctx := context.Background()
	hit := act(auth.User("user-7"), "10.0.0.7", auth.OpWrite, topic("topic-1237"))
	miss := act(auth.User("nobody"), "10.0.0.7", auth.OpRead, topic("topic-1234"))
	if !a.Authorize(ctx, hit) || a.Authorize(ctx, miss) {
		b.Fatal("benchmark bindings do not decide as expected")
	}
	if n := testing.AllocsPerRun(100, func() { a.Authorize(ctx, hit) }); n != 0 {
		b.Fatalf("Authorize allocates %v times", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i&1 == 0 {
			a.Authorize(ctx, hit)
		} else {
			a.Authorize(ctx, miss)
		}
	}
}

func benchBindings(n int) []Binding {
	bs := make([]Binding, 0, n)
	for i := 0; len(bs) < n; i++ {
		name := fmt.Sprintf("topic-%d", i)
		bs = append(bs,
			Binding{lit(auth.ResourceTopic, name), allow(auth.User(fmt.Sprintf("user-%d", i%10)), "*", auth.OpWrite)},
			Binding{lit(auth.ResourceTopic, name), allow(auth.User("reader"), "*", auth.OpRead)},
			Binding{lit(auth.ResourceTopic, name), deny(auth.User("mallory"), "*", auth.OpAll)},
			Binding{pre(auth.ResourceTopic, fmt.Sprintf("team-%d-", i)), allow(auth.User(fmt.Sprintf("user-%d", i%10)), "*", auth.OpAll)})
	}
	return bs[:n]
}

func TestAuthorizeDoesNotAllocate(t *testing.T) {
	a := New(Config{})
	a.Replace(benchBindings(1000))
	ctx := context.Background()
	hit := act(auth.User("user-7"), "10.0.0.7", auth.OpWrite, topic("topic-7"))
	if n := testing.AllocsPerRun(100, func() { a.Authorize(ctx, hit) }); n != 0 {
		t.Fatalf("Authorize allocates %v times", n)
	}
}

func TestAllowsSomeResource(t *testing.T) {
	ctx := context.Background()
	a := New(Config{})
	a.Replace([]Binding{
		{pre(auth.ResourceTopic, "orders-"), allow(alice, "*", auth.OpWrite)},
		{pre(auth.ResourceTopic, "orders"), deny(bob, "*", auth.OpWrite)},
		{pre(auth.ResourceTopic, "orders-eu"), allow(bob, "*", auth.OpWrite)},
	})
	if !a.AllowsSomeResource(ctx, alice, "h", auth.OpWrite, auth.ResourceTopic) {
		t.Error("alice writes orders-*")
	}
	if a.AllowsSomeResource(ctx, bob, "h", auth.OpWrite, auth.ResourceTopic) {
		t.Error("bob's only allow is covered by a deny")
	}
	if a.AllowsSomeResource(ctx, alice, "h", auth.OpWrite, auth.ResourceGroup) {
		t.Error("alice has no group")
	}
}

// TestManyPatternsAtOnce: a CreateAcls of many patterns rewrites
// the file once, and a deletion of all of them too.
func TestManyPatternsAtOnce(t *testing.T) {
	dir := t.TempDir()
	a := New(Config{})
	s, err := OpenFileStore(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(a, s)
	var bs []Binding
	for i := range 2000 {
		bs = append(bs, Binding{lit(auth.ResourceTopic, fmt.Sprintf("t%d", i)), allow(alice, "*", auth.OpRead)},
			Binding{pre(auth.ResourceGroup, fmt.Sprintf("g%d-", i)), deny(bob, "*", auth.OpRead)})
	}
	for _, err := range m.Create(bs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a.Len() != 4000 || !a.Authorize(context.Background(), act(alice, "h", auth.OpRead, topic("t1999"))) {
		t.Fatalf("after create: %d bindings", a.Len())
	}
	d := m.Delete([]Filter{MatchAll})[0]
	if d.Err != nil || len(d.Bindings) != 4000 || a.Len() != 0 {
		t.Fatalf("delete all: %d removed, %d left, %v", len(d.Bindings), a.Len(), d.Err)
	}
	a2 := New(Config{})
	if _, err := OpenFileStore(dir, a2); err != nil || a2.Len() != 0 {
		t.Fatalf("reopened: %d bindings, %v", a2.Len(), err)
	}
}
