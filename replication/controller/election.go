package controller

import "slices"

// The leader election algorithms of Kafka's
// PartitionLeaderElectionAlgorithms, as pure functions. eligible says
// whether a broker may take a role now (live and not shutting down).

// OfflinePartitionLeader elects for a partition whose leader is gone
// (OfflinePartitionLeaderElectionStrategy): the first replica in
// assignment order that is eligible and in the ISR, whose new ISR is the
// eligible part of the old one; failing that and only if unclean, the first
// eligible replica, alone in the ISR (records it lacks are lost).
func OfflinePartitionLeader(replicas, isr []int32, eligible func(int32) bool, unclean bool) (leader int32, newISR []int32, ok bool) {
	for _, r := range replicas {
		if eligible(r) && slices.Contains(isr, r) {
			return r, filter(isr, eligible), true
		}
	}
	if !unclean {
		return NoLeader, nil, false
	}
	for _, r := range replicas {
		if eligible(r) {
			return r, []int32{r}, true
		}
	}
	return NoLeader, nil, false
}

// ControlledShutdownLeader moves leadership off a shutting-down leader
// (ControlledShutdownPartitionLeaderElectionStrategy): the first replica
// that is in the ISR and eligible; the new ISR drops every ineligible
// member. Never unclean.
func ControlledShutdownLeader(replicas, isr []int32, eligible func(int32) bool) (leader int32, newISR []int32, ok bool) {
	for _, r := range replicas {
		if eligible(r) && slices.Contains(isr, r) {
			return r, filter(isr, eligible), true
		}
	}
	return NoLeader, nil, false
}

// PreferredReplicaLeader returns the preferred replica (the first assigned)
// if it can lead: eligible and in the ISR
// (PreferredReplicaPartitionLeaderElectionStrategy).
func PreferredReplicaLeader(replicas, isr []int32, eligible func(int32) bool) (int32, bool) {
	if len(replicas) == 0 || !eligible(replicas[0]) || !slices.Contains(isr, replicas[0]) {
		return NoLeader, false
	}
	return replicas[0], true
}

// ReassignmentLeader picks the first target replica that is eligible and in
// the ISR (ReassignPartitionLeaderElectionStrategy).
func ReassignmentLeader(target, isr []int32, eligible func(int32) bool) (int32, bool) {
	for _, r := range target {
		if eligible(r) && slices.Contains(isr, r) {
			return r, true
		}
	}
	return NoLeader, false
}

func filter(ids []int32, keep func(int32) bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}
