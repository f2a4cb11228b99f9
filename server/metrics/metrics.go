// Package metrics is the one place where ferry's Prometheus metrics are
// defined. Every metric name, label and help text is in this file; the
// collectors that read state at scrape time are in collect.go.
//
// It depends on no other ferry package: the broker core, the listeners and
// cmd/ferry call small hooks (Topic, Request, Listener, LeaderElected,
// ObserveFlush) and register sources (AddPartitionSource, AddLagSource,
// AddSchemaSource) that are read when /metrics is scraped. A nil *Metrics
// is valid and does nothing, which is how metrics are turned off
// (`ferry serve --metrics=false`); every hook checks for it.
//
// Each Metrics owns its own prometheus.Registry (never the global default
// one), so tests can run several brokers in one process.
//
// Hot paths: per-topic counters are looked up once per request or batch
// (Topic returns cached children), Kafka API children are looked up once per
// API when the listener starts, HTTP route children once per route. Nothing
// here allocates per record.
//
// Meanings follow Kafka's JMX metrics where one exists:
//
//	ferry_topic_bytes_in_total        BrokerTopicMetrics BytesInPerSec (batch bytes appended)
//	ferry_topic_bytes_out_total       BrokerTopicMetrics BytesOutPerSec (batch bytes read by fetches)
//	ferry_topic_messages_in_total     BrokerTopicMetrics MessagesInPerSec
//	ferry_requests_total, ferry_request_duration_seconds
//	                                  RequestMetrics RequestsPerSec / TotalTimeMs, per listener and API
//	ferry_request_errors_total        RequestMetrics ErrorsPerSec, per error code
//	ferry_listener_{idle,busy}_seconds_total
//	                                  RequestHandlerAvgIdlePercent / NetworkProcessorAvgIdlePercent:
//	                                  idle / (idle + busy) is the fraction of connection time spent
//	                                  waiting for the next request rather than serving one (see Listener)
//	ferry_under_replicated_partitions, ferry_offline_partitions,
//	ferry_at_min_isr_partitions, ferry_under_min_isr_partitions
//	                                  ReplicaManager / KafkaController gauges: the ISR gauges count
//	                                  the partitions this node leads (each partition once in a
//	                                  cluster); offline counts the logs failed here and, on the
//	                                  active controller only, the cluster's leaderless partitions
//	ferry_isr_shrinks_total, ferry_isr_expands_total
//	                                  IsrShrinksPerSec / IsrExpandsPerSec: ISR changes this node
//	                                  committed as leader (not the controller's removal of a dead
//	                                  broker, as in Kafka)
//	ferry_replica_max_lag             ReplicaFetcherManager MaxLag: the most records a partition this
//	                                  node follows is behind its leader's high watermark
//	ferry_leader_elections_total, ferry_unclean_leader_elections_total
//	ferry_controller_active           ActiveControllerCount
//	ferry_log_size_bytes, ferry_log_segments   Log Size / NumLogSegments
//	ferry_log_failed, ferry_log_recoveries_total
//	                                  OfflineLogDirectoryCount, per partition: a log failed by a
//	                                  write or fsync error (it also counts in ferry_offline_partitions),
//	                                  and failed logs brought back without a restart
//	ferry_log_flush_duration_seconds  LogFlushRateAndTimeMs
//	ferry_log_cleaner_dirty_ratio     per compacted partition: dirty over cleanable bytes
//	ferry_log_cleaner_max_dirty_percent, ferry_log_cleaner_max_clean_time_seconds
//	                                  LogCleaner max-dirty-percent / max-clean-time-secs
//	                                  (over the partitions here, at scrape time)
//	ferry_consumer_group_lag          consumer lag per group and partition
//	ferry_open_connections            per listener
//	ferry_connections_rejected_total  connections closed at accept, by listener and limit
//	                                  (max.connections, max.connections.per.ip, and an ip
//	                                  entity's connection_creation_rate: closed after its delay)
//	ferry_connection_accept_throttle_seconds_total
//	                                  time accepts waited for max.connection.creation.rate
//	                                  (Kafka's connection-accept-throttle-time)
//	ferry_request_memory_reserved_bytes, ferry_request_memory_waiting_connections
//	                                  queued.max.request.bytes in use, and connections waiting for it
//	                                  (Kafka's MemoryPoolAvailable / MemoryPoolUsed idea)
//	ferry_schema_registry_requests_total, ferry_schema_registry_schemas
//	ferry_kafka_fetch_sessions, ferry_kafka_fetch_session_partitions,
//	ferry_kafka_fetch_session_evictions_total
//	                                  FetchSessionCache NumIncrementalFetchSessions /
//	                                  NumIncrementalFetchPartitionsCached /
//	                                  IncrementalFetchSessionEvictionsPerSec (KIP-227)
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Listener names used as the "listener" label.
const (
	ListenerKafka = "kafka"
	ListenerHTTP  = "http"
)

