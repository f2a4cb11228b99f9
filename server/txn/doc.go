// Package txn is ferry's transaction coordinator (KIP-98, with KIP-360's
// epoch bumps and KIP-890 part 1's verification): InitProducerId for a
// transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions, ListTransactions and FindCoordinator's key type 1,
// which server/kafka serves by calling the methods here.
//
// # The state machine
//
// state.go holds Kafka's TransactionMetadata as plain code: a Txn (one
// transactional id's producer id and epoch, timeout, state, partitions,
// timestamps) and its decisions (InitProducerID, AddPartitions, EndTxn,
// Complete, AbortTimedOut, Expire, VerifyPartition), each returning an
// Outcome: the metadata to write, the code to answer once it is durable,
// and whether markers must now be sent. The decisions do no I/O and read
// no clock; tests feed them scripted events.
//
// States are Kafka's (Empty, Ongoing, PrepareCommit, PrepareAbort,
// CompleteCommit, CompleteAbort, Dead, PrepareEpochFence) with its legal
// transitions (ValidTransition). Kafka fences a producer in two steps
// (PrepareEpochFence in memory, then PrepareAbort written); ferry writes
// the bumped epoch and PrepareAbort as one transition, which a restart
// sees the same way.
//
// # __transaction_state
//
// Every decision that changes the metadata is written, acknowledged by
// the in-sync replicas (acks=all), to __transaction_state before the
// request is answered. As in Kafka the ISR is the durability on a
// cluster (min.isr 2: two brokers hold each answered write), so a write
// is not fsynced there; a single node fsyncs each. Writes of one
// partition queued while an append of it is in flight share the next
// append (statewriter.go). One exception to the answer waiting: a
// producer's AddPartitionsToTxn adding partitions to a transaction
// already ongoing is answered once its record is in this broker's log
// (writeEarly), and the partitions' leaders' KIP-890 verification waits
// until an acknowledged record holds them (awaitDurable, which writes
// the state again when the early record failed), so the producer's data
// never reaches a partition a new coordinator would not know of; a
// producer that lost such an add with its coordinator is refused at the
// produce (INVALID_TXN_STATE, abortable). The first partitions of a
// transaction, a leader's own add (transaction.version 2) and
// AddOffsetsToTxn wait as the others. Records are in
// Kafka's record formats (key v0: the transactional id; value v0 written,
// v0 and v1 read; a tombstone for an expired id), in partition
// abs(javaHash(id)) % transaction.state.log.num.partitions. The topic is
// compacted (the log cleaner keeps the last record per id). The broker
// leading a partition coordinates its ids (ownership.go, on
// server/ownership's Table and Topic, as the group coordinator): it loads the
// partition when it starts leading (COORDINATOR_LOAD_IN_PROGRESS
// meanwhile), answers NOT_COORDINATOR once it stops, and completes the
// transactions the log left in PrepareCommit or PrepareAbort. The
// partition's leader epoch is the coordinator epoch markers carry.
//
// # Ownership and goroutines
//
// Each id's metadata is owned by its entry's mu; a transition being
// written marks the entry busy (other requests get
// CONCURRENT_TRANSACTIONS, Kafka's pendingState, but only after waiting
// up to 200 ms for that write, or the markers and completion of a
// prepared transaction, to end: a producer's next AddPartitionsToTxn
// right after EndTxn would otherwise back off 20 ms per transaction, most
// of a small transaction's cost). A request arriving while the markers
// are written is parked on the entry; once they are, the completer
// decides the parked requests on the completed state (Txn.CompleteThen)
// and writes one record for the completion and, usually, the producer's
// next transaction, so that transaction costs no state write of its own.
// With nothing parked, the completer waits a few milliseconds
// (completionLinger) for the next request before writing the completion
// alone; only the coordinator's record waits, the markers are written.
// The log then holds PrepareCommit followed by Ongoing, which a loading
// coordinator reads as the completed transaction and the next one. No
// lock is held across a log write or a marker request. Lock order: own,
// mu, entry.mu.
//
// Long-lived goroutines, all stopped by Close (an ownership.Lifecycle): the tick loop (timed-out
// transactions every transaction.abort.timed.out.transaction.cleanup.interval.ms,
// expired ids every transaction.remove.expired.transaction.cleanup.interval.ms;
// ManualTick turns it off for tests), one loader per partition being
// loaded, and one completer per prepared transaction, which sends its
// markers through Config.Markers until each is written (retrying with
// backoff while this broker leads the partition; markers of deleted
// partitions are dropped) and then writes CompleteCommit or CompleteAbort,
// or the parked requests' state with it (and goes on with the markers of
// a commit or abort they prepared).
//
// # Markers and verification across brokers
//
// ClusterMarkers is the MarkerWriter of a node: markers of partitions led
// here go to the broker's own WriteTxnMarkers, the others' are batched
// into one WriteTxnMarkers request (key 27) per leader over the
// inter-broker client (forward.Forwarder.Request), every leader at once. Verifier implements
// server.TxnVerifier: the local coordinator answers for its ids, other
// coordinators are asked with AddPartitionsToTxn v4 verifyOnly.
//
// # The HTTP gateway's transactions
//
// Transactor (transactor.go) runs POST /kafka's all-or-nothing batches as
// transactions of a pool of transactional ids, in this process: the
// coordinator's methods when this broker coordinates the id, the broker's
// AppendBatch for partitions it leads (the batch carries the producer id,
// epoch and sequence, so verification, sequence rules and the last stable
// offset are the Kafka produce path's), and InitProducerId,
// AddPartitionsToTxn, EndTxn or Produce through Peers for another broker
// (transactorcalls.go). It holds no goroutine beyond a request's.
//
// # transaction.version 2 (KIP-890 part 2)
//
// When the cluster finalizes the feature transaction.version at 2 (the
// default of a new cluster, server/features) ApiVersions advertises it
// with Produce v12, EndTxn v5 and TxnOffsetCommit v5; a client that opts
// in (franz-go
// 1.22+, the Java client 4.0+) sends no AddPartitionsToTxn or
// AddOffsetsToTxn: the partition leader, on the batch that opens the
// producer's transaction there (a batch of a newer epoch than the open
// one included), calls AddPartitions here (Verifier.AddTxnPartition:
// locally, or AddPartitionsToTxn v4 without verifyOnly to the
// coordinator's broker), and the group coordinator does the same for
// TxnOffsetCommit v5. EndTxn
// v5 (Txn.EndTxnV2) bumps the epoch on every end, the markers carry it,
// and the producer is answered it; an empty abort is legal; the epoch
// running out rotates the producer id (NextProducerID). Clients held
// below those versions (librdkafka) run as before on the same broker:
// every request is decided by its own version, never by the level, so a
// downgrade leaves open transactions to end as they began.
//
// # Markers ahead of the next transaction (transaction.version 2)
//
// A leader's add for the producer's next transaction (at the epoch the
// end bumped to) that arrives while the previous transaction's markers
// are still being written is not parked (writeAhead, Txn.AheadOfMarkers):
// one record holds the previous transaction completed, the next one
// Ongoing with the partition, and the previous markers Pending beside it
// (ferry's tagged field 0x6665 in value version 1: producer id, the
// markers' epoch, the data's epoch, commit or abort, coordinator epoch,
// partitions; Kafka's readers skip the tag), and the add is answered once
// that record is acknowledged. Kafka's states are unchanged: the stored
// state is Ongoing. The completer goes on sending the markers; once they
// are all written the pending set is dropped in memory and the next
// record of the id carries none (nothing is written for it). Ordering
// holds it together:
//
//   - the partition leader appends a batch of the new epoch only after the
//     previous transaction's marker is in its log
//     (replication.Replica.AwaitTxnOrder; NOT_ENOUGH_REPLICAS, retriable,
//     after the produce's timeout), so that marker cannot end the next
//     transaction's data;
//   - the next transaction's own markers (its end, a timeout abort, a
//     fencing InitProducerId) go out only after the pending ones are
//     written: its completion starts when the previous one ends
//     (preparedLate), and a completer whose state holds Pending sends
//     them first (startCompletion), as does a coordinator loading such a
//     record (after a failover), which treats the id as completing;
//   - every marker of an EndTxn v5 says the epoch of the data it ends
//     (server.TxnMarker.TxnEpoch; between brokers the tagged field
//     server.TxnEpochTag of WriteTxnMarkers v1), so a resent marker (a
//     lost answer, a new coordinator resending pending markers) reaching
//     a partition where the next transaction has begun, or ended, appends
//     nothing and is answered as written; the epoch of the next
//     transaction is the same as the marker's, which the partition could
//     not tell apart otherwise;
//   - the same holds on __consumer_offsets: the group coordinator's
//     TxnOffsetCommit batches open the producer's transaction in the
//     partition's producer state (Replica.AppendCoordinatorTxnBatch),
//     so the next transaction's commit waits for the previous marker too
//     and a resent marker appends nothing there; the broker tells its
//     marker listeners of such a resend once its acks=all wait succeeds
//     (the first copy's wait may have failed untold), with the data
//     epoch (server.TxnMarkerListener), and the group coordinator keeps
//     pending commits per producer id and epoch, so the resend decides
//     the previous transaction's offsets and never the next one's.
//
// # Carried partitions (transaction.version 2)
//
// A producer looping begin / produce / commit writes to the same
// partitions transaction after transaction, and each of its leaders'
// adds cost a replicated write before the data could be appended. An
// EndTxn v5 therefore records the ended transaction's partitions in its
// Prepare record as Carried (ferry's tagged field 0x6666, value v1):
// partitions the next transaction, at the epoch the end bumped to, may
// hold without a record of its own; with them the partitions the ended
// transaction could itself have added so, up to 32 in all (carriedOn),
// as a producer's partitioner moves over a topic's partitions and back.
// A leader's add of carried partitions is answered from memory at once
// (Outcome.Quiet, applyQuiet): the
// acknowledged Prepare record already names them for any coordinator
// that loads the log. An add of any other partition is written as
// before, and every record of the id keeps the carried set until the
// next end replaces it. A completion written alone (no request of the
// next transaction came during the markers and completionLinger:
// Txn.CompleteIdle) drops it, so an idle producer's state is exact.
//
// A coordinator loading a record that carries partitions cannot know
// whether its predecessor let the next transaction add them
// (Txn.Loaded): an ongoing transaction takes them as added; a prepared
// or completed one keeps them as carriedUnknown, and the next
// transaction's end, a fencing InitProducerId and the timeout abort
// (timed from the load, or from the completion) treat them as added
// (begunCarried), while the previous end's retry is still answered as
// done; DescribeTransactions, ListTransactions and the admin page show
// such a state as that transaction, ongoing since the load (Describe).
// A carried partition that got no data then gets a marker ending
// nothing, which readers skip as Kafka's. When that transaction times out
// with no request of its producer since the load, the coordinator first
// probes the carried partitions' leaders (a WriteTxnMarkers entry with
// ferry's tagged field server.TxnProbeTag: nothing written; each leader
// answers CONCURRENT_TRANSACTIONS when the producer has a transaction
// open there, and otherwise revokes the KIP-890 verifications it granted
// the producer's batches, so none lands after the answer: neither one
// verified before the probe, nor one whose add was asked before it and
// answered after, perhaps by the coordinator this one replaced;
// replication.TxnGuard.AskedAt). Open nowhere:
// the next transaction never began, the state is written without its
// carried partitions (Txn.SettleIdle) and the idle producer goes on at
// its epoch. Open somewhere: it is aborted and the producer fenced, as
// after any timeout. A leader that does not answer is asked again at the
// next check.
//
// transaction.version 1 (AddPartitionsToTxn v0–v4 from the producer, one
// epoch across transactions) is unchanged: its adds wait as before, as
// its markers cannot be told apart from the next transaction's.
//
// A version-2 end is written as value version 1 with Kafka 4's tagged
// fields: ClientTransactionVersion 2, PreviousProducerId and
// NextProducerId. A coordinator loading it (after a failover) knows the
// producer's epoch before the bump, the current one less one, as Kafka
// does, so an EndTxn v5 retried across the failover is answered as the
// retry it is (success and the current epoch), not PRODUCER_FENCED.
//
// Not done: KIP-939 two-phase commit, KIP-994's transactional-id pattern filter
// (ListTransactions v2).
package txn
