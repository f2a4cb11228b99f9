// Package quota holds Kafka's client quotas (KIP-13, KIP-55, KIP-546,
// KIP-612) without I/O: the entities a quota is set for, the precedence
// that picks the quota a request is held to, the throttle time a request
// earns when its entity is over, and whether a new connection is over its
// address's connection creation rate (connections.go).
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
// An ip entity (a client address, or <default>, /config/ips/<ip>) stands
// alone, holds only connection_creation_rate, and is held against the
// connection's address: its own entry, else the default's.
//
// The bytes count against the entity that matched, with each default
// replaced by the request's own name: a quota on /config/users/U is
// shared by all of U's client ids, one on /config/clients/<default> is
// every client id's own.
//
// The quota types are producer_byte_rate, consumer_byte_rate and
// request_percentage, all enforced. Each entity's byte rate is a token
// bucket (replication/throttle.Rate, over throttle.Bucket, the one token
// bucket behind every rate here) that refills at the quota and
// saves at most one second of it; a request records its bytes and, when
// the balance is below zero, earns the delay that brings it back to zero
// — the time after which the entity's rate is within its quota again,
// which is what Kafka's ClientQuotaManager computes over its sampled
// window.
//
// request_percentage (KIP-124) is a share of one request handler's time:
// 100 is one whole thread, 1 is 10 ms of handler time a second. The
// listener measures each request's handler time (decode to response
// ready, less the time it spent parked in a purgatory, which Park and
// Parked account for) and RecordRequest draws it from the entity's bucket,
// which refills at the share, saves at most RequestWindow of it and owes
// at most as much, so one response's request throttle is at most
// RequestWindow (1 s), as Kafka caps it at one quota window. A broker with
// no request_percentage quota reads no clock for it (LimitsRequests).
//
// Manager is the broker's in-memory copy and the buckets; the caller
// feeds it what a Store holds (FileStore on a single node, ZKStore on a
// cluster) and asks it for throttle times.
package quota
