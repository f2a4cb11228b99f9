package controller

// Event is an input to Controller.Step.
type Event interface{ isEvent() }

// Elected: this broker created /controller and incremented
// /controller_epoch to Epoch (Kafka's onControllerFailover). Snapshot is
// what it then read from ZooKeeper. Epochs start at 1, as Kafka's first
// increment of /controller_epoch gives; an Elected whose Epoch is not above
// the controller's current epoch is stale and ignored.
type Elected struct {
	Epoch int32
	// EpochZkVersion is the version of /controller_epoch after the
	// increment; every write must check it so a deposed controller's
	// writes fail (Kafka's controllerEpochZkVersion fencing).
	EpochZkVersion int32
	Snapshot       Snapshot
}

// Resigned: this broker lost /controller (session expiry, or another
// controller's epoch seen). It stops acting; pending writes are forgotten.
type Resigned struct{}

// BrokersChanged: the children of /brokers/ids changed; Live is every
// registered broker (Kafka's BrokerChange).
type BrokersChanged struct {
	Live []Broker
}

// TopicCreated: a new /brokers/topics/<t> appeared (Kafka's TopicChange).
type TopicCreated struct {
	Topic Topic
}

// PartitionsAdded: /brokers/topics/<t> gained partitions
// (Kafka's PartitionModifications, from CreatePartitions).
type PartitionsAdded struct {
	Topic      string
	Partitions map[int32]Assignment
}

// TopicConfigChanged: /config/topics/<t> changed unclean.leader.election.enable
// (Kafka's TopicUncleanLeaderElectionEnable).
type TopicConfigChanged struct {
	Topic                 string
	UncleanLeaderElection bool
}

// IsrChangeNotified: leaders changed ISRs (/isr_change_notification);
// States holds the state znodes as just read.
type IsrChangeNotified struct {
	States map[TopicPartition]LeaderAndIsr
}

// PartitionStatesRead answers a ReadPartitionStates. Missing lists the
// partitions whose state znode does not exist.
type PartitionStatesRead struct {
	ControllerEpoch int32
	States          map[TopicPartition]LeaderAndIsr
	Missing         []TopicPartition
}

// StateWritten: a WritePartitionState succeeded; ZkVersion is the znode's
// new version.
type StateWritten struct {
	ControllerEpoch int32
	Partition       TopicPartition
	ZkVersion       int32
}

// StateWriteConflict: a WritePartitionState failed its version check (the
// znode changed, or exists when it was to be created). The controller
// re-reads and decides again. A failed controller-epoch check is not a
// conflict: the driver reports Resigned.
type StateWriteConflict struct {
	ControllerEpoch int32
	Partition       TopicPartition
}

// TopicDeletionsRequested: the children of /admin/delete_topics changed;
// Topics is every topic marked for deletion (Kafka's TopicDeletion).
type TopicDeletionsRequested struct {
	Topics []string
}

// ReplicasDeleted: a broker answered a StopReplica with deletion; these
// partitions' replicas are gone from it.
type ReplicasDeleted struct {
	ControllerEpoch int32
	Broker          int32
	Partitions      []TopicPartition
}

// ControlledShutdownRequested: a broker asks to be drained before it stops
// (Kafka's ControlledShutdown request). BrokerEpoch -1 is unknown.
type ControlledShutdownRequested struct {
	Broker      int32
	BrokerEpoch int64
}

// BrokerFenced: the driver has positive evidence that a registered
// broker's process is gone before its session expires: its listener
// refused connections (ECONNREFUSED) for a confirmation window. The
// controller handles it as the broker's failure (onBrokerFailure): it is
// no longer live for elections, ISRs or metadata while its registration
// of that Epoch lasts. Evidence it may be merely unreachable (a timeout)
// must never be reported as this: such a broker waits for its session.
type BrokerFenced struct {
	Broker int32
	Epoch  int64
}

// BrokerUnfenced: a fenced broker's listener answers again (a connection
// accepted and ApiVersions answered) under the same registration. It is
// handled as a broker starting (onBrokerStartup): it gets its roles anew.
// A broker that registers again (a new epoch) or leaves is unfenced by
// BrokersChanged without this event.
type BrokerUnfenced struct {
	Broker int32
	Epoch  int64
}

func (Elected) isEvent()                     {}
func (BrokerFenced) isEvent()                {}
func (BrokerUnfenced) isEvent()              {}
func (Resigned) isEvent()                    {}
func (BrokersChanged) isEvent()              {}
func (TopicCreated) isEvent()                {}
func (PartitionsAdded) isEvent()             {}
func (TopicConfigChanged) isEvent()          {}
func (IsrChangeNotified) isEvent()           {}
func (PartitionStatesRead) isEvent()         {}
func (StateWritten) isEvent()                {}
func (StateWriteConflict) isEvent()          {}
func (ControlledShutdownRequested) isEvent() {}
func (TopicDeletionsRequested) isEvent()     {}
func (ReplicasDeleted) isEvent()             {}
