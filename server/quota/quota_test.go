package quota

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func strp(s string) *string { return &s }

// Each of Kafka's eight levels wins over the ones after it, and the rate
// it counts against is shared or per-name as Kafka's sensors are.
func TestResolvePrecedence(t *testing.T) {
	u, c, du, dc, none := Named("alice"), Named("app"), DefaultComponent, DefaultComponent, Name{}
	uc := func(u, c Name) Entity { return Entity{User: u, Client: c} }
	levels := []struct {
		set    Entity
		bucket Entity
	}{
		{uc(u, c), uc(u, c)},
		{uc(u, dc), uc(u, c)},
		{uc(u, none), uc(u, none)},
		{uc(du, c), uc(u, c)},
		{uc(du, dc), uc(u, c)},
		{uc(du, none), uc(u, none)},
		{uc(none, c), uc(none, c)},
		{uc(none, dc), uc(none, c)},
	}
	// Add levels from the weakest up: each new one must take over.
	// An ip entity's quota is never a user's or a client id's.
	tbl := Table{{IP: DefaultComponent}: {ProducerByteRate: 1, ConnectionCreationRate: 1}}
	for i := len(levels) - 1; i >= 0; i-- {
		tbl[levels[i].set] = Quotas{ProducerByteRate: float64(1000 + i)}
		limit, bucket, ok := tbl.Resolve(ProducerByteRate, "alice", "app")
		if !ok || limit != float64(1000+i) || bucket != levels[i].bucket {
			t.Fatalf("with %s set: got %v %s %v, want %d counted against %s", levels[i].set.Path(), limit, bucket.Path(), ok, 1000+i, levels[i].bucket.Path())
		}
	}
	if _, _, ok := tbl.Resolve(ConsumerByteRate, "alice", "app"); ok {
		t.Fatal("consumer_byte_rate resolved with only producer quotas set")
	}
	// Another user and client fall to the defaults.
	if limit, bucket, _ := tbl.Resolve(ProducerByteRate, "bob", "other"); limit != 1004 || bucket != uc(Named("bob"), Named("other")) {
		t.Fatalf("bob/other: %v against %s, want users/<default>/clients/<default> counted per user and client", limit, bucket.Path())
	}
}

func TestEntityPathsRoundTrip(t *testing.T) {
	for _, p := range []string{"users/alice", "users/<default>", "clients/app", "clients/<default>",
		"users/alice/clients/app", "users/<default>/clients/<default>", "ips/127.0.0.1", "ips/::1", "ips/<default>"} {
		e, err := ParsePath(p)
		if err != nil || e.Path() != p {
			t.Fatalf("ParsePath(%q) = %s, %v", p, e.Path(), err)
		}
	}
	// An address is one entity however it is spelled.
	for p, want := range map[string]string{"ips/0:0::1": "ips/::1", "ips/::ffff:10.0.0.1": "ips/10.0.0.1", "ips/FE80::A": "ips/fe80::a"} {
		if e, err := ParsePath(p); err != nil || e.Path() != want {
			t.Fatalf("ParsePath(%q) = %s, %v, want %s", p, e.Path(), err, want)
		}
	}
	for _, p := range []string{"", "users", "topics/x", "users/a/b", "users/a/clients", "clients/..", "users/a/clients/",
		"ips/", "ips/localhost", "ips/1.2.3", "ips/fe80::1%eth0", "ips/1.2.3.4/clients/x", "users/a/ips/1.2.3.4"} {
		if _, err := ParsePath(p); !errors.Is(err, ErrInvalidEntity) {
			t.Fatalf("ParsePath(%q): %v, want ErrInvalidEntity", p, err)
		}
	}
}

func TestEntityOfRefusesWhatKafkaRefuses(t *testing.T) {
	e, err := EntityOf([]Component{{TypeUser, strp("alice")}, {TypeClientID, nil}})
	if err != nil || e.Path() != "users/alice/clients/<default>" {
		t.Fatalf("user+default client: %s %v", e.Path(), err)
	}
	for name, cs := range map[string][]Component{
		"none":      nil,
		"twice":     {{TypeUser, strp("a")}, {TypeUser, strp("b")}},
		"unknown":   {{"topic", strp("a")}},
		"ip+user":   {{TypeIP, strp("127.0.0.1")}, {TypeUser, strp("a")}},
		"client+ip": {{TypeClientID, nil}, {TypeIP, nil}},
		"ip twice":  {{TypeIP, strp("127.0.0.1")}, {TypeIP, nil}},
		"host name": {{TypeIP, strp("localhost")}},
		"not an ip": {{TypeIP, strp("1.2.3.4.5")}},
		"ip empty":  {{TypeIP, strp("")}},
		"slash":     {{TypeUser, strp("a/b")}},
		"empty":     {{TypeClientID, strp("")}},
		"<default>": {{TypeClientID, strp("<default>")}},
	} {
		if _, err := EntityOf(cs); !errors.Is(err, ErrInvalidEntity) {
			t.Errorf("%s: %v, want ErrInvalidEntity", name, err)
		}
	}
}

