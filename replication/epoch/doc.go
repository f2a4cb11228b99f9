// Package epoch holds a partition's leader-epoch history and the decisions
// built on it: what a leader answers to OffsetForLeaderEpoch, and where a
// follower truncates its log before it fetches. It follows Kafka's
// LeaderEpochFileCache (KIP-101) and the follower's truncation of KIP-279
// (AbstractFetcherThread, Kafka 2.8), and does no I/O: the caller persists
// Cache.Entries with replication/checkpoint after every change Assign,
// TruncateFromEnd or TruncateFromStart reports.
//
// # The cache
//
// An entry (epoch, startOffset) says the leader of that epoch wrote its
// first record at startOffset; epochs and start offsets strictly increase.
// An epoch ends where the next one starts, the latest at the log end.
//
//   - Assign, on every appended batch (its partitionLeaderEpoch and base
//     offset) and when this broker becomes leader (the new epoch at the log
//     end, so a follower holding records of a short-lived later leader
//     learns where the new leader's history departs from its own).
//   - TruncateFromEnd(offset), after the log is truncated to offset.
//   - TruncateFromStart(offset), after the log start moved to offset
//     (retention, DeleteRecords): the epoch that covers offset now starts
//     there.
//
// # The follower's truncation, step by step
//
//  1. On becoming follower of a new leader epoch, the follower asks the
//     leader OffsetForLeaderEpoch(CurrentLeaderEpoch: the new epoch,
//     LeaderEpoch: its own Cache.Latest). With an empty cache it does not
//     ask: it truncates to its high watermark (Kafka's fallback).
//  2. The leader answers with LeaderAnswer: the largest epoch it knows at
//     or below the one asked, and where that epoch ends in its log.
//  3. Truncate(cache, logEndOffset, highWatermark, answer) says where to
//     truncate. When the leader's epoch is one the follower does not hold
//     (KIP-279), the follower truncates to the end of its own largest epoch
//     below it and asks again (Done false) with its new latest epoch.
//  4. The caller truncates the log and the cache (TruncateFromEnd) to
//     Truncation.Offset and, when Done, fetches from there.
//
// A Cache is not safe for concurrent use; the partition that owns it
// guards it.
package epoch
