package controller

import "errors"

// Errors in AnswerControlledShutdown, as Kafka names them.
var (
	// ErrNotController maps to NOT_CONTROLLER.
	ErrNotController = errors.New("this broker is not the controller")
	// ErrBrokerNotAvailable maps to BROKER_NOT_AVAILABLE.
	ErrBrokerNotAvailable = errors.New("broker is not registered")
	// ErrStaleBrokerEpoch maps to STALE_BROKER_EPOCH.
	ErrStaleBrokerEpoch = errors.New("request from an old broker epoch")
)

// Action is an output of Controller.Step, for the driver to perform.
type Action interface{ isAction() }

// WritePartitionState: write State to the partition's state znode if its
// version is ExpectedZkVersion (NoZkVersion: create it), in one ZooKeeper
// multi with a check that /controller_epoch is still at
// ControllerEpochZkVersion. Report StateWritten or StateWriteConflict.
type WritePartitionState struct {
	ControllerEpoch          int32
	ControllerEpochZkVersion int32
	Partition                TopicPartition
	State                    LeaderAndIsr
	ExpectedZkVersion        int32
}

// ReadPartitionStates: read these state znodes; report PartitionStatesRead.
type ReadPartitionStates struct {
	ControllerEpoch int32
	Partitions      []TopicPartition
}

// SendLeaderAndIsr tells one broker its role for these partitions.
// Leaders are the brokers that lead them, for the followers to fetch from.
type SendLeaderAndIsr struct {
	ControllerEpoch int32
	Broker          int32
	BrokerEpoch     int64
	Partitions      []PartitionInfo
	Leaders         []Broker
}

// SendUpdateMetadata tells brokers the live brokers and these partitions'
// state, for their metadata answers.
type SendUpdateMetadata struct {
	ControllerEpoch int32
	Brokers         []int32
	Partitions      []PartitionInfo
	LiveBrokers     []Broker
}

// SendStopReplica tells a broker to stop its replicas of these partitions
// (stop fetching), deleting them when Delete.
type SendStopReplica struct {
	ControllerEpoch int32
	Broker          int32
	BrokerEpoch     int64
	Partitions      []TopicPartition
	Delete          bool
}

// DeleteTopicZnodes: every replica of Topic is deleted; remove
// /brokers/topics/<t> (with its partition states), /config/topics/<t> and
// /admin/delete_topics/<t>, checked against /controller_epoch's version.
// No outcome is reported: the topic watch sees it go.
type DeleteTopicZnodes struct {
	ControllerEpoch          int32
	ControllerEpochZkVersion int32
	Topic                    string
}

// AnswerControlledShutdown answers a ControlledShutdownRequested: the
// partitions of more than one replica that the broker still leads (empty:
// it may stop now), or Err. One answer serves every request the broker has
// waiting. A drain cut short (failover, the broker gone or restarted) is
// answered with an error.
type AnswerControlledShutdown struct {
	Broker    int32
	Remaining []TopicPartition
	Err       error
}

func (WritePartitionState) isAction()      {}
func (ReadPartitionStates) isAction()      {}
func (SendLeaderAndIsr) isAction()         {}
func (SendUpdateMetadata) isAction()       {}
func (SendStopReplica) isAction()          {}
func (AnswerControlledShutdown) isAction() {}
func (DeleteTopicZnodes) isAction()        {}