// ip entities are a named address, made canonical, or the default.
func TestEntityOfIP(t *testing.T) {
	for name, want := range map[*string]string{strp("127.0.0.1"): "ips/127.0.0.1", strp("2001:DB8:0::1"): "ips/2001:db8::1",
		strp("::ffff:127.0.0.2"): "ips/127.0.0.2", nil: "ips/<default>"} {
		e, err := EntityOf([]Component{{TypeIP, name}})
		if err != nil || e.Path() != want {
			t.Fatalf("ip %v: %s %v, want %s", name, e.Path(), err, want)
		}
		if cs := e.Components(); len(cs) != 1 || cs[0].Type != TypeIP || (name == nil) != (cs[0].Name == nil) {
			t.Fatalf("components of %s: %+v", want, cs)
		}
	}
}

func TestApplyAllOrNone(t *testing.T) {
	cur := Quotas{ProducerByteRate: 100}
	app := Entity{Client: Named("app")}
	next, err := Apply(app, cur, []Op{{Key: ConsumerByteRate, Value: 200}, {Key: ProducerByteRate, Remove: true}})
	if err != nil || len(next) != 1 || next[ConsumerByteRate] != 200 {
		t.Fatalf("Apply: %v %v", next, err)
	}
	if cur[ProducerByteRate] != 100 {
		t.Fatal("Apply changed its input")
	}
	for name, ops := range map[string][]Op{
		"unknown key":   {{Key: "connection_creation_rate", Value: 1}},
		"fraction":      {{Key: ProducerByteRate, Value: 1.5}},
		"zero":          {{Key: ConsumerByteRate, Value: 0}},
		"negative":      {{Key: RequestPercentage, Value: -1}},
		"twice":         {{Key: ProducerByteRate, Value: 1}, {Key: ProducerByteRate, Remove: true}},
		"remove bogus":  {{Key: "bogus", Remove: true}},
		"second is bad": {{Key: ProducerByteRate, Value: 5}, {Key: ConsumerByteRate, Value: -5}},
	} {
		if _, err := Apply(app, cur, ops); !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("%s: %v, want ErrInvalidQuota", name, err)
		}
	}
}

// An ip holds connection_creation_rate only: a whole number from 0, as
// Kafka's INT at least 0.
func TestApplyIPQuota(t *testing.T) {
	ip := Entity{IP: Named("127.0.0.1")}
	for _, v := range []float64{0, 1, 2, 1e6, math.MaxInt32} {
		if next, err := Apply(ip, nil, []Op{{Key: ConnectionCreationRate, Value: v}}); err != nil || next[ConnectionCreationRate] != v {
			t.Errorf("connection_creation_rate=%v: %v %v", v, next, err)
		}
	}
	for name, ops := range map[string][]Op{
		"byte rate":  {{Key: ProducerByteRate, Value: 1}},
		"percentage": {{Key: RequestPercentage, Value: 1}},
		"fraction":   {{Key: ConnectionCreationRate, Value: 2.5}},
		"negative":   {{Key: ConnectionCreationRate, Value: -1}},
		"too large":  {{Key: ConnectionCreationRate, Value: math.MaxInt32 + 1}},
		"NaN":        {{Key: ConnectionCreationRate, Value: math.NaN()}},
		"infinite":   {{Key: ConnectionCreationRate, Value: math.Inf(1)}},
		"twice":      {{Key: ConnectionCreationRate, Value: 1}, {Key: ConnectionCreationRate, Remove: true}},
	} {
		if _, err := Apply(ip, nil, ops); !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("%s: %v, want ErrInvalidQuota", name, err)
		}
	}
	if next, err := Apply(ip, Quotas{ConnectionCreationRate: 3}, []Op{{Key: ConnectionCreationRate, Remove: true}}); err != nil || len(next) != 0 {
		t.Fatalf("remove: %v %v", next, err)
	}
}

