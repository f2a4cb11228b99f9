// Package server is ferry's broker core: the one place that owns topics,
// partitions and the rules of produce, fetch and list-offsets. Both listeners —
// the HTTP gateway (api/) and the Kafka binary protocol (server/kafka) — are
// thin adapters over a *Broker, so a record written through either is read
// through both with the same offsets, validation and errors.
//
// Data flow:
//
//	listener ──► Broker.Produce ──► replication.Replica.Append ──► storage.Log
//	listener ◄── Broker.Fetch (waits in the purgatory, fetchwait.go) ◄── storage.Log.Read
//	Replica.Append ──► purgatory.Notify ──► completes the waiting fetches
//
// Admin (clusteradmin.go, reassignadmin.go) is the one home of the admin
// operations both listeners offer — leader elections, partition
// reassignments with their plan, throttle and progress: the controller's
// driver on the controller, the controller elsewhere through AdminPeers
// (server/forward), this broker itself on a single node.
//
// Ownership:
//   - Broker.mu guards the topic table (names → *topic). It is never held
//     across disk I/O other than the small metadata file written on topic changes.
//   - Each partition is a *replication.Replica, which owns its storage.Log
//     (appends serialise inside the log), its idempotent producer state with
//     its own locks and <offset>.snapshot files, and its whole lifecycle
//     (open, close, delete, configs, retention, flush, recovery). Producer
//     ids come from the broker-wide allocator (producerids.go), taken only
//     by InitProducerID.
//   - Topic metadata lives in <data-dir>/ferry-topics.json, rewritten atomically
//     (temp file, fsync, rename, fsync dir) on every topic change.
//
// Long-lived goroutines (all stopped and waited for by Close):
//   - the retention loop: every RetentionCheckInterval, EnforceRetention on every log;
//   - the flush loop: every second, MaybeFlush on every log (log.flush.interval.ms),
//     and a producer state snapshot of every log that rolled a segment since;
//   - the deleter: removes directories of deleted topics, fed by DeleteTopic.
//
// A single-node partition is a replication.Replica with one replica: it
// keeps its high watermark apart from its log end offset (on one node they
// move together), every append carries the partition's leader epoch, and
// listeners see partitions only through the read-only Partition interface.
package server
