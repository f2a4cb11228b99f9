// Package group is ferry's consumer group coordinator: Kafka's classic
// group protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, DescribeGroups, ListGroups, DeleteGroups) and committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete), shared by the Kafka
// listener (server/kafka calls the Handle methods) and the HTTP gateway
// (REST Proxy v2 consumers, SSE streams, /groups).
//
// # Ownership
//
// Each group is owned by its mutex (group.mu): handlers lock it, apply a
// decision of the state machine in group.go, and unlock. The state machine
// does no I/O and starts no goroutines; every time-dependent decision takes
// the current time, and Coordinator.Tick applies timeouts (session expiry,
// rebalance and sync deadlines, the initial rebalance delay, idle consumer
// instances). A JoinGroup or SyncGroup that must wait gets a buffered
// channel and blocks on it after unlocking. Tests inject Config.Now and
// set Config.ManualTick to drive all of it without real time.
//
// Long-lived goroutines, all stopped by Close (an ownership.Lifecycle): the
// tick loop (Tick every Config.TickInterval, ExpireOffsets, SampleLag, one
// at a time) and one loader per __consumer_offsets partition being
// loaded. Poll starts short-lived waiters that end with the poll.
//
// # Committed offsets
//
// Commits are written to the internal topic __consumer_offsets through the
// broker core (Produce with Sync, so a commit is acknowledged after fsync),
// in Kafka's formats (key v1: group, topic, partition; value v3: offset,
// leader epoch, metadata, commit timestamp; a null value deletes), to
// partition abs(javaHash(group)) % partitions as Kafka does
// (OffsetsPartition; the lookup of the partition's leader and the topic's
// creation are server/ownership's Topic, shared with the transaction
// coordinator and the idempotency keys store). The topic is
// created with cleanup.policy=compact and offsets.topic.segment.bytes
// (100 MiB) so retention never deletes it and the log cleaner keeps only
// the latest commit per key below the active segment; a new coordinator
// reads what compaction left, from the start. An empty group's offsets
// expire after offsets.retention.minutes (expiry.go): tombstones, which
// the cleaner removes after delete.retention.ms. A group's commits are
// serialised by group.commitMu, so the log and the in-memory table apply
// them in the same order; the table changes only after the write is
// durable.
//
// # Transactional offset commits
//
// TxnOffsetCommit (txnoffsets.go) writes a transactional batch of the
// producer (its id and epoch, no sequence) that opens the producer's
// transaction on the partition like a client's batch
// (Replica.AppendCoordinatorTxnBatch), then holds the commits pending in
// group.txnOffsets, keyed by producer id and epoch. The broker tells the
// coordinator of every durable marker (server.TxnMarkerListener,
// TxnMarkerWritten): a commit makes the pending commits the group's
// offsets, an abort drops them. A marker that says the epoch of the data
// it ends (transaction.version 2) decides only that epoch's commits: the
// producer's next transaction, one epoch up, may have committed offsets
// on the partition before a resent copy of the previous marker is told
// (its first acks=all wait failed). One that does not say it decides all
// the producer's commits. A coordinator loading the partition replays the
// log: a control batch decides every transactional commit of its
// producer before it (the partition appends the next transaction's
// batches only after the previous marker); what is left is pending under
// its batch's producer id and epoch. Markers are appended while the
// partition loads (its groups refuse requests, the broker does not), so
// the install reads on from where the load stopped (when that read fails
// nothing is installed and the partition is loaded again from its start),
// and a marker told meanwhile waits for the install (markersVsInstall). OffsetFetch's
// require_stable answers UNSTABLE_OFFSET_COMMIT for a partition with a
// pending commit.
//
// # Membership rules that differ from a first reading of Kafka
//
// Members are named "<client.id>-<uuid>" (static members
// "<group.instance.id>-<uuid>"), from the client id the Kafka listener
// passes with WithClient. A static member (KIP-345) that rejoins without a
// member id replaces its old id (which is then FENCED_INSTANCE_ID); in a
// Stable group it gets the current generation and its old assignment
// without a rebalance unless the protocol the group would select changes.
// Static members that do not rejoin stay in the group until their session
// expires. The initial rebalance delay ends early once as many members
// joined as the group's last generation had (Kafka always waits it out).
//
// Group metadata (members, assignments, generations) is not persisted:
// after a restart members rejoin, as they would after a coordinator move.
// Offsets never expire (Kafka's offsets.retention.minutes is not applied).
//
// # Consumer instances
//
// REST and SSE consumers are members the coordinator drives itself
// (instance.go): their subscription, assignment and positions live here,
// not in an HTTP handler, they join and sync in place whenever the group
// rebalances, and when one leads it runs the chosen assignor (franz-go's
// range, roundrobin, sticky and cooperative-sticky balancers), so HTTP and
// Kafka members of one group share its partitions.
package group
