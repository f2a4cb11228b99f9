package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
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
			m := mode.m()
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true, Metrics: m}, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer broker.Close()
			g, _ := New(broker, Config{Logger: logger, Metrics: m})
			h := g.Handler()
			body := benchBody()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
				req.Header.Set("Content-Type", typeJSON)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
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
	side := func(m *metrics.Metrics) func() {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true, Metrics: m}, logger)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { broker.Close() })
		g, _ := New(broker, Config{Logger: logger, Metrics: m})
		h := g.Handler()
		return func() {
			req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
			req.Header.Set("Content-Type", typeJSON)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	}
	off, on := side(nil), side(metrics.New())
	off()
	on()
	metricstest.Paired(b, off, on)
}