func TestFilter(t *testing.T) {
	tbl := Table{
		{User: Named("alice")}:                           {ProducerByteRate: 1},
		{User: DefaultComponent}:                         {ProducerByteRate: 2},
		{User: Named("alice"), Client: Named("app")}:     {ProducerByteRate: 3},
		{Client: Named("app")}:                           {ConsumerByteRate: 4},
		{Client: DefaultComponent}:                       {ConsumerByteRate: 5},
		{User: Named("empty")}:                           {},
		{User: DefaultComponent, Client: Named("other")}: {ProducerByteRate: 6},
		{IP: Named("127.0.0.1")}:                         {ConnectionCreationRate: 7},
		{IP: DefaultComponent}:                           {ConnectionCreationRate: 8},
	}
	paths := func(f Filter) []string {
		var out []string
		for _, e := range tbl.Select(f) {
			out = append(out, e.Entity.Path())
		}
		return out
	}
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{}, []string{"clients/<default>", "clients/app", "ips/127.0.0.1", "ips/<default>", "users/<default>", "users/<default>/clients/other", "users/alice", "users/alice/clients/app"}},
		{Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchAny}}}, []string{"ips/127.0.0.1", "ips/<default>"}},
		{Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchDefault}}, Strict: true}, []string{"ips/<default>"}},
		{Filter{Components: []FilterComponent{{Type: TypeIP, Match: MatchExact, Name: "::ffff:127.0.0.1"}}}, []string{"ips/127.0.0.1"}},
		{Filter{Strict: true}, nil},
		{Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchExact, Name: "alice"}}},
			[]string{"users/alice", "users/alice/clients/app"}},
		{Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchExact, Name: "alice"}}, Strict: true},
			[]string{"users/alice"}},
		{Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchDefault}}},
			[]string{"users/<default>", "users/<default>/clients/other"}},
		{Filter{Components: []FilterComponent{{Type: TypeClientID, Match: MatchAny}}, Strict: true},
			[]string{"clients/<default>", "clients/app"}},
		{Filter{Components: []FilterComponent{{Type: TypeUser, Match: MatchAny}, {Type: TypeClientID, Match: MatchAny}}},
			[]string{"users/<default>/clients/other", "users/alice/clients/app"}},
	} {
		if err := tc.f.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := paths(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("filter %+v: %v, want %v", tc.f, got, tc.want)
		}
	}
	for _, f := range []Filter{
		{Components: []FilterComponent{{Type: "topic"}}},
		{Components: []FilterComponent{{Type: TypeUser}, {Type: TypeUser}}},
		{Components: []FilterComponent{{Type: TypeUser, Match: 3}}},
		{Components: []FilterComponent{{Type: TypeIP, Match: MatchAny}, {Type: TypeUser, Match: MatchAny}}},
		{Components: []FilterComponent{{Type: TypeClientID, Match: MatchDefault}, {Type: TypeIP, Match: MatchDefault}}},
		{Components: []FilterComponent{{Type: TypeIP, Match: MatchExact, Name: "localhost"}}},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalidEntity) {
			t.Errorf("filter %+v: %v, want ErrInvalidEntity", f, err)
		}
	}
}

// A producer that sends as soon as its throttle time has passed is held
// to its quota; another client id is not held at all; a user quota is
// shared by the user's client ids.
func TestThrottleHoldsTheQuota(t *testing.T) {
	m := NewManager()
	m.Set(Entity{Client: Named("slow")}, Quotas{ProducerByteRate: 256 << 10})
	m.Set(Entity{User: Named("alice")}, Quotas{ConsumerByteRate: 100 << 10})
	start := time.Unix(1000, 0)
	now, sent := start, 0
	const batch = 64 << 10
	for now.Before(start.Add(10 * time.Second)) {
		th := m.Record(ProducerByteRate, "ANONYMOUS", "slow", batch, now)
		if !th.Quota || th.Entity != (Entity{Client: Named("slow")}) {
			t.Fatalf("throttle %+v", th)
		}
		sent += batch
		now = now.Add(th.Delay + time.Millisecond)
	}
	rate := float64(sent) / now.Sub(start).Seconds()
	if rate < 0.95*(256<<10) || rate > 1.05*(256<<10) {
		t.Fatalf("held to %.0f B/s, want 262144 ±5%%", rate)
	}
	if th := m.Record(ProducerByteRate, "ANONYMOUS", "fast", 100<<20, now); th.Quota || th.Delay != 0 {
		t.Fatalf("unquoted client throttled: %+v", th)
	}
	// alice's two client ids share one rate: 100 KiB from each is two
	// seconds' worth.
	m.Record(ConsumerByteRate, "alice", "a", 100<<10, now)
	th := m.Record(ConsumerByteRate, "alice", "b", 100<<10, now)
	if th.Delay != 2*time.Second || th.Entity != (Entity{User: Named("alice")}) {
		t.Fatalf("alice's second client: %+v, want 2s against users/alice", th)
	}
	if p := m.Pending(ConsumerByteRate, "alice", "c", now.Add(time.Second)); p.Delay != time.Second {
		t.Fatalf("pending a second later: %v, want 1s", p.Delay)
	}
	if th := m.Record(ConsumerByteRate, "bob", "a", 100<<10, now); th.Quota {
		t.Fatalf("bob held to alice's quota: %+v", th)
	}
	if th := m.Record(ProducerByteRate, "x", "slow", 1<<40, now); th.Delay != MaxThrottle {
		t.Fatalf("huge request: %v, want capped at %v", th.Delay, MaxThrottle)
	}
}

