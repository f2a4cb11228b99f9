// Package replication owns a partition on this broker: its log, its
// replicas, their leader epochs, in-sync set and high watermark, its
// idempotent producers, and its lifecycle. A single-node partition is a
// Replica with one replica, this broker; a replicated one has followers,
// and the same type serves both.
//
// Decisions (who leads, who is in the ISR, where the high watermark is,
// what a returning replica truncates to, the controller's choices) are
// plain code fed events in subpackages (assign, controller, isr, epoch),
// driven by thin layers over ZooKeeper (zookeeper) and the network. Waiting
// requests park in the purgatory (delayed).
//
// A Replica's files, in <data-dir>/<topic>-<index>/: the segments
// (storage), and <offset>.snapshot with the idempotent producer state
// (producersnapshot.go).
package replication
