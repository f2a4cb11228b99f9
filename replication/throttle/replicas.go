package throttle

import (
	"fmt"
	"strconv"
	"strings"
)

// Replicas is a parsed throttled-replica list: "*" (every replica of the
// topic) or partition:broker pairs. The zero Replicas throttles nothing.
type Replicas struct {
	all   bool
	pairs map[replica]bool
}

type replica struct {
	partition int32
	broker    int32
}

// ParseReplicas reads a leader.replication.throttled.replicas or
// follower.replication.throttled.replicas value (Kafka's
// ThrottledReplicaListValidator's format; spaces around items allowed).
func ParseReplicas(v string) (Replicas, error) {
	var r Replicas
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			continue
		case item == "*":
			r.all = true
			continue
		}
		p, b, ok := strings.Cut(item, ":")
		partition, errP := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		broker, errB := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || errP != nil || errB != nil || partition < 0 || broker < 0 {
			return Replicas{}, fmt.Errorf("%q is not partition:broker; the value is * or a list of partition:broker", item)
		}
		if r.pairs == nil {
			r.pairs = map[replica]bool{}
		}
		r.pairs[replica{int32(partition), int32(broker)}] = true
	}
	if r.all && len(r.pairs) > 0 {
		return Replicas{}, fmt.Errorf("%q mixes * with partition:broker pairs", v)
	}
	return r, nil
}

// Empty reports whether the list throttles nothing.
func (r Replicas) Empty() bool { return !r.all && len(r.pairs) == 0 }

// Has reports whether the replica of partition on broker is throttled.
func (r Replicas) Has(partition, broker int32) bool {
	return r.all || r.pairs[replica{partition, broker}]
}

// Format writes pairs as the config value ("0:1,0:2"), in the order given.
func Format(pairs [][2]int32) string {
	items := make([]string, len(pairs))
	for i, p := range pairs {
		items[i] = fmt.Sprintf("%d:%d", p[0], p[1])
	}
	return strings.Join(items, ",")
}
