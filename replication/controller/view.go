package controller

import (
	"maps"
	"slices"
)

// Read-only views for the driver (metrics, admin answers) and tests.

// Active says whether this controller acts (got Elected, not Resigned).
func (c *Controller) Active() bool { return c.active }

// Epoch is the controller epoch of the last Elected.
func (c *Controller) Epoch() int32 { return c.epoch }

// LiveBrokers lists the registered brokers by id.
func (c *Controller) LiveBrokers() []Broker { return c.liveBrokers() }

// Fenced lists the registered brokers fenced on evidence of their death
// (BrokerFenced), by id.
func (c *Controller) Fenced() []int32 { return slices.Sorted(maps.Keys(c.fenced)) }

// ShuttingDown says whether a broker is in controlled shutdown.
func (c *Controller) ShuttingDown(id int32) bool { return c.shuttingDown[id] }

// Partitions lists every known partition in order.
func (c *Controller) Partitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(c.partitions))
	for _, p := range c.sortedPartitions(nil) {
		out = append(out, p.tp)
	}
	return out
}

// State is the partition's last committed state znode content; false for a
// partition that has none (NewPartition) or is unknown.
func (c *Controller) State(tp TopicPartition) (LeaderAndIsr, bool) {
	p, ok := c.partitions[tp]
	if !ok || p.state == nil {
		return LeaderAndIsr{}, false
	}
	return p.state.clone(), true
}

// Assignment is the partition's replica assignment.
func (c *Controller) Assignment(tp TopicPartition) (Assignment, bool) {
	p, ok := c.partitions[tp]
	if !ok {
		return Assignment{}, false
	}
	a := p.assignment
	return Assignment{slices.Clone(a.Replicas), slices.Clone(a.Adding), slices.Clone(a.Removing)}, true
}

// PartitionState is the partition's PartitionStateMachine state.
func (c *Controller) PartitionState(tp TopicPartition) PartitionState {
	p, ok := c.partitions[tp]
	switch {
	case !ok:
		return NonExistentPartition
	case p.state == nil:
		return NewPartition
	case p.state.Leader != NoLeader && c.isLive(p.state.Leader):
		return OnlinePartition
	default:
		return OfflinePartition
	}
}

// ReplicaState is the ReplicaStateMachine state of broker's replica of tp.
func (c *Controller) ReplicaState(tp TopicPartition, broker int32) ReplicaState {
	p, ok := c.partitions[tp]
	switch {
	case !ok || !slices.Contains(p.assignment.Replicas, broker):
		return NonExistentReplica
	case p.state == nil:
		return NewReplica
	case c.isLive(broker) && (!c.shuttingDown[broker] || p.state.Leader == broker):
		// A shutting-down broker's followers went offline when it was
		// drained; what it could not hand over it still leads.
		return OnlineReplica
	default:
		return OfflineReplica
	}
}

// OfflinePartitionsCount is Kafka's OfflinePartitionsCount metric:
// partitions without a live leader.
func (c *Controller) OfflinePartitionsCount() int {
	n := 0
	for tp := range c.partitions {
		if c.PartitionState(tp) == OfflinePartition {
			n++
		}
	}
	return n
}

// Pending says whether a write or read is out for tp.
func (c *Controller) Pending(tp TopicPartition) bool {
	p, ok := c.partitions[tp]
	return ok && p.op != idle
}
