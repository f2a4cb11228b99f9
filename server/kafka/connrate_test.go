package kafka

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"

	"github.com/ferry-mq/ferry/test/harness"
)

func describeQuotas(c *client, strict bool, cs ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	c.t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict, req.Components = strict, cs
	return do[*kmsg.DescribeClientQuotasResponse](c, req, 1)
}

// ip entities through AlterClientQuotas and DescribeClientQuotas: a named
// address in its canonical spelling and the default, listed apart from
// user and client-id entities, removed by removing their key.
func TestIPQuotaAPIs(t *testing.T) {
	ts := quotaServer(t)
	c := ts.dial(t)
	for _, e := range [][]kmsg.AlterClientQuotasRequestEntryEntity{ipEntity(kmsg.StringPtr("::ffff:127.0.0.1")), ipEntity(nil)} {
		if r := alterQuota(c, false, e, set("connection_creation_rate", 5)); r.ErrorCode != 0 {
			t.Fatalf("alter %v: %d %v", e, r.ErrorCode, r.ErrorMessage)
		}
	}
	if r := alterQuota(c, false, clientEntity(kmsg.StringPtr("app")), set("producer_byte_rate", 1024)); r.ErrorCode != 0 {
		t.Fatalf("alter client: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := alterQuota(c, true, ipEntity(kmsg.StringPtr("10.0.0.1")), set("connection_creation_rate", 1)); r.ErrorCode != 0 {
		t.Fatalf("validate only: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	names := func(resp *kmsg.DescribeClientQuotasResponse) []string {
		var out []string
		for _, e := range resp.Entries {
			for _, c := range e.Entity {
				n := "<default>"
				if c.Name != nil {
					n = *c.Name
				}
				out = append(out, c.Type+"="+n)
			}
			if len(e.Values) != 1 {
				t.Fatalf("values %+v", e.Values)
			}
		}
		return out
	}
	if got := names(describeQuotas(c, false, kmsg.DescribeClientQuotasRequestComponent{EntityType: "ip", MatchType: 2})); !slices.Equal(got, []string{"ip=127.0.0.1", "ip=<default>"}) {
		t.Fatalf("ip entities: %v", got)
	}
	if got := names(describeQuotas(c, false)); !slices.Equal(got, []string{"client-id=app", "ip=127.0.0.1", "ip=<default>"}) {
		t.Fatalf("every entity: %v", got)
	}
	exact := describeQuotas(c, true, kmsg.DescribeClientQuotasRequestComponent{EntityType: "ip", MatchType: 0, Match: kmsg.StringPtr("127.0.0.1")})
	if len(exact.Entries) != 1 || exact.Entries[0].Values[0].Key != "connection_creation_rate" || exact.Entries[0].Values[0].Value != 5 {
		t.Fatalf("exact ip: %+v", exact)
	}
	if got := names(describeQuotas(c, true, kmsg.DescribeClientQuotasRequestComponent{EntityType: "ip", MatchType: 1})); !slices.Equal(got, []string{"ip=<default>"}) {
		t.Fatalf("default ip: %v", got)
	}
	if !ts.Server.cfg.Quotas.LimitsConnections() {
		t.Fatal("the broker's manager has no ip quota")
	}
	for _, e := range [][]kmsg.AlterClientQuotasRequestEntryEntity{ipEntity(kmsg.StringPtr("127.0.0.1")), ipEntity(nil)} {
		if r := alterQuota(c, false, e, kmsg.AlterClientQuotasRequestEntryOp{Key: "connection_creation_rate", Remove: true}); r.ErrorCode != 0 {
			t.Fatalf("remove: %d %v", r.ErrorCode, r.ErrorMessage)
		}
	}
	if ts.Server.cfg.Quotas.LimitsConnections() {
		t.Fatal("ip quotas still held after removal")
	}
}

// rejectedFor reads ferry_connections_rejected_total for reason.
func rejectedFor(t *testing.T, m *metrics.Metrics, reason string) float64 {
	t.Helper()
	return metricSum(t, m, "ferry_connections_rejected_total", "reason", reason)
}

func metricSum(t *testing.T, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if label == "" || (l.GetName() == label && l.GetValue() == value) {
					sum += metric.GetCounter().GetValue()
					break
				}
			}
		}
	}
	return sum
}

