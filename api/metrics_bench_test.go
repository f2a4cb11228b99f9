package api

import (
	"testing"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/metrics/metricstest"
)

// BenchmarkProduceHandlerMetrics is BenchmarkProduceHandler with metrics
// off and on, as sub-benchmarks of one run so they share the machine's
// state; run it with -count and compare medians (the budget is 3%). Both
// go through the same middleware (request log at Debug, disabled here);
// "on" also counts the request, its latency, and the topic's bytes and
// records.
func BenchmarkProduceHandlerMetrics(b *testing.B) {
	for _, mode := range []struct {
		name string
		m    func() *metrics.Metrics
	}{{"off", func() *metrics.Metrics { return nil }}, {"on", metrics.New}} {
		b.Run(mode.name, func(b *testing.B) {
			body := benchBody()
			post := postBenchBody(b, benchGateway(b, Config{}, mode.m()).Handler(), body, "")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				post()
			}
			b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkProduceHandlerMetricsPaired interleaves the two sides of
// BenchmarkProduceHandlerMetrics in short blocks (metricstest.Paired) and
// reports the median cost in percent.
func BenchmarkProduceHandlerMetricsPaired(b *testing.B) {
	body := benchBody()
	off := postBenchBody(b, benchGateway(b, Config{}, nil).Handler(), body, "")
	on := postBenchBody(b, benchGateway(b, Config{}, metrics.New()).Handler(), body, "")
	off()
	on()
	metricstest.Paired(b, off, on)
}
