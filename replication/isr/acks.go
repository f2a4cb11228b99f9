package isr

import (
	"fmt"
	"slices"
	"time"
)

// CheckEnoughReplicas is acks=all's check before the append (Kafka's
// appendRecordsToLeader): with a committed ISR smaller than
// min.insync.replicas the batch is refused and nothing is written.
func (l *Leader) CheckEnoughReplicas() error {
	if len(l.isr) < l.cfg.MinInsyncReplicas {
		return fmt.Errorf("%w: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicas, l.isr, l.cfg.MinInsyncReplicas)
	}
	return nil
}

// AcksAllDone is acks=all's condition for a produce whose records end
// before requiredOffset (its last offset + 1), Kafka's
// checkEnoughReplicasReachOffset: done once the high watermark reaches
// it, and then ErrNotEnoughReplicasAfterAppend if the ISR shrank below
// min.insync.replicas meanwhile (the records are written and committed by
// fewer replicas than asked). The purgatory's produce Wait completes on
// the same high watermark; call this when it does. A nil Leader (this
// broker stopped leading) gives (true, ErrNotLeader).
func (l *Leader) AcksAllDone(requiredOffset int64) (bool, error) {
	if l == nil {
		return true, ErrNotLeader
	}
	if l.hw < requiredOffset {
		return false, nil
	}
	if n := l.maximalISRSize(); n < l.cfg.MinInsyncReplicas {
		return true, fmt.Errorf("%w: ISR of %d, min.insync.replicas %d", ErrNotEnoughReplicasAfterAppend, n, l.cfg.MinInsyncReplicas)
	}
	return true, nil
}

// Metrics is a leader's replication health, with Kafka's meanings.
type Metrics struct {
	// UnderReplicated: the ISR is smaller than the assignment
	// (UnderReplicatedPartitions counts these).
	UnderReplicated bool
	// UnderMinISR: the ISR is smaller than min.insync.replicas, so
	// acks=all produces are refused (UnderMinIsrPartitionCount).
	UnderMinISR bool
	// AtMinISR: the ISR is exactly min.insync.replicas
	// (AtMinIsrPartitionCount): one more loss refuses acks=all.
	AtMinISR bool
	// ISRShrinks and ISRExpands count committed changes since this broker
	// began leading (IsrShrinksPerSec, IsrExpandsPerSec are their rates).
	ISRShrinks, ISRExpands uint64
	Followers              []FollowerLag
}

// FollowerLag is one follower as the leader sees it.
type FollowerLag struct {
	Replica int32
	// LogEndOffset is UnknownOffset before the follower's first fetch.
	LogEndOffset int64
	// Lag is the leader's log end minus the follower's (all of the log
	// while the follower's is unknown).
	Lag          int64
	InSync       bool
	LastCaughtUp time.Time // zero: not since this broker leads
}

// Metrics reports the leader's replication health.
func (l *Leader) Metrics() Metrics {
	m := Metrics{
		UnderReplicated: len(l.isr) < len(l.replicas),
		UnderMinISR:     len(l.isr) < l.cfg.MinInsyncReplicas,
		AtMinISR:        len(l.isr) == l.cfg.MinInsyncReplicas,
		ISRShrinks:      l.shrinks,
		ISRExpands:      l.expands,
		Followers:       make([]FollowerLag, len(l.followers)),
	}
	for i, f := range l.followers {
		m.Followers[i] = FollowerLag{
			Replica:      f.id,
			LogEndOffset: f.leo,
			Lag:          l.leo - max(f.leo, 0),
			InSync:       slices.Contains(l.isr, f.id),
			LastCaughtUp: f.lastCaughtUp,
		}
	}
	return m
}