// Metrics holds one process's (or one test broker's) metrics.
type Metrics struct {
	reg *prometheus.Registry

	bytesIn, bytesOut, messagesIn *prometheus.CounterVec // topic

	requests *prometheus.CounterVec   // listener, api
	duration *prometheus.HistogramVec // listener, api
	errors   *prometheus.CounterVec   // listener, api, code

	conns    *prometheus.GaugeVec   // listener
	rejected *prometheus.CounterVec // listener, reason
	throttle *prometheus.CounterVec // listener
	reserved *prometheus.GaugeVec   // listener
	waiting  *prometheus.GaugeVec   // listener

	isrShrinks, isrExpands        prometheus.Counter
	leaderElections, uncleanElect prometheus.Counter
	logRecoveries                 prometheus.Counter
	controllerActive              prometheus.Gauge
	flush                         prometheus.Histogram
	schemaRequests                *prometheus.CounterVec // api, status
	// isController mirrors controllerActive for the collectors: only the
	// active controller reports the cluster's leaderless partitions.
	isController atomic.Bool

	// topics maps topic names to their counters. Readers load the map
	// without locking; writers (a new or deleted topic) copy it under
	// topicsMu and swap it in.
	topics   atomic.Pointer[map[string]*TopicCounters]
	topicsMu sync.Mutex

	listeners struct {
		sync.Mutex
		m map[string]*Listener
	}
	sources sources // collect.go
	quotas  quotaMetrics
}

// New creates the metrics and registers them, with the Go runtime and
// process collectors, on a registry of their own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.topics.Store(&map[string]*TopicCounters{})
	m.listeners.m = make(map[string]*Listener)
	m.bytesIn = counterVec("ferry_topic_bytes_in_total", "Record batch bytes appended to the topic by produce requests (both listeners).", "topic")
	m.bytesOut = counterVec("ferry_topic_bytes_out_total", "Record batch bytes read from the topic by fetch requests (both listeners).", "topic")
	m.messagesIn = counterVec("ferry_topic_messages_in_total", "Records appended to the topic by produce requests (both listeners).", "topic")
	m.requests = counterVec("ferry_requests_total", "Requests served, by listener and API (Kafka API name, or HTTP method and chi route pattern).", "listener", "api")
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ferry_request_duration_seconds",
		Help:    "Time to serve a request, by listener and API: Kafka, from the request read off the socket to its response handed to the connection's writer; HTTP, the handler's run. Long-polling fetches include their wait.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"listener", "api"})
	m.errors = counterVec("ferry_request_errors_total", "Failed requests (Kafka: per failed partition, by Kafka error name; HTTP: by error_code of the JSON error body, or the status).", "listener", "api", "code")
	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ferry_open_connections", Help: "Open client connections per listener."}, []string{"listener"})
	m.rejected = counterVec("ferry_connections_rejected_total", "Connections closed as soon as accepted because a connection limit was reached, by listener and the limit's Kafka name (connection_creation_rate: an ip quota's, closed after the throttle time, as Kafka does).", "listener", "reason")
	m.throttle = counterVec("ferry_connection_accept_throttle_seconds_total", "Time the acceptor waited before taking a new connection in, to hold max.connection.creation.rate, by listener.", "listener")
	m.reserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ferry_request_memory_reserved_bytes",
		Help: "Bytes of the request memory budget (queued.max.request.bytes) reserved by request frames being read or served."}, []string{"listener"})
	m.waiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ferry_request_memory_waiting_connections",
		Help: "Connections that stopped reading until their request frame fits in the request memory budget."}, []string{"listener"})
	m.isrShrinks = counter("ferry_isr_shrinks_total", "Times this node, leading a partition, committed a smaller in-sync replica set (followers that fell behind for replica.lag.time.max.ms).")
	m.isrExpands = counter("ferry_isr_expands_total", "Times this node, leading a partition, committed a larger in-sync replica set (a follower caught up).")
	m.leaderElections = counter("ferry_leader_elections_total", "Partitions that got a leader on this node (at startup, topic creation, partition addition).")
	m.uncleanElect = counter("ferry_unclean_leader_elections_total", "Leaders elected from outside the in-sync replica set (never, on a single node).")
	m.logRecoveries = counter("ferry_log_recoveries_total", "Failed partition logs (write or fsync error) recovered without a restart, by the probe loop or POST /admin/partitions/{topic}/{partition}/recover.")
	m.controllerActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_controller_active", Help: "1 when this node is the active controller (a single node always is)."})
	m.flush = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ferry_log_flush_duration_seconds",
		Help:    "Time one partition log fsync (group commit, interval flush or shutdown flush) took.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.schemaRequests = counterVec("ferry_schema_registry_requests_total", "Schema registry HTTP requests by route and status.", "api", "status")
	m.quotas.register(m.reg)
	m.reg.MustRegister(m.bytesIn, m.bytesOut, m.messagesIn, m.requests, m.duration, m.errors,
		m.conns, m.rejected, m.throttle, m.reserved, m.waiting, m.isrShrinks, m.isrExpands, m.leaderElections, m.uncleanElect, m.logRecoveries,
		m.controllerActive, m.flush, m.schemaRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&partitionCollector{m: m}, &lagCollector{m: m}, &schemaCollector{m: m}, &listenerCollector{m: m}, &fetchSessionCollector{m: m})
	return m
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// Registry is where everything is registered; tests gather from it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// TopicCounters are one topic's children, cached so the produce and fetch
// paths do one map lookup per request or batch. A nil *TopicCounters
// ignores every call.
type TopicCounters struct {
	bytesIn, bytesOut, messagesIn prometheus.Counter
}

