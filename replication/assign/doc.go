// Package assign places the replicas of new topics and new partitions on
// brokers, the way Kafka's AdminUtils.assignReplicasToBrokers does, so a
// cluster that an operator balanced with Kafka's tools stays balanced when
// ferry adds to it.
//
// It is pure: brokers and counts go in, replica lists come out; randomness
// comes from an injected *rand.Rand (or fixed start positions in tests).
//
// Rack-unaware placement (no broker has a rack, or racks are ignored, as
// Kafka's --disable-rack-aware): brokers sorted by id; partition p's first
// replica (its preferred leader) is broker (p+start) mod n, so leaders go
// round-robin from a random start; the other replicas follow at a distance
// 1+((shift+j) mod (n-1)) from the first, and shift grows by one after every
// n partitions, so the followers of one broker's partitions are spread over
// the other brokers instead of always being its neighbours.
//
// Rack-aware placement (every broker has a rack): the same walk over a
// rack-alternating broker list (one broker of each rack in turn, racks in
// name order, brokers by id within a rack), skipping a candidate whose rack
// already holds a replica while some rack holds none, and a broker already
// used while some broker is unused. A partition thus spans min(RF, racks)
// racks. Brokers with and without racks mixed is an error unless racks are
// ignored.
package assign
