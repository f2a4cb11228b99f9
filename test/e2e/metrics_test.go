package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// scrape is one parsed GET /metrics.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, node *harness.Node) scrape {
	t.Helper()
	res, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the counter, gauge or histogram count of the series of name
// whose labels include labels ("k=v" pairs); 0 when there is none.
func (s scrape) value(name string, labels ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	for _, m := range f.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, labels []string) bool {
	have := map[string]string{}
	for _, l := range m.Label {
		have[l.GetName()] = l.GetValue()
	}
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		if have[k] != v {
			return false
		}
	}
	return true
}

// delta is after - before for one series.
func delta(before, after scrape, name string, labels ...string) float64 {
	return after.value(name, labels...) - before.value(name, labels...)
}

func expectDelta(t *testing.T, before, after scrape, want float64, name string, labels ...string) {
	t.Helper()
	if got := delta(before, after, name, labels...); got != want {
		t.Errorf("%s%v moved by %v, want %v", name, labels, got, want)
	}
}

// rawBatch encodes n records as one record batch, as a client sends it.
func rawBatch(t *testing.T, prefix string, n int) []byte {
	t.Helper()
	var b records.Builder
	for i := 0; i < n; i++ {
		b.Add(records.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i)), Timestamp: time.Now().UnixMilli()})
	}
	batch, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// kafkaProduce sends one Produce request (one batch to one partition)
// through a franz-go client and returns the partition's error code.
func kafkaProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestMetricsCountBothListeners produces and fetches over HTTP and over
// the Kafka protocol and checks each counter moved by exactly what was
// sent: batch bytes (which the log stores as received, so the log size
// grows by the same amount), records, requests per route and API, errors
// by code.
func TestMetricsCountBothListeners(t *testing.T) {
	node := kafkaNode(t)
	const topic = "metered"
	createTopic(t, node, topic, 1)
	cl := franz(t, node)
	if code := kafkaProduce(t, cl, topic, 0, rawBatch(t, "warmup", 1)); code != 0 {
		t.Fatalf("warm-up produce: error %d", code)
	}
	tl := []string{"topic=" + topic}
	logLabels := []string{"topic=" + topic, "partition=0"}

	// HTTP produce: 3 records in one request.
	s0 := scrapeMetrics(t, node)
	mustPost(t, node.URL+"/kafka/"+topic, "application/json",
		`{"records":[{"value":{"n":1}},{"value":{"n":2}},{"key":"k","value":"three"}]}`, 200)
	s1 := scrapeMetrics(t, node)
	httpBytes := delta(s0, s1, "ferry_log_size_bytes", logLabels...)
	if httpBytes <= 0 {
		t.Fatalf("log size did not grow after an HTTP produce")
	}
	expectDelta(t, s0, s1, 3, "ferry_topic_messages_in_total", tl...)
	expectDelta(t, s0, s1, httpBytes, "ferry_topic_bytes_in_total", tl...)
	expectDelta(t, s0, s1, 1, "ferry_requests_total", "listener=http", "api=POST /kafka/{topic}")
	expectDelta(t, s0, s1, 1, "ferry_request_duration_seconds", "listener=http", "api=POST /kafka/{topic}")
	expectDelta(t, s0, s1, 0, "ferry_requests_total", "listener=kafka", "api=Produce")

	// Kafka produce: one request, one batch of 5 records.
	batch := rawBatch(t, "kafka", 5)
	if code := kafkaProduce(t, cl, topic, 0, batch); code != 0 {
		t.Fatalf("produce: error %d", code)
	}
	s2 := scrapeMetrics(t, node)
	expectDelta(t, s1, s2, 5, "ferry_topic_messages_in_total", tl...)
	expectDelta(t, s1, s2, float64(len(batch)), "ferry_topic_bytes_in_total", tl...)
	expectDelta(t, s1, s2, float64(len(batch)), "ferry_log_size_bytes", logLabels...)
	expectDelta(t, s1, s2, 1, "ferry_requests_total", "listener=kafka", "api=Produce")
	expectDelta(t, s1, s2, 1, "ferry_request_duration_seconds", "listener=kafka", "api=Produce")
	expectDelta(t, s1, s2, 0, "ferry_requests_total", "listener=http", "api=POST /kafka/{topic}")
	for _, l := range []string{"listener=kafka", "listener=http"} {
		if got := s2.value("ferry_open_connections", l); got < 1 {
			t.Errorf("ferry_open_connections{%s} = %v with a client connected", l, got)
		}
		if got := delta(s0, s2, "ferry_listener_busy_seconds_total", l); got <= 0 {
			t.Errorf("ferry_listener_busy_seconds_total{%s} did not move after a produce", l)
		}
		if got := delta(s0, s2, "ferry_listener_idle_seconds_total", l); got <= 0 {
			t.Errorf("ferry_listener_idle_seconds_total{%s} did not move between requests", l)
		}
	}

	// Fetch over HTTP: the whole log (9 records) in one read.
	logSize := s2.value("ferry_log_size_bytes", logLabels...)
	res, err := http.Get(node.URL + "/kafka/" + topic + "/partitions/0/records?offset=0")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("read: %v %v", err, res)
	}
	res.Body.Close()
	s3 := scrapeMetrics(t, node)
	expectDelta(t, s2, s3, logSize, "ferry_topic_bytes_out_total", tl...)
	expectDelta(t, s2, s3, 1, "ferry_requests_total", "listener=http", "api=GET /kafka/{topic}/partitions/{partition}/records")

	// Fetch over Kafka: a consumer reads all 9 records.
	consumeFranz(t, node, topic, 0, 9)
	s4 := scrapeMetrics(t, node)
	if got := delta(s3, s4, "ferry_topic_bytes_out_total", tl...); got < logSize {
		t.Errorf("bytes out moved by %v after a Kafka consumer read the whole log of %v bytes", got, logSize)
	}
	if got := delta(s3, s4, "ferry_requests_total", "listener=kafka", "api=Fetch"); got < 1 {
		t.Errorf("no Kafka Fetch request counted")
	}
	expectDelta(t, s3, s4, 0, "ferry_topic_messages_in_total", tl...)

	// Failures: a malformed HTTP body and a produce to a missing partition.
	mustPost(t, node.URL+"/kafka/"+topic, "application/json", `{"records":[`, 400)
	if code := kafkaProduce(t, cl, topic, 7, rawBatch(t, "nowhere", 1)); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to partition 7: error %d, want 3 (UNKNOWN_TOPIC_OR_PARTITION)", code)
	}
	s5 := scrapeMetrics(t, node)
	expectDelta(t, s4, s5, 1, "ferry_request_errors_total", "listener=http", "api=POST /kafka/{topic}", "code=40001")
	expectDelta(t, s4, s5, 1, "ferry_request_errors_total", "listener=kafka", "api=Produce", "code=UNKNOWN_TOPIC_OR_PARTITION")
	expectDelta(t, s4, s5, 0, "ferry_topic_messages_in_total", tl...)
	if t.Failed() {
		dumpFerry(t, s5)
	}
}

