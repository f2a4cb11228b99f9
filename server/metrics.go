package server

import (
	"time"

	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/storage"
)

// This file connects the core to Config.Metrics (nil: metrics off). The
// hot paths call Topic once per request or batch; partition state (log
// sizes, replicas) is read by the metrics package at scrape time through
// partitionStats.

// registerMetrics registers the broker's scrape-time sources. On one node
// this broker is the controller.
func (b *Broker) registerMetrics() {
	m := b.cfg.Metrics
	if m == nil {
		return
	}
	// On a cluster the controller driver says (cmd/ferry); one node is
	// its own controller.
	m.SetControllerActive(!b.cfg.AwaitRoles)
	m.AddPartitionSource(b.partitionStats)
	m.AddLeaderlessSource(b.LeaderlessPartitions)
}

// flushObserver is storage.Options.OnFlush: nil when metrics are off, so
// storage skips the call.
func (b *Broker) flushObserver() func(time.Duration) {
	if b.cfg.Metrics == nil {
		return nil
	}
	return b.cfg.Metrics.ObserveFlush
}

// countIn counts an appended client batch set (nothing for a rejected one,
// nor for an idempotent duplicate, which appends no record).
func (b *Broker) countIn(topicName string, bytes int, res storage.AppendResult, err error) {
	if err != nil || res.Records <= 0 || b.cfg.Metrics == nil {
		return
	}
	b.cfg.Metrics.Topic(topicName).In(bytes, int(res.Records))
}

// partitionStats yields every partition's log size and replica state, for
// one scrape. It holds Broker.mu only to copy the topic snapshots.
func (b *Broker) partitionStats(yield func(metrics.PartitionStat) bool) {
	b.mu.RLock()
	if b.mu.closed {
		b.mu.RUnlock()
		return
	}
	topics := make([]*topic, 0, len(b.mu.topics))
	for _, t := range b.mu.topics {
		topics = append(topics, t)
	}
	b.mu.RUnlock()
	for _, t := range topics {
		minISR := t.settings.minISR
		for _, p := range t.partitions {
			if p == nil {
				continue
			}
			st := metrics.PartitionStat{Topic: t.meta.Name, Partition: p.Index(), SizeBytes: p.Size(),
				Segments: p.SegmentCount(), Leader: p.Leader(), Replicas: len(p.Replicas()),
				ISR: len(p.ISR()), MinISR: minISR, Offline: p.Failure() != nil, Follower: p.Leader() != b.cfg.BrokerID,
				FollowerLag: p.FollowerLag()}
			if ci := cleanerInfo(p); ci != nil {
				st.Compacted, st.DirtyRatio, st.LastCleanSeconds = true, ci.DirtyRatio, float64(ci.LastPassMs)/1000
			}
			if !yield(st) {
				return
			}
		}
	}
}

// Ready reports whether the core serves requests: the logs were loaded by
// Open and Close has not begun.
func (b *Broker) Ready() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.mu.closed {
		return ErrShuttingDown
	}
	return nil
}
