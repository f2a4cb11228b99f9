package server

import (
	"context"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/metrics/metricstest"
	"github.com/ferry-mq/ferry/server/records"
)

func tenRecordBatch(t testing.TB) []byte {
	t.Helper()
	var bld records.Builder
	for i := 0; i < 10; i++ {
		bld.Add(records.Record{Value: []byte(`{"id":1,"event":"page_view","path":"/products/00042","agent":"wrk-benchmark/4.2"}`),
			Timestamp: time.Now().UnixMilli()})
	}
	data, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestProduceMetricsDoNotAllocate: counting a produced batch (the topic's
// cached counters, two atomic adds) allocates nothing.
func TestProduceMetricsDoNotAllocate(t *testing.T) {
	m := metrics.New()
	b := newTestBroker(t, func(c *Config) { c.Metrics = m })
	data := tenRecordBatch(t)
	req := BatchProduce{Topic: "alloc", Partition: 0, Batches: append([]byte(nil), data...)}
	if _, err := b.produceBatch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	withMetrics := testing.AllocsPerRun(200, func() {
		copy(req.Batches, data)
		if _, err := b.produceBatch(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	b.cfg.Metrics = nil
	without := testing.AllocsPerRun(200, func() {
		copy(req.Batches, data)
		if _, err := b.produceBatch(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	if withMetrics > without {
		t.Fatalf("produceBatch allocates %v times with metrics, %v without", withMetrics, without)
	}
	if got := gathered(t, m, "ferry_topic_messages_in_total"); got != 10*(1+201) { // the first produce, then AllocsPerRun's warm-up and 200 runs
		t.Fatalf("messages in = %v, want %d", got, 10*(1+201))
	}
}

// BenchmarkProduceBatchMetrics is the core's Kafka produce path (validate,
// append) with metrics off and on; compare medians over -count runs.
func BenchmarkProduceBatchMetrics(b *testing.B) {
	for _, mode := range []struct {
		name string
		m    func() *metrics.Metrics
	}{{"off", func() *metrics.Metrics { return nil }}, {"on", metrics.New}} {
		b.Run(mode.name, func(b *testing.B) {
			m := mode.m()
			br := newTestBroker(b, func(c *Config) { c.Metrics = m })
			data := tenRecordBatch(b)
			req := BatchProduce{Topic: "bench", Partition: 0, Batches: append([]byte(nil), data...)}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(req.Batches, data)
				if _, err := br.produceBatch(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// gathered is the value of the first series of a counter family.
func gathered(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.Metric[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// BenchmarkProduceBatchMetricsPaired interleaves the two sides of
// BenchmarkProduceBatchMetrics in short blocks (metricstest.Paired) and
// reports the median cost in percent.
func BenchmarkProduceBatchMetricsPaired(b *testing.B) {
	data := tenRecordBatch(b)
	side := func(m *metrics.Metrics) func() {
		br := newTestBroker(b, func(c *Config) { c.Metrics = m })
		req := BatchProduce{Topic: "bench", Partition: 0, Batches: append([]byte(nil), data...)}
		return func() {
			copy(req.Batches, data)
			if _, err := br.produceBatch(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	}
	metricstest.Paired(b, side(nil), side(metrics.New()))
}
