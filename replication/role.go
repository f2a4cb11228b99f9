package replication

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ferry-mq/ferry/replication/delayed"
)

// Role is a partition's leadership as the controller decided it (Kafka's
// LeaderAndIsr partition state): who leads in which epoch, the assigned
// replicas, the in-sync ones, and the versions that fence stale writers.
type Role struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	Replicas    []int32
	// ZkVersion is the partition state znode's version the ISR was read
	// at: a leader's ISR change is written conditionally on it.
	ZkVersion       int32
	ControllerEpoch int32
}

// ErrNotLeader: this broker does not lead the partition (Kafka's
// NOT_LEADER_OR_FOLLOWER); ErrStaleEpoch: a role change from an older
// leader epoch than the partition has (Kafka's STALE_CONTROLLER_EPOCH /
// FENCED_LEADER_EPOCH on LeaderAndIsr).
var (
	ErrNotLeader  = errors.New("not the leader of the partition")
	ErrStaleEpoch = errors.New("stale leader epoch")
)

func (p *Partition) notLeader(r *Role) error {
	return fmt.Errorf("%w: %s-%d is led by broker %d in epoch %d, not by broker %d",
		ErrNotLeader, p.topic, p.index, r.Leader, r.LeaderEpoch, p.brokerID)
}

// Role returns the partition's current role.
func (p *Partition) Role() Role { return *p.role.Load() }

// IsLeader says whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.role.Load().Leader == p.brokerID }

// SetRole applies a LeaderAndIsr decision for this replica: lead, or
// follow r.Leader. An older leader epoch than the current one is refused
// (a delayed request from a controller that lost); the same epoch may
// change the ISR or the replicas (the leader's own ISR writes, a
// reassignment).
func (p *Partition) SetRole(r Role) error {
	cur := p.role.Load()
	if r.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Errorf("%w: %s-%d is in leader epoch %d; the request is for %d",
			ErrStaleEpoch, p.topic, p.index, cur.LeaderEpoch, r.LeaderEpoch)
	}
	if !slices.Contains(r.Replicas, p.brokerID) {
		return fmt.Errorf("%s-%d: broker %d is not among the replicas %v", p.topic, p.index, p.brokerID, r.Replicas)
	}
	r.ISR, r.Replicas = slices.Clone(r.ISR), slices.Clone(r.Replicas)
	p.role.Store(&r)
	if r.Leader != p.brokerID && p.waiters != nil {
		// Requests waiting on this replica as a leader answer now: they
		// re-route (produce: NOT_LEADER_OR_FOLLOWER; fetch: read what is
		// visible and learn the new leader from metadata).
		p.waiters.Notify(p.key(), delayed.State{Gone: true})
	}
	return nil
}
