package server

import (
	"errors"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/assign"
	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/epoch"
	"github.com/ferry-mq/ferry/replication/isr"
	"github.com/ferry-mq/ferry/storage"
)

// Core errors. Listeners map them with KafkaCode and api's HTTP table; the
// wrapped message says which topic, partition or value was wrong.
var (
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrUnknownPartition  = errors.New("unknown partition")
	ErrTopicExists       = replication.ErrTopicExists
	ErrInvalidTopic      = errors.New("invalid topic name")
	ErrInvalidPartitions = errors.New("invalid partition count")
	ErrInvalidReplicas   = assign.ErrInvalidReplicationFactor
	ErrInvalidConfig     = errors.New("invalid config")
	ErrRecordTooLarge    = errors.New("record batch too large")
	ErrInvalidRecord     = errors.New("invalid record")
	ErrCorruptMessage    = errors.New("corrupt message")
	ErrOffsetOutOfRange  = errors.New("offset out of range")
	ErrInvalidTimestamp  = errors.New("invalid timestamp")
	ErrStorage           = errors.New("storage error")
	ErrShuttingDown      = errors.New("broker is shutting down")
	// ErrInternalTopic: clients may not write to, delete, repartition or
	// reconfigure a topic the broker owns (__consumer_offsets).
	ErrInternalTopic = errors.New("internal topic")
	// ErrPartitionLimit: the broker holds max.partitions partitions.
	ErrPartitionLimit = errors.New("partition limit reached")
	// ErrNotEnoughReplicas: an acks=all produce to a partition with fewer
	// in-sync replicas than min.insync.replicas; nothing was appended.
	ErrNotEnoughReplicas = isr.ErrNotEnoughReplicas
	// ErrNotEnoughReplicasAfterAppend: the records were appended, but the
	// in-sync replicas fell below min.insync.replicas before they were
	// acknowledged; a retry may duplicate them (as in Kafka).
	ErrNotEnoughReplicasAfterAppend = isr.ErrNotEnoughReplicasAfterAppend
	// ErrRequestTimedOut: appended, but not acknowledged as acks asks
	// within the produce timeout.
	ErrRequestTimedOut = errors.New("request timed out")
	// ErrNotLeader: this broker does not lead the partition (any more).
	ErrNotLeader = replication.ErrNotLeader
	// ErrInvalidReplicaAssignment: replicas a client chose for new
	// partitions that Kafka would refuse (INVALID_REPLICA_ASSIGNMENT).
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrInvalidRequest: a request whose fields contradict each other.
	ErrInvalidRequest = errors.New("invalid request")
)

// Kafka protocol error codes used by the core's errors.
const (
	KafkaNone                        int16 = 0
	KafkaUnknownServerError          int16 = -1
	KafkaOffsetOutOfRange            int16 = 1
	KafkaCorruptMessage              int16 = 2
	KafkaUnknownTopicPartition       int16 = 3
	KafkaMessageTooLarge             int16 = 10
	KafkaKafkaStorageError           int16 = 56
	KafkaInvalidTopic                int16 = 17
	KafkaRecordListTooLarge          int16 = 18
	KafkaInvalidTimestamp            int16 = 32
	KafkaTopicAlreadyExists          int16 = 36
	KafkaInvalidPartitions           int16 = 37
	KafkaInvalidReplication          int16 = 38
	KafkaInvalidConfig               int16 = 40
	KafkaInvalidRecord               int16 = 87
	KafkaPolicyViolation             int16 = 44
	KafkaBrokerNotAvailable          int16 = 8
	KafkaOutOfOrderSequence          int16 = 45
	KafkaInvalidProducerEpoch        int16 = 47
	KafkaNotLeaderOrFollower         int16 = 6
	KafkaRequestTimedOut             int16 = 7
	KafkaNotEnoughReplicas           int16 = 19
	KafkaNotEnoughAfterAppend        int16 = 20
	KafkaFencedLeaderEpoch           int16 = 74
	KafkaUnknownLeaderEpoch          int16 = 75
	KafkaStaleControllerEpoch        int16 = 11
	KafkaInvalidRequest              int16 = 42
	KafkaNotController               int16 = 41
	KafkaStaleBrokerEpoch            int16 = 77
	KafkaPreferredLeaderNotAvailable int16 = 80
	KafkaEligibleLeadersNotAvailable int16 = 83
	KafkaElectionNotNeeded           int16 = 84
	KafkaInvalidReplicaAssignment    int16 = 39
	KafkaNoReassignmentInProgress    int16 = 85
	KafkaReassignmentInProgress      int16 = 60
)

// Kafka codes of the partition side of transactions (txnpartition.go),
// and the coordinator's answers to a KIP-890 check that a produce
// translates (produceCodeOfVerification).
const (
	KafkaInvalidTxnState              int16 = 48
	KafkaTransactionCoordinatorFenced int16 = 52
	KafkaProducerFenced               int16 = 90
	KafkaNetworkException             int16 = 13
	KafkaCoordinatorLoadInProgress    int16 = 14
	KafkaCoordinatorNotAvailable      int16 = 15
	KafkaNotCoordinator               int16 = 16
	KafkaConcurrentTransactions       int16 = 51
)

