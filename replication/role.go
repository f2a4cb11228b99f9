package replication

import (
	"errors"
	"fmt"

	"github.com/ferry-mq/ferry/replication/isr"
)

// NoLeader is Role.Leader while the partition has none (offline, or not
// yet told by the controller).
const NoLeader int32 = -1

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
	ErrNotLeader  = isr.ErrNotLeader
	ErrStaleEpoch = errors.New("stale leader epoch")
)

func (p *Replica) notLeader(r *Role) error {
	return fmt.Errorf("%w: %s-%d is led by broker %d in epoch %d, not by broker %d",
		ErrNotLeader, p.topic, p.index, r.Leader, r.LeaderEpoch, p.brokerID)
}

// Role returns the partition's current role.
func (p *Replica) Role() Role { return *p.role.Load() }

// IsLeader says whether this broker leads the partition.
func (p *Replica) IsLeader() bool { return p.role.Load().Leader == p.brokerID }