// TestMetricsClusterAndScrapeTimeGauges checks the single-node replication
// gauges, the log gauges and consumer group lag, which are read at scrape.
func TestMetricsClusterAndScrapeTimeGauges(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "gauged", 3)
	cl := franz(t, node)
	for i := 0; i < 4; i++ {
		if code := kafkaProduce(t, cl, "gauged", 1, rawBatch(t, "g", 1)); code != 0 {
			t.Fatalf("produce: error %d", code)
		}
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "lagging"
	commit.Generation = -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "gauged"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 1, 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := commit.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	s := scrapeMetrics(t, node)
	partitions := s.value("ferry_partitions")
	for name, want := range map[string]float64{
		"ferry_under_replicated_partitions":    0,
		"ferry_offline_partitions":             0,
		"ferry_under_min_isr_partitions":       0,
		"ferry_at_min_isr_partitions":          partitions, // ISR 1 = min.insync.replicas 1
		"ferry_isr_shrinks_total":              0,
		"ferry_isr_expands_total":              0,
		"ferry_unclean_leader_elections_total": 0,
		"ferry_controller_active":              1,
		"ferry_leader_elections_total":         partitions, // each partition got its leader once
	} {
		if got := s.value(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if partitions < 3 {
		t.Errorf("ferry_partitions = %v, want at least the 3 of gauged", partitions)
	}
	if got := s.value("ferry_log_segments", "topic=gauged", "partition=1"); got != 1 {
		t.Errorf("ferry_log_segments{gauged,1} = %v, want 1", got)
	}
	if got := s.value("ferry_log_size_bytes", "topic=gauged", "partition=1"); got <= 0 {
		t.Errorf("ferry_log_size_bytes{gauged,1} = %v", got)
	}
	if got := s.value("ferry_consumer_group_lag", "group=lagging", "topic=gauged", "partition=1"); got != 3 {
		t.Errorf("ferry_consumer_group_lag{lagging,gauged,1} = %v, want 3 (4 records, committed 1)", got)
	}
	if got := s.value("ferry_schema_store_up"); got != 1 {
		t.Errorf("ferry_schema_store_up = %v, want 1", got)
	}
	if t.Failed() {
		dumpFerry(t, s)
	}
}

// TestMetricsOff: --metrics=false serves no /metrics, the rest works.
func TestMetricsOff(t *testing.T) {
	node := harness.Start(t, "--metrics=false")
	mustPost(t, node.URL+"/kafka/quiet", "application/json", `{"records":[{"value":1}]}`, 200)
	res, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics with --metrics=false: %d, want 404", res.StatusCode)
	}
}

// dumpFerry logs the ferry_ series of a scrape, for failures.
func dumpFerry(t *testing.T, s scrape) {
	t.Helper()
	var names []string
	for name := range s {
		if strings.HasPrefix(name, "ferry_") && !strings.HasSuffix(name, "_seconds") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		for _, m := range s[name].Metric {
			fmt.Fprintf(&b, "%s%v %v%v\n", name, m.Label, m.GetCounter().GetValue(), m.GetGauge().GetValue())
		}
	}
	t.Log(b.String())
}
