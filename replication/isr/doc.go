// Package isr holds the replica-side decisions of a replicated partition,
// without I/O: the leader's view of its followers (their log end offsets
// and when each was last caught up), the high watermark, the in-sync
// replica set (ISR) and its shrinking and expanding, the acks=all
// conditions, and the follower's own high watermark and truncation. It
// follows Kafka 2.8's Partition and Replica (ZooKeeper era) closely.
//
// # Leader
//
// NewLeader is created when this broker becomes a partition's leader, from
// the partition state in ZooKeeper (/brokers/topics/<t>/partitions/<p>/state
// and its znode version). The caller feeds it events and acts on what each
// returns (an Update):
//
//   - Appended(leo, now) after each local append;
//   - FollowerFetched(fetch, now) for each follower fetch, after the read
//     (FetchOffset is the follower's log end; LeaderLEO the leader's log end
//     when the read was made). An error answers that partition of the fetch
//     (epoch.ErrFencedLeaderEpoch, epoch.ErrUnknownLeaderEpoch,
//     ErrUnknownReplica, ErrOffsetOutOfRange) and changes nothing;
//   - Tick(now) every ReplicaLagTimeMax/2 (Kafka's isr-expiration task);
//   - Refresh(state, now) when ZooKeeper's state was re-read or the
//     controller sent a LeaderAndIsr for this partition.
//
// Update.HighWatermarkAdvanced: notify the delayed-operation purgatory
// (replication/delayed) with the partition's new State. Update.Proposal:
// write Proposal.State to the partition's state znode conditionally on
// Proposal.State.Version, then report Committed(p, newVersion, now) or, on a
// version conflict, Conflict(p), re-read the znode and call Refresh (which
// answers ErrNotLeader when another broker leads now). On any other failure
// (connection loss) report nothing: the write may have landed, so the
// proposal stays pending, holding the high watermark, until Refresh with
// the znode read once ZooKeeper answers again. Record each
// committed change in the broker's ChangeNotifier, which says when to tell
// the controller (a znode under /isr_change_notification). Update.NewEpoch
// (from Refresh): assign the epoch at the log end in the epoch cache.
//
// # The high watermark and the ISR while a change is in flight
//
// The high watermark is the smallest log end offset among the leader, the
// members of the "maximal" ISR and any follower caught up within
// ReplicaLagTimeMax (Kafka 2.8's maybeIncrementLeaderHW: a caught-up
// follower still outside the ISR holds it, so that it can reach it and
// join). It never moves back while this broker leads. As in Kafka 2.8
// (KIP-497's IsrState), one change is in flight at a time, and:
//
//   - during a pending expand, the maximal ISR is the committed ISR plus the
//     joining follower, which only holds the high watermark back: safe
//     whether the write succeeds or not;
//   - during a pending shrink, it is the committed ISR, the leaving
//     followers included: the high watermark must not run ahead of them
//     before ZooKeeper says they left.
//
// acks=all's refusal before the append (NOT_ENOUGH_REPLICAS) counts the
// committed ISR; the check after it (NOT_ENOUGH_REPLICAS_AFTER_APPEND)
// counts the maximal ISR, as Kafka 2.8's checkEnoughReplicasReachOffset.
// A conflicting write leaves the ISR as committed and blocks further
// proposals until Refresh, since a new one would carry the same stale
// version (Kafka's "Cached zkVersion not equal to that in zookeeper").
//
// # acks=all and the purgatory
//
// A produce with acks=all calls CheckEnoughReplicas before appending. After
// the append it waits in the purgatory with delayed.Wait{Offset: last
// offset + 1}: the purgatory completes it when the high watermark reaches
// that offset. Then AcksAllDone(offset) gives the partition's answer (nil,
// ErrNotEnoughReplicasAfterAppend, or ErrNotLeader on a nil *Leader: the
// broker stopped leading it while the produce waited); an expired wait
// whose AcksAllDone is still false answers REQUEST_TIMED_OUT.
//
// # Follower
//
// NewFollower is created when this broker becomes a follower; it starts
// truncating (replication/epoch tells where), and afterwards tracks the log
// end and the high watermark the leader sends, capped by its own log end.
//
// Neither Leader nor Follower is safe for concurrent use: the partition
// that owns one calls it under its lock. They read no clock: every
// time-dependent call takes now.
package isr
