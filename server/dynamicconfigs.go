package server

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// Dynamic broker configs beyond the replication throttle (KIP-226): the
// log defaults of topics without their own value, and the cleaner's
// thread count. Each is set for one broker (/config/brokers/<id>) or for
// every broker (/config/brokers/<default>); a broker's own value wins,
// then the cluster default, then server.properties. Kafka's precedence
// among the retention keys holds: .ms over .minutes over .hours, and
// log.roll.ms over log.roll.hours.

// Dynamic broker config keys for the log defaults and the cleaner.
const (
	CfgLogRetentionMs      = "log.retention.ms"
	CfgLogRetentionMinutes = "log.retention.minutes"
	CfgLogRetentionHours   = "log.retention.hours"
	CfgLogRetentionBytes   = "log.retention.bytes"
	CfgLogSegmentBytes     = "log.segment.bytes"
	CfgLogRollMs           = "log.roll.ms"
	CfgLogRollHours        = "log.roll.hours"
	CfgLogCleanerThreads   = "log.cleaner.threads"

	CfgLogFlushMessages     = "log.flush.interval.messages"
	CfgLogFlushMs           = "log.flush.interval.ms"
	CfgLogIndexInterval     = "log.index.interval.bytes"
	CfgBrokerMinISR         = "min.insync.replicas"
	CfgCleanerBackoffMs     = "log.cleaner.backoff.ms"
	CfgCleanerDeleteRetMs   = "log.cleaner.delete.retention.ms"
	CfgCleanerMinLagMs      = "log.cleaner.min.compaction.lag.ms"
	CfgCleanerMaxLagMs      = "log.cleaner.max.compaction.lag.ms"
	CfgCleanerMinCleanRatio = "log.cleaner.min.cleanable.ratio"
)

