package metrics

import (
	"context"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PartitionStat is what the partition collector reads from a partition at
// scrape time.
type PartitionStat struct {
	Topic     string
	Partition int32
	SizeBytes int64
	Segments  int
	// Leader is the leader's broker id, -1 when the partition has none (offline).
	Leader   int32
	Replicas int
	ISR      int
	// MinISR is the topic's min.insync.replicas.
	MinISR int
	// Offline: the partition's log failed on a write or fsync error and
	// refuses appends (it counts as offline, as in Kafka after a log
	// directory failure).
	Offline bool
	// Follower: another broker leads the partition. Kafka reports a
	// partition's replication health on its leader only, so a cluster
	// counts each under-replicated partition once.
	Follower bool
	// FollowerLag is, on a follower, how many records its log end is
	// behind the leader's high watermark as of the last fetch answer.
	FollowerLag int64
	// Compacted: cleanup.policy holds compact; then DirtyRatio is the
	// share of its cleanable bytes not yet cleaned and LastCleanSeconds
	// how long its last cleaning pass took.
	Compacted        bool
	DirtyRatio       float64
	LastCleanSeconds float64
}

// LagStat is one consumer group's lag on one partition.
type LagStat struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

// FetchSessionStat is the Kafka listener's incremental fetch session
// cache (KIP-227) at scrape time.
type FetchSessionStat struct {
	Sessions, Partitions int
	// Evictions counts the sessions dropped for a new one or for going
	// unused, since the listener started.
	Evictions uint64
}

// sources are the state read at scrape time, registered by their owners.
type sources struct {
	mu            sync.Mutex
	partitions    []iter.Seq[PartitionStat]
	lags          []iter.Seq[LagStat]
	leaderless    []func() int
	schemas       []func(context.Context) (int, error)
	fetchSessions []func() FetchSessionStat
}

// AddPartitionSource registers the partitions to report (the broker core).
func (m *Metrics) AddPartitionSource(src iter.Seq[PartitionStat]) {
	if m == nil {
		return
	}
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.partitions = append(m.sources.partitions, src)
}

// AddLeaderlessSource registers a count of the cluster's partitions
// without a leader (the controller's view), added to
// ferry_offline_partitions while this node is the active controller
// (SetControllerActive), as Kafka's OfflinePartitionsCount is reported by
// its controller alone.
func (m *Metrics) AddLeaderlessSource(count func() int) {
	if m == nil {
		return
	}
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.leaderless = append(m.sources.leaderless, count)
}

// AddLagSource registers consumer group lag (the group coordinator).
func (m *Metrics) AddLagSource(src iter.Seq[LagStat]) {
	if m == nil {
		return
	}
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.lags = append(m.sources.lags, src)
}

// AddSchemaSource registers a function counting registered schemas (live
// subject versions); its error marks the schema store down.
func (m *Metrics) AddSchemaSource(count func(context.Context) (int, error)) {
	if m == nil {
		return
	}
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.schemas = append(m.sources.schemas, count)
}

// AddFetchSessionSource registers the Kafka listener's fetch session
// cache.
func (m *Metrics) AddFetchSessionSource(read func() FetchSessionStat) {
	if m == nil {
		return
	}
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	m.sources.fetchSessions = append(m.sources.fetchSessions, read)
}

func (m *Metrics) snapshotSources() sources {
	m.sources.mu.Lock()
	defer m.sources.mu.Unlock()
	return sources{partitions: m.sources.partitions, lags: m.sources.lags, leaderless: m.sources.leaderless, schemas: m.sources.schemas,
		fetchSessions: m.sources.fetchSessions}
}

var (
	descFetchSessions = prometheus.NewDesc("ferry_kafka_fetch_sessions",
		"Incremental fetch sessions (KIP-227) the Kafka listener holds (Kafka's NumIncrementalFetchSessions).", nil, nil)
	descFetchSessionPartitions = prometheus.NewDesc("ferry_kafka_fetch_session_partitions",
		"Partitions in all incremental fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).", nil, nil)
	descFetchSessionEvictions = prometheus.NewDesc("ferry_kafka_fetch_session_evictions_total",
		"Fetch sessions dropped for a new one or for going unused (Kafka's IncrementalFetchSessionEvictionsPerSec).", nil, nil)
)

// fetchSessionCollector reads the fetch session caches at scrape time.
type fetchSessionCollector struct{ m *Metrics }

func (c *fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFetchSessions
	ch <- descFetchSessionPartitions
	ch <- descFetchSessionEvictions
}

func (c *fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	var sum FetchSessionStat
	for _, read := range c.m.snapshotSources().fetchSessions {
		st := read()
		sum.Sessions += st.Sessions
		sum.Partitions += st.Partitions
		sum.Evictions += st.Evictions
	}
	ch <- prometheus.MustNewConstMetric(descFetchSessions, prometheus.GaugeValue, float64(sum.Sessions))
	ch <- prometheus.MustNewConstMetric(descFetchSessionPartitions, prometheus.GaugeValue, float64(sum.Partitions))
	ch <- prometheus.MustNewConstMetric(descFetchSessionEvictions, prometheus.CounterValue, float64(sum.Evictions))
}

var (
	descLogSize = prometheus.NewDesc("ferry_log_size_bytes",
		"Bytes of a partition log's segment files on disk.", []string{"topic", "partition"}, nil)
	descLogSegments = prometheus.NewDesc("ferry_log_segments",
		"Segments of a partition log.", []string{"topic", "partition"}, nil)
	descLogFailed = prometheus.NewDesc("ferry_log_failed",
		"1 while a partition log has failed on a write or fsync error (disk full, EIO) and refuses appends, else 0.", []string{"topic", "partition"}, nil)
	descPartitions = prometheus.NewDesc("ferry_partitions",
		"Partitions this node hosts.", nil, nil)
	descUnderReplicated = prometheus.NewDesc("ferry_under_replicated_partitions",
		"Partitions whose in-sync replica set is smaller than their replica set.", nil, nil)
	descOffline = prometheus.NewDesc("ferry_offline_partitions",
		"Partitions whose log failed here (ferry_log_failed) and, on the active controller, the cluster's partitions without a leader: they refuse produce.", nil, nil)
	descMaxLag = prometheus.NewDesc("ferry_replica_max_lag",
		"The most records any partition this node follows is behind its leader's high watermark (Kafka's MaxLag; 0 when it follows none).", nil, nil)
	descAtMinISR = prometheus.NewDesc("ferry_at_min_isr_partitions",
		"Partitions whose in-sync replica count equals min.insync.replicas (one more loss blocks acks=all).", nil, nil)
	descUnderMinISR = prometheus.NewDesc("ferry_under_min_isr_partitions",
		"Partitions whose in-sync replica count is below min.insync.replicas (acks=all produce fails).", nil, nil)
	descLag = prometheus.NewDesc("ferry_consumer_group_lag",
		"Records between a consumer group's committed offset and the high watermark.", []string{"group", "topic", "partition"}, nil)
	descDirtyRatio = prometheus.NewDesc("ferry_log_cleaner_dirty_ratio",
		"A compacted partition's dirty bytes over its cleanable bytes (compared with min.cleanable.dirty.ratio).", []string{"topic", "partition"}, nil)
	descMaxDirtyPercent = prometheus.NewDesc("ferry_log_cleaner_max_dirty_percent",
		"The highest dirty ratio of any compacted partition here, in percent (Kafka's max-dirty-percent).", nil, nil)
	descMaxCleanTime = prometheus.NewDesc("ferry_log_cleaner_max_clean_time_seconds",
		"The longest last cleaning pass of any compacted partition here (Kafka's max-clean-time-secs).", nil, nil)
	descSchemas = prometheus.NewDesc("ferry_schema_registry_schemas",
		"Registered schemas: live subject versions.", nil, nil)
	descSchemaUp = prometheus.NewDesc("ferry_schema_store_up",
		"1 when the schema store answered the last scrape, else 0.", nil, nil)
)

// partitionCollector reads log sizes and replica state at scrape time, so
// the append path never touches these metrics.
type partitionCollector struct{ m *Metrics }

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLogSize, descLogSegments, descLogFailed, descPartitions,
		descUnderReplicated, descOffline, descAtMinISR, descUnderMinISR, descMaxLag,
		descDirtyRatio, descMaxDirtyPercent, descMaxCleanTime} {
		ch <- d
	}
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	var total, under, offline, atMin, underMin int
	var maxLag int64
	var maxDirty, maxClean float64
	srcs := c.m.snapshotSources()
	if c.m.isController.Load() {
		for _, count := range srcs.leaderless {
			offline += count()
		}
	}
	for _, src := range srcs.partitions {
		for p := range src {
			part := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(descLogSize, prometheus.GaugeValue, float64(p.SizeBytes), p.Topic, part)
			ch <- prometheus.MustNewConstMetric(descLogSegments, prometheus.GaugeValue, float64(p.Segments), p.Topic, part)
			ch <- prometheus.MustNewConstMetric(descLogFailed, prometheus.GaugeValue, boolValue(p.Offline), p.Topic, part)
			if p.Compacted {
				ch <- prometheus.MustNewConstMetric(descDirtyRatio, prometheus.GaugeValue, p.DirtyRatio, p.Topic, part)
				maxDirty, maxClean = max(maxDirty, p.DirtyRatio), max(maxClean, p.LastCleanSeconds)
			}
			total++
			if p.Offline { // a failed log, led here or not
				offline++
			}
			if p.Follower {
				maxLag = max(maxLag, p.FollowerLag)
				continue
			}
			if p.Leader < 0 && !p.Offline {
				offline++ // not the broker's: it reports leaderless replicas as followers, for the controller to count once
			}
			if p.ISR < p.Replicas {
				under++
			}
			if p.ISR == p.MinISR {
				atMin++
			}
			if p.ISR < p.MinISR {
				underMin++
			}
		}
	}
	for _, g := range []struct {
		d *prometheus.Desc
		v int
	}{{descPartitions, total}, {descUnderReplicated, under}, {descOffline, offline},
		{descAtMinISR, atMin}, {descUnderMinISR, underMin}, {descMaxLag, int(maxLag)}} {
		ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(g.v))
	}
	ch <- prometheus.MustNewConstMetric(descMaxDirtyPercent, prometheus.GaugeValue, 100*maxDirty)
	ch <- prometheus.MustNewConstMetric(descMaxCleanTime, prometheus.GaugeValue, maxClean)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// lagCollector reads consumer group lag at scrape time.