// Topic returns the topic's counters; nil when m is nil.
func (m *Metrics) Topic(name string) *TopicCounters {
	if m == nil {
		return nil
	}
	if tc := (*m.topics.Load())[name]; tc != nil {
		return tc
	}
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	old := *m.topics.Load()
	if tc := old[name]; tc != nil {
		return tc
	}
	tc := &TopicCounters{bytesIn: m.bytesIn.WithLabelValues(name), bytesOut: m.bytesOut.WithLabelValues(name),
		messagesIn: m.messagesIn.WithLabelValues(name)}
	next := make(map[string]*TopicCounters, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = tc
	m.topics.Store(&next)
	return tc
}

// ForgetTopic drops a deleted topic's series.
func (m *Metrics) ForgetTopic(name string) {
	if m == nil {
		return
	}
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	next := make(map[string]*TopicCounters, len(*m.topics.Load()))
	for k, v := range *m.topics.Load() {
		if k != name {
			next[k] = v
		}
	}
	m.topics.Store(&next)
	m.bytesIn.DeleteLabelValues(name)
	m.bytesOut.DeleteLabelValues(name)
	m.messagesIn.DeleteLabelValues(name)
}

// In counts an append of records records in bytes batch bytes.
func (tc *TopicCounters) In(bytes, records int) {
	if tc == nil {
		return
	}
	tc.bytesIn.Add(float64(bytes))
	tc.messagesIn.Add(float64(records))
}

// Out counts batch bytes read for a consumer.
func (tc *TopicCounters) Out(bytes int) {
	if tc == nil || bytes == 0 {
		return
	}
	tc.bytesOut.Add(float64(bytes))
}

// Request is one (listener, API) pair's children. A nil *Request ignores
// every call.
type Request struct {
	m             *Metrics
	listener, api string
	count         prometheus.Counter
	dur           prometheus.Observer
	schema        bool // a schema registry route: also counted by status
}

// Request returns the children of a listener's API; callers cache it.
func (m *Metrics) Request(listener, api string) *Request {
	if m == nil {
		return nil
	}
	return &Request{m: m, listener: listener, api: api,
		count: m.requests.WithLabelValues(listener, api), dur: m.duration.WithLabelValues(listener, api)}
}

// SchemaRoute marks r as a schema registry route, also counted in
// ferry_schema_registry_requests_total.
func (r *Request) SchemaRoute() *Request {
	if r != nil {
		r.schema = true
	}
	return r
}

// Observe counts one request that took d.
func (r *Request) Observe(d time.Duration) {
	if r == nil {
		return
	}
	r.count.Inc()
	r.dur.Observe(d.Seconds())
}

// Failed counts n failures with an error code (a Kafka error name or an
// HTTP error_code); the code set is bounded by the protocols.
func (r *Request) Failed(code string, n int) {
	if r == nil || n <= 0 {
		return
	}
	r.m.errors.WithLabelValues(r.listener, r.api, code).Add(float64(n))
}

// Status counts a schema registry request's HTTP status.
func (r *Request) Status(status int) {
	if r == nil || !r.schema {
		return
	}
	r.m.schemaRequests.WithLabelValues(r.api, strconv.Itoa(status)).Inc()
}

// Listener is one listener's connection accounting. A nil *Listener
// ignores every call.
//
// The idle ratio, Go's counterpart of Kafka's request handler and network
// processor idle percentages: ferry has no fixed thread pools — each
// connection has its own goroutines — so it measures connection time. A
// connection is idle while its read loop (Kafka) or net/http (HTTP
// keep-alive) waits for the next request, and busy from the moment a
// request has been read until its response has been handed over. Spans are
// added when they end, so a connection idle for minutes shows up when its
// next request arrives or when it closes.
//
// Idle and busy time are integer nanoseconds (one atomic add each), turned
// into seconds when scraped (listenerCollector).
type Listener struct {
	idleNs, busyNs atomic.Int64
	open           prometheus.Gauge
	rejected       *prometheus.CounterVec // curried with the listener's name
	throttle       prometheus.Counter
	reserved       prometheus.Gauge
	waiting        prometheus.Gauge
}

// Listener returns a listener's accounting, the same for the same name.
func (m *Metrics) Listener(name string) *Listener {
	if m == nil {
		return nil
	}
	m.listeners.Lock()
	defer m.listeners.Unlock()
	l := m.listeners.m[name]
	if l == nil {
		l = &Listener{open: m.conns.WithLabelValues(name),
			rejected: m.rejected.MustCurryWith(prometheus.Labels{"listener": name}), throttle: m.throttle.WithLabelValues(name),
			reserved: m.reserved.WithLabelValues(name), waiting: m.waiting.WithLabelValues(name)}
		m.listeners.m[name] = l
	}
	return l
}

// Opened and Closed track open connections.
func (l *Listener) Opened() {
	if l != nil {
		l.open.Inc()
	}
}

// Closed counts a connection closing.
func (l *Listener) Closed() {
	if l != nil {
		l.open.Dec()
	}
}

// Rejected counts a connection closed at accept by the limit named reason.
func (l *Listener) Rejected(reason string) {
	if l != nil {
		l.rejected.WithLabelValues(reason).Inc()
	}
}

// AcceptThrottled adds time the acceptor waited for a connection rate.
func (l *Listener) AcceptThrottled(d time.Duration) {
	if l != nil {
		l.throttle.Add(d.Seconds())
	}
}

// RequestMemory sets the request memory budget's reserved bytes and the
// connections waiting for it.
func (l *Listener) RequestMemory(reserved int64, waiting int) {
	if l != nil {
		l.reserved.Set(float64(reserved))
		l.waiting.Set(float64(waiting))
	}
}

// Idle adds time a connection waited for a request.
func (l *Listener) Idle(d time.Duration) {
	if l != nil {
		l.idleNs.Add(int64(d))
	}
}

// Busy adds time a connection spent on a request.
func (l *Listener) Busy(d time.Duration) {
	if l != nil {
		l.busyNs.Add(int64(d))
	}
}

// LeaderElected counts a partition getting a leader on this node.
func (m *Metrics) LeaderElected() {
	if m != nil {
		m.leaderElections.Inc()
	}
}

// PartitionRecovered counts a failed partition log recovered without a restart.
func (m *Metrics) PartitionRecovered() {
	if m != nil {
		m.logRecoveries.Inc()
	}
}

// SetControllerActive sets ferry_controller_active.
func (m *Metrics) SetControllerActive(active bool) {
	if m == nil {
		return
	}
	v := 0.0
	if active {
		v = 1
	}
	m.isController.Store(active)
	m.controllerActive.Set(v)
}

// ISRShrunk counts an ISR shrink committed by this node as leader.
func (m *Metrics) ISRShrunk() {
	if m != nil {
		m.isrShrinks.Inc()
	}
}

// ISRExpanded counts an ISR expansion committed by this node as leader.
func (m *Metrics) ISRExpanded() {
	if m != nil {
		m.isrExpands.Inc()
	}
}

// epoch is the base of Now.
var epoch = time.Now()

// Now is a monotonic clock reading for timing hooks: the time since the
// process started. It reads only the monotonic clock, about half what
// time.Now costs (which also reads the wall clock); the difference of two
// readings is an exact duration.
func Now() time.Duration { return time.Since(epoch) }

// ObserveFlush records one log fsync; it fits storage.Options.OnFlush.
func (m *Metrics) ObserveFlush(d time.Duration) {
	if m != nil {
		m.flush.Observe(d.Seconds())
	}
}
