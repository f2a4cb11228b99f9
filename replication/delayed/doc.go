// Package delayed holds requests that must wait until a partition has
// "enough": Kafka's purgatory. It is the one wait mechanism of ferry; Kafka
// Fetch (MinBytes/MaxWait), the HTTP long-poll, the REST consumer's records
// and the SSE stream wait through it, and replication's acks=all produce and
// follower fetches (next) will too.
//
// An Op says what it waits for, one Wait per partition (Key):
//
//   - a fetch (NewFetch) waits for MinBytes visible beyond its offsets, summed
//     over its partitions, or for any partition to need an answer at once
//     (deleted, or its log start passed the offset: the read reports it);
//   - a produce (NewProduce, for acks=all; nothing uses it yet) waits for the
//     high watermark of every partition to reach the offset after the
//     appended records, or for any partition to be gone. The leader calls
//     Notify when a follower's fetch moves the high watermark, exactly as an
//     append does on one node.
//
// Follower fetches are fetches too; they read up to the log end rather
// than the high watermark, so State carries the log end and the bytes
// below it as well, and a Wait says which of the two it counts (ToLogEnd).
//
// Bytes are counted, never read: a partition reports State.VisibleBytes, a
// monotonic count of the bytes below its high watermark, and a fetch's bytes
// beyond its offset are the growth of that count since the caller looked
// (Wait.BaseBytes) plus what the caller already saw there (Wait.KnownBytes).
// The log is read once, by the caller, after the Op completes.
//
// The package does no I/O and starts no goroutines: the deadline runs on the
// Clock given to New (time.AfterFunc in production, a fake in tests), and a
// waiting Op costs its entries in the watch lists and one timer.
//
// The caller's duties:
//
//  1. Take each partition's State (BaseBytes) before reading it, so bytes
//     appended between the read and the registration are counted.
//  2. Register the Op with a lookup of the partitions' current State.
//     Register watches every key first and then checks the Op against the
//     looked-up states, as Kafka's tryCompleteElseWatch does, so an append
//     racing with registration is seen by the check or by its Notify.
//  3. Call Notify(key, state) after every change of a partition's high
//     watermark, visible bytes or log start, and with State.Gone when it is
//     deleted or no longer led here. Notify is cheap when nothing watches
//     (and Watched lets the partition skip building the State). States only
//     grow, so concurrent Notifys may arrive in any order; a truncation below
//     a waiter's offset (replication) must be reported as Gone for now.
//  4. Wait on Op.Done (or Op.Wait, which cancels when its context ends: the
//     client went away) and then read the log once. Cancel an Op that is no
//     longer wanted; Close the Purgatory at shutdown, which completes every
//     Op with Closed.
//
// Op.Outcome tells why it completed: Ready (the condition holds or a
// partition needs an answer), Expired (its timeout), Cancelled or Closed.
package delayed
