// Package kbench is the Kafka produce and consume benchmark behind
// `ferry bench`, kept apart from the command so that test/bench/kfake can run
// the very same code against an in-process franz-go kfake cluster as a
// baseline. (It is not under cmd/ferry/internal because test/bench/kfake
// imports it.)
//
// Produce writes Records records of RecordSize bytes (or as many as fit in
// Duration) through one franz-go client with unkeyed records, and measures
// each record's latency from Produce to its acknowledgement into a
// log-linear histogram (no allocation per record: records come from a pool
// and the payload is shared). Consume reads the topic from the start through
// one client until it has read Records records, reached the end offsets it
// saw when it started, or ran for Duration.
package kbench