type lagCollector struct{ m *Metrics }

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descLag }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.m.snapshotSources().lags {
		for l := range src {
			if l.Lag < 0 {
				continue // unknown: the partition is gone
			}
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(l.Lag),
				l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
		}
	}
}

var (
	descIdle = prometheus.NewDesc("ferry_listener_idle_seconds_total",
		"Connection-seconds spent waiting for (and reading) the next request: Kafka, the read loop on the socket; HTTP, keep-alive idle. idle/(idle+busy) is the idle ratio.",
		[]string{"listener"}, nil)
	descBusy = prometheus.NewDesc("ferry_listener_busy_seconds_total",
		"Connection-seconds spent serving a request: Kafka, from the request read to its response handed to the writer; HTTP, from its first byte to the end of the response.",
		[]string{"listener"}, nil)
)

// listenerCollector exports the listeners' idle and busy nanoseconds as
// seconds.
type listenerCollector struct{ m *Metrics }

func (c *listenerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descIdle
	ch <- descBusy
}

func (c *listenerCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.listeners.Lock()
	defer c.m.listeners.Unlock()
	for name, l := range c.m.listeners.m {
		ch <- prometheus.MustNewConstMetric(descIdle, prometheus.CounterValue, time.Duration(l.idleNs.Load()).Seconds(), name)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, time.Duration(l.busyNs.Load()).Seconds(), name)
	}
}

// schemaStoreTimeout bounds how long a scrape waits for the schema store.
const schemaStoreTimeout = 2 * time.Second

// schemaCollector counts schemas at scrape time.
type schemaCollector struct{ m *Metrics }

func (c *schemaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSchemas
	ch <- descSchemaUp
}

func (c *schemaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, count := range c.m.snapshotSources().schemas {
		ctx, cancel := context.WithTimeout(context.Background(), schemaStoreTimeout)
		n, err := count(ctx)
		cancel()
		up := 1.0
		if err != nil {
			up = 0
		} else {
			ch <- prometheus.MustNewConstMetric(descSchemas, prometheus.GaugeValue, float64(n))
		}
		ch <- prometheus.MustNewConstMetric(descSchemaUp, prometheus.GaugeValue, up)
	}
}
