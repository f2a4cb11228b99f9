package replication

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/replication/epoch"
	"github.com/ferry-mq/ferry/replication/isr"
)

// The leader's side of a partition. The decisions (the high watermark, the
// ISR, acks=all) are isr.Leader's; the partition feeds it its appends and
// its followers' fetches under mu, publishes the high watermark it
// decides, wakes the purgatory, and hands ISR change proposals to the
// cluster (Config.OnISRChange), which reports back with ISRCommitted or
// ISRConflict.

// lead makes this broker the leader for r, as Kafka's makeLeader: a new
// leader state from the log end and the current high watermark, and r's
// epoch assigned from the log end in the epoch cache.
func (p *Replica) lead(r Role, now time.Time) error {
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	l, err := isr.NewLeader(p.brokerID, r.Replicas, stateOf(r), leo, min(p.hw.Load(), leo), p.mu.replication, now)
	if err != nil {
		return fmt.Errorf("%s-%d: %w", p.topic, p.index, err)
	}
	p.mu.leader = l
	p.setHighWatermarkLocked(l.HighWatermark())
	return p.epochs.assign(r.LeaderEpoch, leo)
}

func stateOf(r Role) isr.State {
	return isr.State{Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, ISR: r.ISR,
		ControllerEpoch: r.ControllerEpoch, Version: r.ZkVersion}
}

// SetRole applies a LeaderAndIsr decision for this replica: lead, or
// follow r.Leader. An older leader epoch than the current one is refused
// (a delayed request from a controller that lost); the same epoch may
// change the ISR or the replicas (the leader's own ISR writes, a
// reassignment).
func (p *Replica) SetRole(r Role) error {
	cur := p.role.Load()
	if r.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Errorf("%w: %s-%d is in leader epoch %d; the request is for %d",
			ErrStaleEpoch, p.topic, p.index, cur.LeaderEpoch, r.LeaderEpoch)
	}
	if !slices.Contains(r.Replicas, p.brokerID) {
		return fmt.Errorf("%s-%d: broker %d is not among the replicas %v", p.topic, p.index, p.brokerID, r.Replicas)
	}
	r.ISR, r.Replicas = slices.Clone(r.ISR), slices.Clone(r.Replicas)
	if r.Leader == p.brokerID {
		if err := p.refreshOrLead(cur, r); err != nil {
			return err
		}
		if p.session != nil {
			// The controller (or the znode, re-read) gives the role as of
			// the session's expiries so far (selffence.go).
			n := p.session.expiries()
			p.mu.Lock()
			p.mu.roleExpiries = n
			p.mu.Unlock()
		}
	} else {
		p.mu.Lock()
		p.mu.leader = nil
		p.mu.Unlock()
	}
	p.role.Store(&r)
	if r.Leader != p.brokerID && p.waiters != nil {
		// Requests waiting on this replica as a leader answer now: they
		// re-route (produce: NOT_LEADER_OR_FOLLOWER; fetch: read what is
		// visible and learn the new leader from metadata).
		p.waiters.Notify(p.key(), delayed.State{Gone: true})
	}
	p.notifyWaiters()
	return nil
}

// refreshOrLead keeps the leader state when this broker already leads in
// r's epoch (an ISR change), and starts a new one otherwise.
func (p *Replica) refreshOrLead(cur *Role, r Role) error {
	now := p.now()
	p.mu.Lock()
	l := p.mu.leader
	if l != nil && cur.LeaderEpoch == r.LeaderEpoch && slices.Equal(cur.Replicas, r.Replicas) {
		u, err := l.Refresh(stateOf(r), now)
		if err == nil && u.HighWatermarkAdvanced {
			p.setHighWatermarkLocked(l.HighWatermark())
		}
		p.mu.Unlock()
		if errors.Is(err, isr.ErrStaleState) {
			return fmt.Errorf("%w: %s-%d: %v", ErrStaleEpoch, p.topic, p.index, err)
		}
		return err
	}
	p.mu.Unlock()
	return p.lead(r, now)
}

// FollowerFetched records that replica fetched from fetchOffset in
// epoch (negative: not sent), which may advance the high watermark and
// propose adding it to the ISR (Kafka's updateFollowerFetchState).
func (p *Replica) FollowerFetched(replica, currentEpoch int32, fetchOffset int64) error {
	p.mu.Lock()
	l := p.mu.leader
	if l == nil {
		p.mu.Unlock()
		return p.notLeader(p.role.Load())
	}
	leo := l.LogEndOffset()
	u, err := l.FollowerFetched(isr.Fetch{Replica: replica, CurrentLeaderEpoch: currentEpoch,
		FetchOffset: fetchOffset, LeaderLEO: leo}, p.now())
	if u.HighWatermarkAdvanced {
		p.setHighWatermarkLocked(l.HighWatermark())
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	p.afterLeaderUpdate(u)
	return nil
}

// HighWatermarkSent records that an answer to replica's fetch carries hw
// and reports whether that is news to it (isr.Leader.HighWatermarkSent);
// false when this broker does not lead the partition.
func (p *Replica) HighWatermarkSent(replica int32, hw int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.mu.leader
	return l != nil && l.HighWatermarkSent(replica, hw)
}

// ReplicaReadEnd is where a follower's fetch stops: the log end the
// leader's state has been told of (an append's records count from when
// they are durable as the topic asks), so a follower never holds more than
// the leader acknowledged.
func (p *Replica) ReplicaReadEnd() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.mu.leader; l != nil {
		return l.LogEndOffset()
	}
	return p.log.LogEndOffset()
}

