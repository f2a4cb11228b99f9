// Package replication owns a partition on this broker: its log, its
// replicas, their leader epochs, in-sync set and high watermark, its
// idempotent and transactional producers (the open transactions, the last
// stable offset, the markers and the aborted-transaction index they feed:
// transactions.go), and its lifecycle. A single-node partition is a
// Replica with one replica, this broker; a replicated one has followers,
// and the same type serves both.
//
// Decisions (who leads, who is in the ISR, where the high watermark is,
// what a returning replica truncates to, the controller's choices) are
// plain code fed events in subpackages (assign, controller, isr, epoch),
// driven by thin layers over ZooKeeper (zookeeper) and the network. Waiting
// requests park in the purgatory (delayed).
//
// A Replica's files, in <data-dir>/<topic>-<index>/: the segments and
// their .txnindex (storage), and <offset>.snapshot with the producer state,
// open transactions included (producersnapshot.go).
package replication