// A connection_creation_rate of 2 on 127.0.0.1: of 20 connections opened
// at once most go unanswered and are closed, each counted; 127.0.0.2 is
// not held; with the quota removed every connection is served.
func TestIPConnectionRateRefusesTheExcess(t *testing.T) {
	m := metrics.New()
	ts := quotaServer(t, func(c *Config) { c.Metrics = m })
	admin := ts.dial(t)
	if r := alterQuota(admin, false, ipEntity(kmsg.StringPtr("127.0.0.1")), set("connection_creation_rate", 2)); r.ErrorCode != 0 {
		t.Fatalf("alter: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	served := func(from string) int {
		conns := make([]net.Conn, 20)
		for i := range conns {
			conns[i] = dialFrom(t, ts.addr, from)
		}
		n := 0
		for _, nc := range conns {
			if apiVersionsOK(t, nc) {
				n++
			}
			nc.Close()
		}
		return n
	}
	n := served("127.0.0.1")
	t.Logf("127.0.0.1 at 2/s: %d of 20 served", n)
	if n > 10 {
		t.Fatalf("127.0.0.1 at 2/s: %d of 20 served, want most refused", n)
	}
	if got := rejectedFor(t, m, "connection_creation_rate"); got < float64(20-n) {
		t.Fatalf("%v refusals counted, want %d", got, 20-n)
	}
	if n := served("127.0.0.2"); n != 20 {
		t.Fatalf("127.0.0.2 (no quota): %d of 20 served", n)
	}
	if r := alterQuota(admin, false, ipEntity(kmsg.StringPtr("127.0.0.1")), kmsg.AlterClientQuotasRequestEntryOp{Key: "connection_creation_rate", Remove: true}); r.ErrorCode != 0 {
		t.Fatalf("remove: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if n := served("127.0.0.1"); n != 20 {
		t.Fatalf("quota removed: %d of 20 served", n)
	}
}

// A refused connection held open for its delay is closed at once by
// Shutdown, which does not wait for the timer.
func TestShutdownClosesHeldConnections(t *testing.T) {
	ts := quotaServer(t)
	srv := ts.Server
	srv.cfg.Quotas.Set(quota.Entity{IP: quota.Named("127.0.0.2")}, quota.Quotas{quota.ConnectionCreationRate: 0})
	nc := dialFrom(t, ts.addr, "127.0.0.2")
	held := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.mu.delayedCloses)
	}
	harness.WaitFor(t, "the connection held", 10*time.Second, func() bool { return held() == 1 })
	ts.stop(t)
	if n := held(); n != 0 {
		t.Fatalf("%d connections still held after Shutdown", n)
	}
	if apiVersionsOK(t, nc) {
		t.Fatal("a refused connection was served")
	}
}

// The broker-wide max.connection.creation.rate makes accepts wait rather
// than refusing: every connection is served, and the waits are counted.
// The inter-broker listener among several is exempt from it; a listener's
// own rate holds it all the same.
func TestListenerConnectionRateDelaysAccepts(t *testing.T) {
	m := metrics.New()
	ts := newTestServer(t, func(c *Config) { c.Metrics, c.MaxConnectionCreationRate = m, 5 })
	for i := range 12 {
		if !apiVersionsOK(t, dialFrom(t, ts.addr, "127.0.0.1")) {
			t.Fatalf("connection %d not served: a listener rate delays, never refuses", i+1)
		}
	}
	if got := metricSum(t, m, "ferry_connection_accept_throttle_seconds_total", "", ""); got <= 0 {
		t.Fatal("12 connections at 5/s: no accept throttle counted")
	}
	if got := rejectedFor(t, m, "connection_creation_rate"); got != 0 {
		t.Fatalf("%v refused", got)
	}

	cfg := Config{MaxConnectionCreationRate: 5, InterBrokerListener: "INTERNAL", Listeners: []Listener{
		{Name: "EXTERNAL", Addr: "127.0.0.1:0"}, {Name: "INTERNAL", Addr: "127.0.0.1:0"}, {Name: "REPLICATION", Addr: "127.0.0.1:0", MaxConnectionCreationRate: 50}}}
	cfg.Defaults()
	ls, err := listenersOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0, 2} {
		if n := len(ls[i].acceptRates); n != want {
			t.Errorf("%s counts against %d rates, want %d", ls[i].Name, n, want)
		}
	}
	if ls[0].acceptRates[0] != ls[2].acceptRates[1] {
		t.Error("the broker-wide rate is not shared")
	}
	single, _ := listenersOf(Config{MaxConnectionCreationRate: 5, InterBrokerListener: "PLAINTEXT", Listeners: []Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}}})
	if len(single[0].acceptRates) != 1 {
		t.Error("a lone listener is exempt from the broker-wide rate (Kafka exempts the inter-broker one only among several)")
	}
}
