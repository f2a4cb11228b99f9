package metrics

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestNilMetricsIsOff: every hook of a nil *Metrics (metrics off) and of
// the nil children it returns is a no-op.
func TestNilMetricsIsOff(t *testing.T) {
	var m *Metrics
	m.Topic("t").In(10, 1)
	m.Topic("t").Out(10)
	m.ForgetTopic("t")
	r := m.Request(ListenerKafka, "Produce")
	r.Observe(time.Millisecond)
	r.Failed("X", 1)
	r.SchemaRoute().Status(200)
	l := m.Listener(ListenerHTTP)
	l.Opened()
	l.Idle(time.Second)
	l.Busy(time.Second)
	l.Closed()
	m.LeaderElected()
	m.SetControllerActive(true)
	m.ObserveFlush(time.Millisecond)
	m.AddPartitionSource(nil)
	m.AddLagSource(nil)
	m.AddSchemaSource(nil)
	m.AddLeaderlessSource(nil)
	m.ISRShrunk()
	m.ISRExpanded()
}

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labelsOf(m *dto.Metric) string {
	var parts []string
	for _, l := range m.Label {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

// TestTopicCountersAreCachedAndForgotten: Topic returns the same children
// for a name, and ForgetTopic removes the topic's series.
func TestTopicCountersAreCachedAndForgotten(t *testing.T) {
	m := New()
	if m.Topic("a") != m.Topic("a") {
		t.Fatal("Topic does not cache its children")
	}
	m.Topic("a").In(100, 3)
	m.Topic("a").In(50, 2)
	m.Topic("a").Out(70)
	m.Topic("b").In(1, 1)
	f := gather(t, m)
	for name, want := range map[string]float64{"ferry_topic_bytes_in_total": 150, "ferry_topic_messages_in_total": 5, "ferry_topic_bytes_out_total": 70} {
		got := -1.0
		for _, s := range f[name].GetMetric() {
			if labelsOf(s) == "topic=a" {
				got = s.GetCounter().GetValue()
			}
		}
		if got != want {
			t.Errorf("%s{topic=a} = %v, want %v", name, got, want)
		}
	}
	m.ForgetTopic("a")
	for _, s := range gather(t, m)["ferry_topic_bytes_in_total"].GetMetric() {
		if labelsOf(s) == "topic=a" {
			t.Fatal("topic a still exported after ForgetTopic")
		}
	}
}

// TestScrapeTimeCollectors: partition, lag and schema sources are read at
// gather time and summarised as Kafka defines the gauges.
func TestScrapeTimeCollectors(t *testing.T) {
	m := New()
	m.AddPartitionSource(func(yield func(PartitionStat) bool) {
		for _, p := range []PartitionStat{
			{Topic: "t", Partition: 0, SizeBytes: 10, Segments: 1, Leader: 1, Replicas: 3, ISR: 3, MinISR: 2},
			{Topic: "t", Partition: 1, SizeBytes: 20, Segments: 2, Leader: 1, Replicas: 3, ISR: 2, MinISR: 2}, // under-replicated, at min
			{Topic: "t", Partition: 2, SizeBytes: 0, Segments: 1, Leader: -1, Replicas: 3, ISR: 1, MinISR: 2}, // offline, under min
			// another broker leads it: its health is counted there
			{Topic: "t", Partition: 3, SizeBytes: 0, Segments: 1, Leader: 2, Replicas: 3, ISR: 1, MinISR: 2, Follower: true},
		} {
			if !yield(p) {
				return
			}
		}
	})
	m.AddLagSource(iter.Seq[LagStat](func(yield func(LagStat) bool) {
		yield(LagStat{Group: "g", Topic: "t", Partition: 0, Lag: 7})
		yield(LagStat{Group: "g", Topic: "gone", Partition: 0, Lag: -1})
	}))
	m.AddSchemaSource(func(context.Context) (int, error) { return 0, errors.New("down") })
	f := gather(t, m)
	gauge := func(name string) float64 { return f[name].GetMetric()[0].GetGauge().GetValue() }
	for name, want := range map[string]float64{"ferry_partitions": 4, "ferry_under_replicated_partitions": 2,
		"ferry_offline_partitions": 1, "ferry_at_min_isr_partitions": 1, "ferry_under_min_isr_partitions": 1,
		"ferry_schema_store_up": 0} {
		if got := gauge(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := len(f["ferry_log_size_bytes"].GetMetric()); n != 4 {
		t.Errorf("%d log size series, want 4", n)
	}
	if lag := f["ferry_consumer_group_lag"].GetMetric(); len(lag) != 1 || lag[0].GetGauge().GetValue() != 7 {
		t.Errorf("lag series %v, want one of 7 (unknown lag is skipped)", lag)
	}
	if f["ferry_schema_registry_schemas"] != nil {
		t.Error("schema count exported while the store is down")
	}
}

// BenchmarkRequestHooks is what one Kafka produce request costs in hooks
// when metrics are on: the connection's idle and busy time, the request's
// count and latency, the topic's bytes and records.
func BenchmarkRequestHooks(b *testing.B) {
	m := New()
	l := m.Listener(ListenerKafka)
	r := m.Request(ListenerKafka, "Produce")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		l.Idle(time.Microsecond)
		r.Observe(time.Since(start))
		m.Topic("bench").In(1024, 10)
		l.Busy(time.Since(start))
	}
}

// TestReplicationGauges: the ISR change counters count what the leader
// committed; the cluster's leaderless partitions count as offline only
// while this node is the active controller (Kafka's OfflinePartitionsCount
// is the controller's), once, besides the failed logs held here; the
// replica max lag is the largest of the followed partitions'.
func TestReplicationGauges(t *testing.T) {
	m := New()
	m.ISRShrunk()
	m.ISRShrunk()
	m.ISRExpanded()
	m.AddPartitionSource(func(yield func(PartitionStat) bool) {
		for _, p := range []PartitionStat{
			{Topic: "t", Partition: 0, Leader: 1, Replicas: 3, ISR: 3, MinISR: 1},
			{Topic: "t", Partition: 1, Leader: 2, Replicas: 3, ISR: 3, MinISR: 1, Follower: true, FollowerLag: 40},
			{Topic: "t", Partition: 2, Leader: 3, Replicas: 3, ISR: 3, MinISR: 1, Follower: true, FollowerLag: 7},
			{Topic: "t", Partition: 3, Leader: -1, Replicas: 3, ISR: 1, MinISR: 1, Follower: true, Offline: true},
		} {
			if !yield(p) {
				return
			}
		}
	})
	m.AddLeaderlessSource(func() int { return 2 })
	value := func(f map[string]*dto.MetricFamily, name string) float64 {
		mf := f[name].GetMetric()[0]
		if c := mf.GetCounter(); c != nil {
			return c.GetValue()
		}
		return mf.GetGauge().GetValue()
	}
	f := gather(t, m)
	for name, want := range map[string]float64{"ferry_isr_shrinks_total": 2, "ferry_isr_expands_total": 1,
		"ferry_replica_max_lag": 40, "ferry_offline_partitions": 1, "ferry_under_replicated_partitions": 0} {
		if got := value(f, name); got != want {
			t.Errorf("not the controller: %s = %v, want %v", name, got, want)
		}
	}
	m.SetControllerActive(true)
	if got := value(gather(t, m), "ferry_offline_partitions"); got != 3 {
		t.Errorf("the controller: ferry_offline_partitions = %v, want 3 (1 failed log + 2 leaderless)", got)
	}
	m.SetControllerActive(false)
	if got := value(gather(t, m), "ferry_offline_partitions"); got != 1 {
		t.Errorf("no longer the controller: ferry_offline_partitions = %v, want 1", got)
	}
}
