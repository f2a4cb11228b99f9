// Package quota holds Kafka's client quotas (KIP-13, KIP-55, KIP-546)
// without I/O: the entities a quota is set for, the precedence that picks
// the quota a request is held to, and the throttle time a request earns
// when its entity is over.
//
// Entities are a user, a client id, or a user and a client id, each name
// either given or the default (<default>, every name without its own
// entry). A request by user U with client id C is held, per quota type,
// to the first of these that sets it (Kafka's order):
//
//	/config/users/U/clients/C
//	/config/users/U/clients/<default>
//	/config/users/U
//	/config/users/<default>/clients/C
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/C
//	/config/clients/<default>
//
// The bytes count against the entity that matched, with each default
// replaced by the request's own name: a quota on /config/users/U is
// shared by all of U's client ids, one on /config/clients/<default> is
// every client id's own.
//
// The quota types are producer_byte_rate and consumer_byte_rate
// (enforced) and request_percentage (stored and described, not enforced:
// ferry does not measure handler time per client). Each entity's rate is
// a token bucket (replication/quota.Rate's kind) that refills at the
// quota and saves at most one second of it; a request records its bytes
// and, when the balance is below zero, earns the delay that brings it
// back to zero — the time after which the entity's rate is within its
// quota again, which is what Kafka's ClientQuotaManager computes over its
// sampled window.
//
// Manager is the broker's in-memory copy and the buckets; the caller
// feeds it what a Store holds (FileStore on a single node, ZooKeeper on a
// cluster) and asks it for throttle times.
package quota
