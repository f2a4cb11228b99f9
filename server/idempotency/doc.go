// Package idempotency is the HTTP gateway's Idempotency-Key store: a retry
// of a produce with the same key and request, on any node, within the
// window, replays the original's answer and writes nothing
// (docs/http-idempotency.md).
//
// Keys live in the compacted internal topic __idempotency_keys, one
// partition per FNV-1a(key) mod partitions; the partition's leader owns the
// key. The Store follows this broker's leadership of the topic through
// server/ownership (a Table: load a partition on election, serve it once
// loaded, forget it on loss; a Topic: the topic's creation, a key's owner,
// reading a partition back; a Lifecycle: the expiry loop and the loads,
// stopped by Close). record.go is a key's record format; table.go the
// decisions without I/O (proceed, replay, wait, in doubt, full, not here,
// loading), which store.go feeds with the loaded records, the leadership
// changes and the clock, and whose outcomes it writes to the topic.
//
// Long-lived goroutines, all stopped by Close: the expiry loop
// (Config.ExpiryInterval: Expire tombstones keys past the window) and one
// loader per partition being loaded.
package idempotency
