package throttle

import (
	"maps"
	"slices"
)

// Move is a partition reassignment's replicas: those that hold it now and
// the target.
type Move struct {
	Topic     string
	Partition int32
	Current   []int32
	Target    []int32
}

// MovePlan is what throttling moves sets, as Kafka's
// kafka-reassign-partitions.sh --throttle does: the leader and follower
// rates on Brokers (every broker holding or receiving a moved replica),
// and per topic the current replicas throttled as leaders (Leaders, the
// leader.replication.throttled.replicas value) and the added ones as
// followers (Followers, follower.replication.throttled.replicas).
type MovePlan struct {
	Brokers            []int32
	Leaders, Followers map[string]string
}

// PlanMoves works out the throttle of moves; the one place both the core
// (the HTTP gateway's moves) and `ferry reassign` take it from.
func PlanMoves(moves []Move) MovePlan {
	brokers := map[int32]bool{}
	leaders, followers := map[string][][2]int32{}, map[string][][2]int32{}
	for _, m := range moves {
		for _, b := range m.Current {
			brokers[b] = true
			leaders[m.Topic] = append(leaders[m.Topic], [2]int32{m.Partition, b})
		}
		for _, b := range m.Target {
			brokers[b] = true
			if !slices.Contains(m.Current, b) {
				followers[m.Topic] = append(followers[m.Topic], [2]int32{m.Partition, b})
			}
		}
	}
	plan := MovePlan{Brokers: slices.Sorted(maps.Keys(brokers)), Leaders: map[string]string{}, Followers: map[string]string{}}
	for t, pairs := range leaders {
		plan.Leaders[t] = Format(pairs)
	}
	for t, pairs := range followers {
		plan.Followers[t] = Format(pairs)
	}
	return plan
}