func TestManagerBoundsItsRates(t *testing.T) {
	m := NewManager()
	m.Set(Entity{Client: DefaultComponent}, Quotas{ProducerByteRate: 1000})
	now := time.Unix(0, 0)
	for i := range 3 * maxBuckets {
		m.Record(ProducerByteRate, "u", string(rune('a'+i%26))+time.Duration(i).String(), 10, now)
	}
	m.mu.Lock()
	n := len(m.mu.buckets)
	m.mu.Unlock()
	if n > maxBuckets {
		t.Fatalf("%d rates kept, want at most %d", n, maxBuckets)
	}
}

// Re-applying an entity's unchanged quotas (a notification of its SCRAM
// credentials) keeps the debts; a change starts the rates afresh.
func TestUnchangedQuotasKeepTheirRates(t *testing.T) {
	m := NewManager()
	e := Entity{User: Named("alice")}
	m.Set(e, Quotas{ProducerByteRate: 100})
	now := time.Unix(0, 0)
	m.Record(ProducerByteRate, "alice", "x", 500, now)
	m.Set(e, Quotas{ProducerByteRate: 100})
	if d := m.Pending(ProducerByteRate, "alice", "x", now).Delay; d != 5*time.Second {
		t.Fatalf("after an unchanged Set: owes %v, want 5s", d)
	}
	m.Set(e, Quotas{ProducerByteRate: 200})
	if d := m.Pending(ProducerByteRate, "alice", "x", now).Delay; d != 0 {
		t.Fatalf("after a changed Set: owes %v, want 0", d)
	}
}

// Byte rates are resolved under the lock only while some user or client
// entity has one; a table with only request_percentage or ip quotas
// leaves produce and fetch bytes unmetered, as the lookup itself would.
func TestByteRatesFollowTheTable(t *testing.T) {
	m := NewManager()
	now := time.Unix(1000, 0)
	metered := func() bool {
		th := m.Record(ProducerByteRate, "alice", "c", 1<<30, now)
		_, window := m.WindowBytes(ProducerByteRate, "alice", "c")
		if th.Quota != window {
			t.Fatalf("Record says quota %v, WindowBytes %v", th.Quota, window)
		}
		return th.Quota && th.Delay > 0
	}
	if metered() {
		t.Fatal("metered with no quotas")
	}
	m.Set(Entity{User: Named("alice")}, Quotas{RequestPercentage: 5})
	m.Set(Entity{IP: DefaultComponent}, Quotas{ConnectionCreationRate: 10})
	if metered() {
		t.Fatal("metered with only request_percentage and ip quotas")
	}
	m.Set(Entity{User: Named("alice")}, Quotas{RequestPercentage: 5, ProducerByteRate: 1024})
	if !metered() {
		t.Fatal("not metered with a producer_byte_rate")
	}
	m.Set(Entity{User: Named("alice")}, nil)
	if metered() {
		t.Fatal("metered after the byte rate was removed")
	}
	m.Replace(Table{{User: DefaultComponent, Client: DefaultComponent}: {ProducerByteRate: 1024}})
	if !metered() {
		t.Fatal("Replace with a default byte rate: not metered")
	}
	m.Replace(Table{})
	if metered() {
		t.Fatal("Replace with nothing: still metered")
	}
}
