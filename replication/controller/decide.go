package controller

import (
	"maps"
	"slices"
)

// decide brings one partition toward what the view requires, one
// conditional write at a time. It is level-triggered: it looks at the
// partition's state and the live brokers, not at what event led here, so a
// decision redone after a conflict or a failover is the same code.
//
//   - NewPartition → OnlinePartition (initializeLeaderAndIsrForPartitions):
//     leader = first live replica, ISR = live replicas, leader epoch 0.
//   - OnlinePartition with ISR members gone (ReplicaStateMachine's
//     OfflineReplica transition, removeReplicasFromIsr): drop them, epoch+1.
//   - leader shutting down: ControlledShutdownLeader, epoch+1.
//   - leader dead → OfflinePartition: OfflinePartitionLeader, epoch+1; if
//     none can lead, leader -1 with epoch+1 and the ISR left as it was, so
//     the first of its members to return leads without losing records.
func (c *Controller) decide(p *partition, b *batch) {
	if !c.active || p.op != idle || c.isDeleting(p.tp.Topic) {
		return
	}
	if p.state == nil {
		p.treatDead = nil // no role was held that a restart could have lost
		c.initialize(p, b)
		return
	}
	next, ok := c.nextState(p)
	if !ok {
		if len(p.treatDead) > 0 {
			// Nothing to undo for the restarted brokers: treat them as
			// live again and look once more.
			p.treatDead = nil
			c.decide(p, b)
			return
		}
		c.advanceReassignment(p, b)
		return
	}
	c.write(p, next, *p.state, b)
}

func (c *Controller) initialize(p *partition, b *batch) {
	live := filter(p.assignment.Replicas, c.eligibleFor(p))
	if len(live) == 0 {
		return // stays NewPartition until a replica's broker registers
	}
	next := LeaderAndIsr{Leader: live[0], ISR: live, ControllerEpoch: c.epoch}
	p.creating = true
	c.write(p, next, LeaderAndIsr{Leader: NoLeader, ZkVersion: NoZkVersion}, b)
}

func (c *Controller) write(p *partition, next, cur LeaderAndIsr, b *batch) {
	p.proposed, p.prevLeader, p.writeKind = next, cur.Leader, decisionWrite
	c.setOp(p, writing)
	p.deadInWrite = slices.Collect(maps.Keys(p.treatDead))
	b.writes = append(b.writes, WritePartitionState{
		ControllerEpoch:          c.epoch,
		ControllerEpochZkVersion: c.epochZkVersion,
		Partition:                p.tp,
		State:                    next.clone(),
		ExpectedZkVersion:        cur.ZkVersion,
	})
}

// nextState returns the state p must move to, or false if it is settled.
func (c *Controller) nextState(p *partition) (LeaderAndIsr, bool) {
	cur := *p.state
	eligible := c.eligibleFor(p)
	replicas := p.assignment.Replicas
	switch {
	case cur.Leader != NoLeader && eligible(cur.Leader):
		return c.shrunk(cur, eligible)
	case c.shuttingDownLeader(p):
		if leader, isr, ok := ControlledShutdownLeader(replicas, cur.ISR, eligible); ok {
			return c.bumped(cur, leader, isr), true
		}
		return c.shrunk(cur, eligible) // no one to take over: it keeps leading
	default:
		if leader, isr, ok := OfflinePartitionLeader(replicas, cur.ISR, eligible, c.unclean[p.tp.Topic]); ok {
			return c.bumped(cur, leader, isr), true
		}
		if cur.Leader == NoLeader {
			return cur, false
		}
		return c.bumped(cur, NoLeader, cur.ISR), true
	}
}

// shrunk drops the ISR members that are not eligible, except the leader.
func (c *Controller) shrunk(cur LeaderAndIsr, eligible func(int32) bool) (LeaderAndIsr, bool) {
	isr := filter(cur.ISR, func(id int32) bool { return id == cur.Leader || eligible(id) })
	if len(isr) == len(cur.ISR) {
		return cur, false
	}
	return c.bumped(cur, cur.Leader, isr), true
}

func (c *Controller) bumped(cur LeaderAndIsr, leader int32, isr []int32) LeaderAndIsr {
	return LeaderAndIsr{
		Leader:          leader,
		LeaderEpoch:     cur.LeaderEpoch + 1,
		ISR:             slices.Clone(isr),
		ControllerEpoch: c.epoch,
		ZkVersion:       cur.ZkVersion,
	}
}

func (c *Controller) shuttingDownLeader(p *partition) bool {
	l := p.state.Leader
	return l != NoLeader && c.isLive(l) && c.shuttingDown[l] && !p.treatDead[l]
}

// eligibleFor says who may lead or be in p's ISR: live, not shutting down
// and not a restarted broker being decided upon as dead.
func (c *Controller) eligibleFor(p *partition) func(int32) bool {
	return func(id int32) bool { return c.isLive(id) && !c.shuttingDown[id] && !p.treatDead[id] }
}

func (c *Controller) isLive(id int32) bool {
	_, ok := c.live[id]
	return ok
}

func (c *Controller) liveIDs() []int32 {
	return slices.Sorted(maps.Keys(c.live))
}

func (c *Controller) liveBrokers() []Broker {
	out := make([]Broker, 0, len(c.live))
	for _, id := range c.liveIDs() {
		out = append(out, c.live[id])
	}
	return out
}

// sortedPartitions lists the partitions keep accepts (all if nil) in
// topic-partition order, so actions come out deterministically.
func (c *Controller) sortedPartitions(keep func(*partition) bool) []*partition {
	out := make([]*partition, 0, len(c.partitions))
	for _, p := range c.partitions {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(x, y *partition) int { return compareTP(x.tp, y.tp) })
	return out
}

func sortedTPs[V any](m map[TopicPartition]V) []TopicPartition {
	return slices.SortedFunc(maps.Keys(m), compareTP)
}

func hasAny(ids []int32, set map[int32]bool) bool {
	return slices.ContainsFunc(ids, func(id int32) bool { return set[id] })
}