// Tick lets the leader shrink the ISR by the followers that have lagged
// for replica.lag.time.max.ms (Kafka's isr-expiration task).
func (p *Replica) Tick(now time.Time) {
	p.mu.Lock()
	l := p.mu.leader
	if l == nil {
		p.mu.Unlock()
		return
	}
	u := l.Tick(now)
	if u.HighWatermarkAdvanced {
		p.setHighWatermarkLocked(l.HighWatermark())
	}
	p.mu.Unlock()
	p.afterLeaderUpdate(u)
}

// afterLeaderUpdate wakes the purgatory and hands a proposal on. Called
// without mu.
func (p *Replica) afterLeaderUpdate(u isr.Update) {
	if u.HighWatermarkAdvanced {
		p.notifyWaiters()
	}
	if u.Proposal != nil && p.onISRChange != nil {
		p.onISRChange(p, u.Proposal)
	}
}

// ISRCommitted reports that prop was written, at the partition state's
// newVersion: the ISR changes.
func (p *Replica) ISRCommitted(prop *isr.Proposal, newVersion int32) {
	p.mu.Lock()
	l := p.mu.leader
	if l == nil {
		p.mu.Unlock()
		return
	}
	u := l.Committed(prop, newVersion, p.now())
	if u.HighWatermarkAdvanced {
		p.setHighWatermarkLocked(l.HighWatermark())
	}
	r := *p.role.Load()
	r.ISR, r.ZkVersion = l.ISR(), newVersion
	p.role.Store(&r)
	p.mu.Unlock()
	p.afterLeaderUpdate(u)
}

// ISRConflict reports that prop lost to another writer: the ISR stays as
// it was until the partition state is re-read and given to SetRole.
func (p *Replica) ISRConflict(prop *isr.Proposal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.mu.leader; l != nil {
		l.Conflict(prop)
	}
}

// SetReplicationConfig applies changed min.insync.replicas or
// replica.lag.time.max.ms.
func (p *Replica) SetReplicationConfig(cfg isr.Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.mu.leader; l != nil {
		if err := l.SetConfig(cfg); err != nil {
			return err
		}
	}
	p.mu.replication = cfg
	return nil
}

// CheckEnoughReplicas is acks=all's check before the append: the ISR must
// hold min.insync.replicas (Kafka's NOT_ENOUGH_REPLICAS), and this broker
// must lead.
func (p *Replica) CheckEnoughReplicas() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.mu.leader
	if l == nil {
		return p.notLeader(p.role.Load())
	}
	if err := p.fencedLocked(p.now()); err != nil {
		return err
	}
	if err := l.CheckEnoughReplicas(); err != nil {
		return fmt.Errorf("%s-%d: %w", p.topic, p.index, err)
	}
	return nil
}

// AcksAllDone says whether records ending before requiredOffset are
// acknowledged by the ISR, and then whether the ISR still holds
// min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND otherwise). A
// partition that no longer leads is done with ErrNotLeader.
func (p *Replica) AcksAllDone(requiredOffset int64) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.leader == nil {
		return true, p.notLeader(p.role.Load())
	}
	if err := p.fencedLocked(p.now()); err != nil {
		return true, err // appended, never acknowledged: the client retries with the new leader
	}
	done, err := p.mu.leader.AcksAllDone(requiredOffset)
	if err != nil {
		err = fmt.Errorf("%s-%d: %w", p.topic, p.index, err)
	}
	return done, err
}

// EndOffsetForEpoch is the leader's answer to OffsetForLeaderEpoch: the
// largest epoch not above requested and where the next one starts (the
// log end for the current epoch), after checking the request's current
// epoch (FENCED or UNKNOWN_LEADER_EPOCH).
func (p *Replica) EndOffsetForEpoch(currentEpoch, requested int32) (epoch.EndOffset, error) {
	r := p.role.Load()
	if r.Leader != p.brokerID {
		return epoch.Undefined, p.notLeader(r)
	}
	return p.epochs.answer(r.LeaderEpoch, epoch.Request{CurrentLeaderEpoch: currentEpoch, LeaderEpoch: requested}, p.log.LogEndOffset())
}

// LeaderEpochs is the epoch history (a diagnostic and for tests).
func (p *Replica) LeaderEpochs() []epoch.Entry { return p.epochs.entries() }
