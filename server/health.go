package server

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/storage"
)

// Failed partitions. A partition's log fails on its first write or fsync
// error (disk full, EIO) and refuses appends from then on; reads go on.
// Kafka takes the whole log directory offline in that case and needs a
// restart; ferry, with one data directory, takes only the failed partitions
// offline, reports them (OfflinePartitions: readiness, metrics), and brings
// each back by itself once its directory takes writes again (the probe
// loop, every FailedLogProbeInterval) or when an operator asks
// (RecoverPartition). Recovery is the crash recovery of storage.Open, so
// every acknowledged record stays, once, and no torn bytes become visible.

// OfflinePartition is a partition whose log failed.
type OfflinePartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Error is the write or fsync error that failed the log.
	Error string `json:"error"`
}

// PartitionHealth counts the partitions this node hosts and lists the
// offline ones, sorted by topic and partition.
type PartitionHealth struct {
	Partitions int
	Offline    []OfflinePartition
}

// PartitionHealth reports which partitions have failed logs.
func (b *Broker) PartitionHealth() PartitionHealth {
	var h PartitionHealth
	b.eachPartition(func(p *replication.Replica) {
		h.Partitions++
		if err := p.Failure(); err != nil {
			h.Offline = append(h.Offline, OfflinePartition{Topic: p.Topic(), Partition: p.Index(), Error: err.Error()})
		}
	})
	sort.Slice(h.Offline, func(i, j int) bool {
		a, c := h.Offline[i], h.Offline[j]
		return a.Topic < c.Topic || (a.Topic == c.Topic && a.Partition < c.Partition)
	})
	return h
}

// RecoverPartition brings a failed partition back now, without waiting for
// the probe loop. recovered is false when the partition had not failed (a
// no-op). When its directory still refuses writes the answer is ErrStorage
// and the partition stays offline.
func (b *Broker) RecoverPartition(topicName string, index int32) (recovered bool, err error) {
	p, err := b.partition(topicName, index)
	if err != nil {
		return false, err
	}
	recovered, err = b.recoverPartition(p)
	if err != nil {
		return false, fmt.Errorf("%w: recover %s-%d: %v", ErrStorage, topicName, index, err)
	}
	return recovered, nil
}

// probeFailedLogs is the probe loop's tick: it tries to recover every
// failed partition. A directory that is still full or failing costs one
// small probe write per partition per tick.
func (b *Broker) probeFailedLogs(time.Time) {
	b.eachPartition(func(p *replication.Replica) {
		if p.Failure() == nil {
			return
		}
		if _, err := b.recoverPartition(p); err != nil && !errors.Is(err, storage.ErrClosed) {
			b.logger.Debug("failed partition not recovered yet", "topic", p.Topic(), "partition", p.Index(), "err", err)
		}
	})
}

// recoverPartition recovers p's log; the partition drops its idempotent
// producer state with it (replication.Partition.Recover), to be reloaded from
// its snapshots and the recovered log: a batch whose append reported an
// fsync error may have been kept whole, and a producer's retry of it must
// be answered as a duplicate, not appended again.
func (b *Broker) recoverPartition(p *replication.Replica) (recovered bool, err error) {
	cause := p.Failure()
	if recovered, err = p.Recover(); !recovered {
		return false, err
	}
	b.logger.Info("partition recovered", "topic", p.Topic(), "partition", p.Index(),
		"log_end_offset", p.LogEndOffset(), "after", cause)
	b.cfg.Metrics.PartitionRecovered()
	return true, nil
}
