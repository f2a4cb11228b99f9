// Package quota holds the replication throttle's decisions, without I/O:
// a byte rate that says when its bound is used up (Kafka's
// ReplicationQuotaManager) and the throttled-replica lists of the topic
// configs (leader.replication.throttled.replicas,
// follower.replication.throttled.replicas) that say which replicas it
// applies to.
//
// The rate is a token bucket rather than Kafka's sampled window: it
// refills at the bound, holds at most one second of it, and is exceeded
// while its balance is below zero. Copying asks before each fetch and
// records the bytes after, so it overshoots by at most one fetch and the
// long-run rate is the bound.
package quota
