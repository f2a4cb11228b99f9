// Package controller holds the decisions of ferry's cluster controller,
// following Kafka's ZooKeeper-era KafkaController, PartitionStateMachine,
// ReplicaStateMachine and PartitionLeaderElectionAlgorithms, in the style
// of etcd-io/raft: a Controller is fed events (Step) and returns actions.
// It starts no goroutine, does no I/O and reads no clock.
//
// # The driver's duties
//
// One goroutine owns the Controller. It turns ZooKeeper watches and broker
// requests into events, performs the returned actions in order, and feeds
// their outcomes back:
//
//   - Elected after winning /controller and incrementing /controller_epoch,
//     with a Snapshot read after that; Resigned when /controller is lost.
//   - BrokersChanged on every change of /brokers/ids children or of their
//     data, with all of them (id, rack, czxid as the broker epoch,
//     endpoints).
//   - BrokerFenced when it has positive evidence that a registered
//     broker's process is gone before its session expires (its listener
//     refuses connections; never on a timeout), BrokerUnfenced when that
//     broker answers again under the same registration. A fenced broker is
//     out of the live set as if its registration had gone (elections,
//     ISRs, UpdateMetadata's live brokers) until then, or until
//     BrokersChanged shows it gone or registered again (a restart).
//   - TopicCreated / PartitionsAdded / TopicConfigChanged from the topic
//     and config znodes; IsrChangeNotified with the state znodes named by
//     /isr_change_notification (then delete the notifications).
//   - WritePartitionState: a conditional setData (or create, for
//     NoZkVersion) in a multi that also checks /controller_epoch's version.
//     Report StateWritten{ZkVersion: new version} or StateWriteConflict on
//     a version mismatch (or node exists); on a failed epoch check report
//     Resigned. On connection loss, retry the same write or report a
//     conflict: re-reading is always safe.
//   - ReadPartitionStates: read and report PartitionStatesRead.
//   - SendLeaderAndIsr / SendUpdateMetadata / SendStopReplica: the
//     inter-broker requests, carrying ControllerEpoch and BrokerEpoch so a
//     broker ignores a deposed controller. Retry a request until it is
//     delivered or its broker leaves /brokers/ids, as Kafka's
//     ControllerChannelManager does; a broker that registers again gets
//     its roles anew.
//   - AnswerControlledShutdown: the ControlledShutdown response.
//
// Results carry the controller epoch they were asked under; a result from
// before a failover is ignored.
//
// # States
//
// A partition is NonExistentPartition, NewPartition (assigned, no state
// znode), OnlinePartition (live leader) or OfflinePartition (leader dead or
// -1). A replica is NewReplica (its partition is new), OnlineReplica (live
// broker) or OfflineReplica (dead broker, or a follower on a drained one).
// At most one write or read is out per partition; the next decision waits
// for its outcome.
//
// # Decisions
//
// Decisions are level-triggered (see decide): after any event, each
// partition it concerns is compared with the view and moved by at most one
// conditional write:
//
//   - NewPartition → OnlinePartition: leader = first live replica, ISR =
//     live replicas, leader epoch 0 (no live replica: stays NewPartition).
//   - leader dead → OfflinePartitionLeader: first assigned replica live and
//     in the ISR; else, with unclean.leader.election.enable, first live
//     replica with ISR [it]; else leader -1 with the ISR unchanged.
//   - leader in controlled shutdown → ControlledShutdownLeader.
//   - an ISR member dead or shutting down while the leader is fine → removed
//     (Kafka's removeReplicasFromIsr on OfflineReplica).
//
// # Controlled shutdown
//
// ControlledShutdownRequested puts the broker in shuttingDown: it may no
// longer lead or be in an ISR. It gets StopReplica for the partitions it
// follows, and each of its partitions of more than one replica is decided
// upon. The answer comes in the Step whose write result leaves none of its
// partitions with a write or read out, listing what it still leads (no
// other ISR member could take over); the broker retries while that list
// is not empty. It stays shutting down until it leaves or re-registers. A
// failover, or the broker leaving or re-registering, answers a waiting
// request with an error.
//
// # Epochs
//
// Every controller write increments the leader epoch, as Kafka's
// newLeaderAndIsr does; leaders' own ISR changes do not. A broker that
// registers with a new epoch (restarted within its session) is first
// decided upon as dead, then as live, as Kafka's bounced-broker handling.
//
// Differences from Kafka: when every ISR member is dead the ISR is left
// whole, where Kafka removes members one at a time and keeps whichever it
// handled last; all of them had every acknowledged record, so any may lead.
// Dead or shutting-down ISR members are removed whenever their partition is
// decided upon (also after a failover), not only when the broker dies.
package controller
