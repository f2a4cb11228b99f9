package controller

import (
	"fmt"
	"slices"
)

// NoLeader is the leader of a partition that has none (Kafka's
// LeaderAndIsr.NoLeader): clients get LEADER_NOT_AVAILABLE.
const NoLeader int32 = -1

// LeaderDuringDelete is the leader UpdateMetadata gives the partitions of
// a topic being deleted (Kafka's LeaderAndIsr.LeaderDuringDelete): brokers
// drop them from their metadata answers.
const LeaderDuringDelete int32 = -2

// NoZkVersion as WritePartitionState.ExpectedZkVersion means the partition's
// state znode must not exist yet: the write creates it.
const NoZkVersion int32 = -1

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// LeaderAndIsr is the content of /brokers/topics/<t>/partitions/<p>/state
// (leader, leader_epoch, isr, controller_epoch) plus the znode's version,
// which every conditional write of that znode names.
type LeaderAndIsr struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	// ControllerEpoch is the epoch of the controller that last elected a
	// leader or changed the ISR; a leader's own ISR writes keep it.
	ControllerEpoch int32
	ZkVersion       int32
}

func (s LeaderAndIsr) clone() LeaderAndIsr {
	s.ISR = slices.Clone(s.ISR)
	return s
}

// Broker is a registered broker, as /brokers/ids/<id> describes it.
type Broker struct {
	ID   int32
	Rack string
	// Epoch is the broker epoch (KIP-380): the czxid of its registration
	// znode. A broker seen again with another epoch restarted in between.
	Epoch int64
	// Endpoints is carried through to UpdateMetadata untouched.
	Endpoints any
}

// Assignment is a partition's entry in /brokers/topics/<t>: its replicas in
// preference order (the first is the preferred leader) and, during a
// reassignment (KIP-455), the replicas being added and removed. The
// controller does not act on Adding/Removing yet; it only carries them.
type Assignment struct {
	Replicas []int32
	Adding   []int32
	Removing []int32
}

// Topic is a topic as the controller sees it.
type Topic struct {
	Name       string
	Partitions map[int32]Assignment
	// UncleanLeaderElection is the topic's unclean.leader.election.enable.
	UncleanLeaderElection bool
}

// Snapshot is what a newly elected controller reads from ZooKeeper before
// it acts: registered brokers, topics, and the state znodes that exist. A
// partition of Topics absent from States has no state znode yet (a creation
// the previous controller did not finish).
type Snapshot struct {
	Brokers []Broker
	Topics  []Topic
	States  map[TopicPartition]LeaderAndIsr
	// Deleting lists the topics marked for deletion (/admin/delete_topics).
	Deleting []string
	// Reassignments is /admin/reassign_partitions: a target per partition.
	Reassignments map[TopicPartition][]int32
}

// PartitionInfo is one partition in a LeaderAndIsr or UpdateMetadata
// request.
type PartitionInfo struct {
	Partition TopicPartition
	State     LeaderAndIsr
	Replicas  []int32
	Adding    []int32
	Removing  []int32
	// Offline lists replicas on brokers that are not live.
	Offline []int32
	// IsNew: the partition was just created, so a replica that finds no log
	// creates an empty one instead of reporting a lost log directory.
	IsNew bool
}

// PartitionState is Kafka's PartitionStateMachine state of a partition.
type PartitionState int

const (
	// NonExistentPartition: never created, or deleted.
	NonExistentPartition PartitionState = iota
	// NewPartition: assigned replicas but no leader and ISR yet (no state znode).
	NewPartition
	// OnlinePartition: a live leader was elected.
	OnlinePartition
	// OfflinePartition: the leader is dead, or there is none.
	OfflinePartition
)

func (s PartitionState) String() string {
	return [...]string{"NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"}[s]
}

// ReplicaState is Kafka's ReplicaStateMachine state of one replica. The
// deletion states (ReplicaDeletionStarted, ...) come with topic deletion.
type ReplicaState int

const (
	// NonExistentReplica: the broker is not in the partition's assignment.
	NonExistentReplica ReplicaState = iota
	// NewReplica: assigned to a partition that has no leader yet.
	NewReplica
	// OnlineReplica: on a live broker; leader or follower.
	OnlineReplica
	// OfflineReplica: on a dead broker (removed from the ISR).
	OfflineReplica
)

func (s ReplicaState) String() string {
	return [...]string{"NonExistentReplica", "NewReplica", "OnlineReplica", "OfflineReplica"}[s]
}
