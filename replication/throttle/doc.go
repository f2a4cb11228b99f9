// Package throttle holds the replication throttle's decisions, without I/O:
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
//
// Bucket is ferry's one token bucket: the client quotas' byte rates,
// request time and connection rates, and the HTTP gateway's per-principal
// request limit (all in server/quota) use it too, each with its own
// capacity and debt.
package throttle
