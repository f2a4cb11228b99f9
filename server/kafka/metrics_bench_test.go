package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/metrics/metricstest"
	"github.com/ferry-mq/ferry/server/records"
)

// BenchmarkProduceMetrics sends Produce requests (one batch of 10 records
// of ~100 bytes, acks=1) over one loopback connection, with metrics off and
// on, as sub-benchmarks of one run; compare medians over -count runs.
func BenchmarkProduceMetrics(b *testing.B) {
	for _, mode := range []struct {
		name string
		m    func() *metrics.Metrics
	}{{"off", func() *metrics.Metrics { return nil }}, {"on", metrics.New}} {
		b.Run(mode.name, func(b *testing.B) {
			m := mode.m()
			ts := newTestServerWith(b, func(c *server.Config) { c.Metrics = m }, func(c *Config) { c.Metrics = m })
			c := ts.dial(b)
			values := make([]string, 10)
			for i := range values {
				values[i] = `{"id":1,"event":"page_view","path":"/products/00042","agent":"wrk-benchmark/4.2","n":` + string(rune('0'+i)) + `}`
			}
			data := batch(b, records.BatchOptions{}, values...)
			req := produceReq("bench", 0, 1, data)
			if p := do[*kmsg.ProduceResponse](c, req, 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
				b.Fatalf("produce: error %d", p.ErrorCode)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if p := do[*kmsg.ProduceResponse](c, req, 9).Topics[0].Partitions[0]; p.ErrorCode != 0 {
					b.Fatalf("produce: error %d", p.ErrorCode)
				}
			}
			b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkProduceMetricsPaired interleaves the two sides of
// BenchmarkProduceMetrics in short blocks (metricstest.Paired), each side
// its own broker, listener and connection, and reports the median cost.
func BenchmarkProduceMetricsPaired(b *testing.B) {
	side := func(m *metrics.Metrics) func() {
		ts := newTestServerWith(b, func(c *server.Config) { c.Metrics = m }, func(c *Config) { c.Metrics = m })
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
	off, on := side(nil), side(metrics.New())
	off()
	on()
	metricstest.Paired(b, off, on)
}