// DynamicBrokerConfigNames are the broker configs that change at run
// time, sorted: what AlterConfigs, which replaces them all, clears when
// not given.
func DynamicBrokerConfigNames() []string {
	names := make([]string, 0, len(dynamicBrokerConfigs))
	for k := range dynamicBrokerConfigs {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// maxCleanerThreads bounds log.cleaner.threads set at run time.
const maxCleanerThreads = 64

// logDefaults are the log settings of a topic without overrides.
func (b *Broker) logDefaults() storage.Config {
	if c := b.dynamicLog.Load(); c != nil {
		return *c
	}
	return b.cfg.Log
}

// dynamicValue is key's value in force: this broker's own, else the
// cluster default's.
func dynamicValue(own, def map[string]string, key string) (int64, bool) {
	v, ok := own[key]
	if !ok {
		v, ok = def[key]
	}
	if !ok {
		return 0, false
	}
	n, err := parseLong(v)
	return n, err == nil
}

// effectiveLog applies the dynamic log configs to the static defaults.
func effectiveLog(static storage.Config, own, def map[string]string) storage.Config {
	c := static
	val := func(key string) (int64, bool) { return dynamicValue(own, def, key) }
	if n, ok := val(CfgLogRetentionMs); ok {
		c.RetentionTime = msDuration(n)
	} else if n, ok := val(CfgLogRetentionMinutes); ok {
		c.RetentionTime = scaled(n, time.Minute)
	} else if n, ok := val(CfgLogRetentionHours); ok {
		c.RetentionTime = scaled(n, time.Hour)
	}
	if n, ok := val(CfgLogRetentionBytes); ok {
		c.RetentionBytes = n
	}
	if n, ok := val(CfgLogSegmentBytes); ok {
		c.SegmentBytes = n
	}
	if n, ok := val(CfgLogRollMs); ok {
		c.SegmentMaxAge = msDuration(n)
	} else if n, ok := val(CfgLogRollHours); ok {
		c.SegmentMaxAge = scaled(n, time.Hour)
	}
	if n, ok := val(CfgLogFlushMessages); ok {
		c.FlushMessages = n
	}
	if n, ok := val(CfgLogFlushMs); ok {
		c.FlushInterval = msDuration(n)
	}
	if n, ok := val(CfgLogIndexInterval); ok {
		c.IndexIntervalBytes = int(n)
	}
	return c
}

// effectiveCleaner applies the dynamic cleaner configs to the static
// ones: the compaction defaults of topics without their own, and the
// threads' backoff.
func effectiveCleaner(static CleanerConfig, own, def map[string]string) CleanerConfig {
	c := static
	ms := func(key string, dst *time.Duration) {
		if n, ok := dynamicValue(own, def, key); ok {
			*dst = msDuration(n)
		}
	}
	ms(CfgCleanerBackoffMs, &c.Backoff)
	ms(CfgCleanerDeleteRetMs, &c.DeleteRetention)
	ms(CfgCleanerMinLagMs, &c.MinCompactionLag)
	if n, ok := dynamicValue(own, def, CfgCleanerMaxLagMs); ok {
		c.MaxCompactionLag = msDuration(n)
		if n == math.MaxInt64 {
			c.MaxCompactionLag = 0 // Kafka's default: never forced
		}
	}
	v, ok := own[CfgCleanerMinCleanRatio]
	if !ok {
		v, ok = def[CfgCleanerMinCleanRatio]
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); ok && err == nil && f >= 0 && f <= 1 {
		c.MinCleanableRatio = f
	}
	return c
}

// cleanerDefaults are the cleaner settings in force.
func (b *Broker) cleanerDefaults() CleanerConfig {
	if c := b.dynamicCleaner.Load(); c != nil {
		return *c
	}
	return b.cfg.Cleaner
}

// minISRDefault is min.insync.replicas of topics without their own.
func (b *Broker) minISRDefault() int {
	if n := b.dynamicMinISR.Load(); n > 0 {
		return int(n)
	}
	return b.cfg.MinInsyncReplicas
}

// scaled is n units, with Kafka's -1 (unlimited) kept.
func scaled(n int64, unit time.Duration) time.Duration {
	if n < 0 {
		return -1
	}
	return time.Duration(n) * unit
}

// dynamicLogSources names, for each broker log key a topic config falls
// back to (log.retention.ms, log.segment.bytes, log.roll.ms, …), whether
// its value in force is this broker's dynamic one or the cluster
// default's; keys without a dynamic value are absent.
func (b *Broker) dynamicLogSources() map[string]string {
	if m := b.dynamicSources.Load(); m != nil {
		return *m
	}
	return nil
}

// logKeyFamilies are the dynamic keys behind each broker log key topics
// name as their synonym, most precise first.
var logKeyFamilies = map[string][]string{
	CfgLogRetentionMs:    {CfgLogRetentionMs, CfgLogRetentionMinutes, CfgLogRetentionHours},
	CfgLogRetentionBytes: {CfgLogRetentionBytes},
	CfgLogSegmentBytes:   {CfgLogSegmentBytes},
	CfgLogRollMs:         {CfgLogRollMs, CfgLogRollHours},
	CfgLogFlushMessages:  {CfgLogFlushMessages},
	CfgLogFlushMs:        {CfgLogFlushMs},
	CfgLogIndexInterval:  {CfgLogIndexInterval},
	CfgBrokerMinISR:      {CfgBrokerMinISR},
}

func dynamicSourcesOf(own, def map[string]string) map[string]string {
	out := map[string]string{}
	for key, family := range logKeyFamilies {
		for _, k := range family {
			if _, ok := own[k]; ok {
				out[key] = SourceDynamicBroker
				break
			}
			if _, ok := def[k]; ok {
				out[key] = SourceDynamicDefaultBroker
				break
			}
		}
	}
	return out
}

// applyDynamicLocked puts the dynamic log defaults and cleaner threads in
// force; topics without their own values take the new defaults. The
// caller holds adminMu.
func (b *Broker) applyDynamicLocked(own, def map[string]string) {
	sources := dynamicSourcesOf(own, def)
	b.dynamicSources.Store(&sources)
	next := effectiveLog(b.cfg.Log, own, def)
	cleaner := effectiveCleaner(b.cfg.Cleaner, own, def)
	minISR, _ := dynamicValue(own, def, CfgBrokerMinISR)
	if next != b.logDefaults() || cleaner != b.cleanerDefaults() || int(minISR) != int(b.dynamicMinISR.Load()) {
		b.dynamicLog.Store(&next)
		b.dynamicCleaner.Store(&cleaner)
		b.dynamicMinISR.Store(int32(min(max(minISR, 0), math.MaxInt32)))
		b.logger.Info("dynamic log defaults", "retention", next.RetentionTime, "retention_bytes", next.RetentionBytes,
			"segment_bytes", next.SegmentBytes, "roll", next.SegmentMaxAge, "min_insync_replicas", b.minISRDefault())
		b.reresolveTopicsLocked()
	}
	threads := int64(b.cfg.Cleaner.Threads)
	if n, ok := dynamicValue(own, def, CfgLogCleanerThreads); ok {
		threads = n
	}
	if b.cleaner != nil && int32(threads) != b.cleaner.want.Load() {
		b.logger.Info("log cleaner threads", "threads", threads)
		b.cleaner.setThreads(int(threads))
	}
}

// reresolveTopicsLocked recomputes every topic's settings from its own
// configs over the current defaults and hands them to its replicas. The
// caller holds adminMu, so no topic config changes meanwhile.
func (b *Broker) reresolveTopicsLocked() {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return
	}
	changed := make(map[string]*topic, len(b.mu.topics))
	for name, t := range b.mu.topics {
		next := &topic{meta: t.meta, settings: b.resolveSettings(t.meta.Configs), partitions: t.partitions}
		b.mu.topics[name] = next
		changed[name] = next
	}
	b.mu.Unlock()
	for name, t := range changed {
		for _, p := range t.partitions {
			if p == nil {
				continue
			}
			p.SetConfig(t.settings.log)
			if err := p.SetReplicationConfig(t.settings.replication(b.cfg.ReplicaLagTimeMax)); err != nil {
				b.logger.Warn("dynamic min.insync.replicas not applied", "topic", name, "partition", p.Index(), "err", err)
			}
		}
	}
}
