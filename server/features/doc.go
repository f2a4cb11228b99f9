// Package features holds the cluster's finalized feature levels (KIP-584)
// as this broker knows them, and decides changes to them.
//
// Kafka gates protocol behaviour that every broker must agree on behind
// features: each broker supports a range of levels of a feature, the
// cluster finalizes one level, stored once (ZooKeeper's /feature on a
// cluster, ferry-features.json in the data dir on a single node), and
// every broker behaves by the finalized level, never by its own setting.
// ferry has one feature, transaction.version: 0 and 1 are the
// transactions of Kafka 3.x, 2 is KIP-890 part 2 (Produce v12 adds the
// partition to the transaction, EndTxn v5 bumps the epoch, TxnOffsetCommit
// v5). Clients learn the level from ApiVersions (SupportedFeatures,
// FinalizedFeatures, FinalizedFeaturesEpoch) and opt in.
//
// Lifecycle (Open): a store with nothing finalized (a new cluster or
// data dir, or a cluster that ran a ferry without features) finalizes
// each feature at the highest level every registered broker supports (a
// broker that lists no range for it supports 0 only), with a write
// conditional on the store being still empty, so brokers starting
// together agree. A broker whose supported range does not hold a
// finalized level refuses to start, as Kafka's does
// (FeatureCacheUpdateException): it can neither lower the level nor serve
// it. A later change read from the store (Observe, fed by the ZooKeeper
// watch) that this broker cannot serve is not adopted and is returned as
// ErrIncompatible: the broker then shuts down with a non-zero exit, as
// Kafka's does (FinalizedFeatureChangeListener: "The broker will
// eventually exit"), rather than go on serving a level the other brokers
// and their clients have left. Only a hand edit of the store can cause
// it (Update refuses a level a registered broker does not support).
//
// Changes (Update, UpdateFeatures key 57, kafka-features.sh) are decided
// by Decide, plain code: Kafka 3.9's rules and INVALID_UPDATE_VERSION
// messages (FeatureControlManager), all updates of a request or none,
// every registered broker must support the new level, a downgrade needs
// the downgrade type. The write is conditional on the epoch read, so two
// concurrent updates cannot both apply to the same level.
//
// A downgrade does not end anything open: clients choose the protocol by
// the finalized level (franz-go once per session, the Java client per
// transaction), every broker serves both protocols' versions at every
// level, as Kafka 4 does, and the coordinator decides each request by its
// version (an EndTxn v5 is a version-2 end whatever the level), so a
// transaction begun under version 2 ends as it began.
package features