// kafkaCodes is the one table from core errors to Kafka error codes.
var kafkaCodes = []struct {
	err  error
	code int16
}{
	{ErrUnknownTopic, KafkaUnknownTopicPartition},
	{ErrUnknownPartition, KafkaUnknownTopicPartition},
	{ErrTopicExists, KafkaTopicAlreadyExists},
	{ErrInvalidTopic, KafkaInvalidTopic},
	// Kafka answers a client's append to an internal topic with
	// INVALID_TOPIC_EXCEPTION; ferry gives the same answer to the other
	// changes it refuses there (Kafka's tools refuse them client-side).
	{ErrInternalTopic, KafkaInvalidTopic},
	{ErrInvalidPartitions, KafkaInvalidPartitions},
	{ErrInvalidReplicas, KafkaInvalidReplication},
	{ErrInvalidReplicaAssignment, KafkaInvalidReplicaAssignment},
	{ErrInvalidConfig, KafkaInvalidConfig},
	{ErrRecordTooLarge, KafkaMessageTooLarge},
	{storage.ErrBatchTooLarge, KafkaMessageTooLarge},
	{ErrInvalidRecord, KafkaInvalidRecord},
	{ErrCorruptMessage, KafkaCorruptMessage},
	{storage.ErrCorrupt, KafkaCorruptMessage},
	{ErrOffsetOutOfRange, KafkaOffsetOutOfRange},
	{storage.ErrOffsetOutOfRange, KafkaOffsetOutOfRange},
	{ErrInvalidTimestamp, KafkaInvalidTimestamp},
	{ErrStorage, KafkaKafkaStorageError},
	{ErrShuttingDown, KafkaBrokerNotAvailable},
	// POLICY_VIOLATION: the broker's own rule refuses the request, and
	// clients do not retry it (KIP-578's proposed code never shipped).
	{ErrPartitionLimit, KafkaPolicyViolation},
	{ErrOutOfOrderSequence, KafkaOutOfOrderSequence},
	{ErrInvalidProducerEpoch, KafkaInvalidProducerEpoch},
	{ErrNotEnoughReplicasAfterAppend, KafkaNotEnoughAfterAppend},
	{ErrNotEnoughReplicas, KafkaNotEnoughReplicas},
	{ErrRequestTimedOut, KafkaRequestTimedOut},
	{ErrNotLeader, KafkaNotLeaderOrFollower},
	{isr.ErrUnknownReplica, KafkaNotLeaderOrFollower},
	{epoch.ErrFencedLeaderEpoch, KafkaFencedLeaderEpoch},
	{epoch.ErrUnknownLeaderEpoch, KafkaUnknownLeaderEpoch},
	{isr.ErrOffsetOutOfRange, KafkaOffsetOutOfRange},
	{ErrStaleControllerEpoch, KafkaStaleControllerEpoch},
	{replication.ErrStaleEpoch, KafkaStaleControllerEpoch},
	{ErrInvalidRequest, KafkaInvalidRequest},
	{controller.ErrNotController, KafkaNotController},
	{controller.ErrBrokerNotAvailable, KafkaBrokerNotAvailable},
	{controller.ErrStaleBrokerEpoch, KafkaStaleBrokerEpoch},
	{controller.ErrElectionNotNeeded, KafkaElectionNotNeeded},
	{controller.ErrPreferredLeaderNotAvailable, KafkaPreferredLeaderNotAvailable},
	{controller.ErrEligibleLeadersNotAvailable, KafkaEligibleLeadersNotAvailable},
	{controller.ErrUnknownPartition, KafkaUnknownTopicPartition},
	{controller.ErrInvalidReplicaAssignment, KafkaInvalidReplicaAssignment},
	{controller.ErrNoReassignmentInProgress, KafkaNoReassignmentInProgress},
	{replication.ErrTopicReassigning, KafkaReassignmentInProgress},
	{ErrInvalidTxnState, KafkaInvalidTxnState},
	{ErrTxnCoordinatorFenced, KafkaTransactionCoordinatorFenced},
}

// KafkaCode returns the Kafka protocol error code for err (0 for nil).
func KafkaCode(err error) int16 {
	if err == nil {
		return KafkaNone
	}
	if ce, ok := errors.AsType[*TxnCodeError](err); ok {
		return ce.Code // the coordinator's answer to a KIP-890 check
	}
	for _, m := range kafkaCodes {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return KafkaUnknownServerError
}

// ErrorForKafkaCode is the core error a Kafka error code stands for (the
// first kafkaCodes entry with it), nil for 0 or a code the core has no
// error for: for answers from other brokers (the Forwarder).
func ErrorForKafkaCode(code int16) error {
	for _, m := range kafkaCodes {
		if m.code == code && code != KafkaNone {
			return m.err
		}
	}
	return nil
}
