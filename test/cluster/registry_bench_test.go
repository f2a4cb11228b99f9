package cluster_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkSchemaLookupOnFollower measures GET /schemas/ids/{id} on a
// broker that does not lead _schemas (target: at least 20,000 requests/s
// on this 2-core machine), with wrk (one thread, 32 connections,
// BENCH_DURATION each, default 10s) cycling over 100 registered ids; in the
// same iteration the same wrk run against a no-op chi handler of that
// route (test/bench/noop: what this machine's HTTP stack and wrk allow) and
// against the _schemas leader. Run it with -benchtime 3x: each iteration is
// one round of the three; the medians are reported.
func BenchmarkSchemaLookupOnFollower(b *testing.B) {
	_, err := exec.LookPath("wrk")
	harness.RequireService(b, "wrk", err)
	duration := os.Getenv("BENCH_DURATION")
	if duration == "" {
		duration = "10s"
	}
	nodes := startBrokers(b, 3)
	noopURL := startNoop(b)
	const schemas = 100
	var ids []int
	for i := 0; i < schemas; i++ {
		id, err := register(b, nodes[i%3], fmt.Sprintf("bench%d-value", i), recordSchema(fmt.Sprintf("B%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	leader := leaderOf(b, kadm.NewClient(adminOn(b, nodes)), "_schemas")
	if leader < 1 {
		b.Fatal("_schemas has no leader")
	}
	follower := nodes[leader%3] // broker leader+1 (mod 3): not the leader
	targets := []struct{ label, url string }{{"noop", noopURL}, {"follower", follower.URL}, {"leader", nodes[leader-1].URL}}
	results := map[string][]harness.WrkResult{}
	for b.Loop() {
		for _, target := range targets {
			r := harness.WrkSchemaLookups(b, target.url, duration, ids)
			results[target.label] = append(results[target.label], r)
			b.Logf("%-8s %8.0f req/s  p50 %.2f ms  p99 %.2f ms", target.label, r.RequestsPerSec, r.P50ms, r.P99ms)
		}
	}
	med := func(label string, f func(harness.WrkResult) float64) float64 {
		var xs []float64
		for _, r := range results[label] {
			xs = append(xs, f(r))
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	rps := func(r harness.WrkResult) float64 { return r.RequestsPerSec }
	b.ReportMetric(med("follower", rps), "follower_req/s")
	b.ReportMetric(med("leader", rps), "leader_req/s")
	b.ReportMetric(med("noop", rps), "noop_req/s")
	b.ReportMetric(med("follower", func(r harness.WrkResult) float64 { return r.P99ms }), "follower_p99_ms")
	b.ReportMetric(med("follower", rps)/med("noop", rps), "follower/noop")
}

// startNoop builds and runs test/bench/noop on a free loopback port.
func startNoop(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "noop")
	if out, err := exec.Command("go", "build", "-o", bin, "../bench/noop").CombinedOutput(); err != nil {
		b.Fatalf("build noop: %v\n%s", err, out)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(b))
	cmd := exec.Command(bin, "--addr", addr)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	harness.WaitFor(b, "the no-op server listens", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr
}
