package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics/metricstest"
	"github.com/ferry-mq/ferry/server/records"
)

// benchACLs is an authorizer holding n bindings over n/4 topics and
// prefixes, one of which lets ANONYMOUS write the benchmark's topic.
func benchACLs(tb testing.TB, n int) *acl.Manager {
	m := acl.NewManager(acl.New(acl.Config{}), &acl.MemoryStore{})
	bs := []acl.Binding{allowAnon(auth.ResourceTopic, "bench", auth.PatternLiteral, auth.OpWrite)}
	for i := 0; len(bs) < n; i++ {
		user := auth.User(fmt.Sprintf("user-%d", i%10))
		bs = append(bs,
			acl.Binding{Pattern: acl.Pattern{Type: auth.ResourceTopic, Name: fmt.Sprintf("topic-%d", i), PatternType: auth.PatternLiteral},
				Entry: acl.Entry{Principal: user, Host: "*", Operation: auth.OpWrite, Permission: auth.Allow}},
			acl.Binding{Pattern: acl.Pattern{Type: auth.ResourceTopic, Name: fmt.Sprintf("topic-%d", i), PatternType: auth.PatternLiteral},
				Entry: acl.Entry{Principal: auth.User("mallory"), Host: "*", Operation: auth.OpAll, Permission: auth.Deny}},
			acl.Binding{Pattern: acl.Pattern{Type: auth.ResourceTopic, Name: fmt.Sprintf("team-%d-", i), PatternType: auth.PatternPrefixed},
				Entry: acl.Entry{Principal: user, Host: "*", Operation: auth.OpAll, Permission: auth.Allow}},
			acl.Binding{Pattern: acl.Pattern{Type: auth.ResourceGroup, Name: fmt.Sprintf("group-%d", i), PatternType: auth.PatternLiteral},
				Entry: acl.Entry{Principal: user, Host: "*", Operation: auth.OpRead, Permission: auth.Allow}})
	}
	for _, err := range m.Create(bs[:n]) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	return m
}

// BenchmarkProduceACLs sends Produce requests (one batch of 10 records of
// ~100 bytes, acks=1) over one loopback connection with ACLs off and on
// (1,000 bindings), interleaved in blocks (metricstest.Paired) so the
// shared machine's load hits both alike; cost-% is the median slowdown.
func BenchmarkProduceACLs(b *testing.B) {
	side := func(m *acl.Manager) func() {
		ts := newTestServer(b, func(c *Config) { c.ACLs = m })
		c := ts.dial(b)
		values := make([]string, 10)
		for i := range values {
			values[i] = `{"id":1,"event":"page_view","path":"/products/00042","agent":"wrk-benchmark/4.2","n":` + string(rune('0'+i)) + `}`
		}
		req := produceReq("bench", 0, 1, batch(b, records.BatchOptions{}, values...))
		return func() {
			if p := do[*kmsg.ProduceResponse](c, req, 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
				b.Fatalf("produce: error %d", p.ErrorCode)
			}
		}
	}
	off, on := side(nil), side(benchACLs(b, 1000))
	off()
	on()
	metricstest.Paired(b, off, on)
}
