package controller

import (
	"errors"
	"maps"
	"slices"
)

// Leader elections asked for (Kafka's ElectLeaders, key 43, and its
// auto.leader.rebalance.enable task): a preferred election gives a
// partition back to its first assigned replica when that one is live and
// in the ISR; an unclean election gives a leaderless partition to a live
// replica even out of the ISR. The answer comes once the writes are done.

// ElectionType is ElectLeaders' election type, with Kafka's values.
type ElectionType int8

const (
	PreferredElection ElectionType = 0
	UncleanElection   ElectionType = 1
)

// Per-partition outcomes of an election, as Kafka names them.
var (
	// ErrElectionNotNeeded maps to ELECTION_NOT_NEEDED: the preferred
	// replica leads already (preferred), or the partition has a live
	// leader (unclean).
	ErrElectionNotNeeded = errors.New("election not needed")
	// ErrPreferredLeaderNotAvailable maps to PREFERRED_LEADER_NOT_AVAILABLE.
	ErrPreferredLeaderNotAvailable = errors.New("the preferred leader is not available")
	// ErrEligibleLeadersNotAvailable maps to ELIGIBLE_LEADERS_NOT_AVAILABLE.
	ErrEligibleLeadersNotAvailable = errors.New("no eligible leader is available")
	// ErrUnknownPartition maps to UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownPartition = errors.New("unknown topic or partition")
)

// LeaderElectionRequested asks for elections; nil Partitions means every
// partition. ID identifies the answer (AnswerLeaderElection).
type LeaderElectionRequested struct {
	ID         uint64
	Type       ElectionType
	Partitions []TopicPartition
}

// LeaderImbalanceCheck is the periodic check of auto.leader.rebalance.enable:
// a broker leading fewer of the partitions it is the preferred replica of
// than (100 - MaxImbalancePercent) percent gets them back by preferred
// elections (Kafka's checkAndTriggerAutoLeaderRebalance).
type LeaderImbalanceCheck struct {
	MaxImbalancePercent int
}

// AnswerLeaderElection answers a LeaderElectionRequested: per partition
// nil (elected) or one of the errors above; Err for the whole request
// (ErrNotController).
type AnswerLeaderElection struct {
	ID      uint64
	Results map[TopicPartition]error
	Err     error
}

func (LeaderElectionRequested) isEvent() {}
func (LeaderImbalanceCheck) isEvent()    {}
func (AnswerLeaderElection) isAction()   {}

// pendingElection is an election request whose writes are out.
type pendingElection struct {
	results map[TopicPartition]error
	// target: the partitions written, with the leader each write elects.
	target map[TopicPartition]int32
}

func (c *Controller) onElectionRequested(e LeaderElectionRequested, b *batch) {
	if !c.active {
		b.answers = append(b.answers, AnswerLeaderElection{ID: e.ID, Err: ErrNotController})
		return
	}
	tps := e.Partitions
	if tps == nil {
		tps = sortedTPs(c.partitions)
	}
	pe := &pendingElection{results: map[TopicPartition]error{}, target: map[TopicPartition]int32{}}
	for _, tp := range tps {
		p, ok := c.partitions[tp]
		if !ok || c.isDeleting(tp.Topic) {
			pe.results[tp] = ErrUnknownPartition
			continue
		}
		leader, err := c.electionTarget(p, e.Type)
		if err != nil {
			pe.results[tp] = err
			continue
		}
		c.write(p, c.bumped(*p.state, leader, c.electedISR(p, leader, e.Type)), *p.state, b)
		pe.target[tp] = leader
	}
	c.elections[e.ID] = pe
}

// electionTarget is who an election of typ gives p to, or why none.
func (c *Controller) electionTarget(p *partition, typ ElectionType) (int32, error) {
	if p.state == nil || p.op != idle {
		// Being created or changed right now: asking again after settles it.
		if typ == PreferredElection {
			return NoLeader, ErrPreferredLeaderNotAvailable
		}
		return NoLeader, ErrEligibleLeadersNotAvailable
	}
	eligible := c.eligibleFor(p)
	cur := p.state
	switch typ {
	case PreferredElection:
		replicas := p.assignment.Replicas
		if len(replicas) > 0 && cur.Leader == replicas[0] {
			return NoLeader, ErrElectionNotNeeded
		}
		leader, ok := PreferredReplicaLeader(replicas, cur.ISR, eligible)
		if !ok {
			return NoLeader, ErrPreferredLeaderNotAvailable
		}
		return leader, nil
	case UncleanElection:
		if cur.Leader != NoLeader && eligible(cur.Leader) {
			return NoLeader, ErrElectionNotNeeded
		}
		leader, _, ok := OfflinePartitionLeader(p.assignment.Replicas, cur.ISR, eligible, true)
		if !ok {
			return NoLeader, ErrEligibleLeadersNotAvailable
		}
		return leader, nil
	}
	return NoLeader, ErrEligibleLeadersNotAvailable
}

// electedISR keeps the ISR for a leader from it; an unclean leader from
// outside it is alone, as an unclean failover leaves it.
func (c *Controller) electedISR(p *partition, leader int32, typ ElectionType) []int32 {
	if slices.Contains(p.state.ISR, leader) {
		return filter(p.state.ISR, func(id int32) bool { return id == leader || c.eligibleFor(p)(id) })
	}
	return []int32{leader}
}

// answerElections answers each election whose writes are all settled:
// elected if the partition's leader is now the one asked for.
func (c *Controller) answerElections(b *batch) {
	for _, id := range slices.Sorted(maps.Keys(c.elections)) {
		pe := c.elections[id]
		done := true
		for tp := range pe.target {
			if p, ok := c.partitions[tp]; ok && p.op != idle {
				done = false
				break
			}
		}
		if !done {
			continue
		}
		for tp, leader := range pe.target {
			p, ok := c.partitions[tp]
			switch {
			case ok && p.state != nil && p.state.Leader == leader:
				pe.results[tp] = nil
			default:
				pe.results[tp] = ErrPreferredLeaderNotAvailable
			}
		}
		delete(c.elections, id)
		b.answers = append(b.answers, AnswerLeaderElection{ID: id, Results: pe.results})
	}
}

// abortElections answers every waiting election with ErrNotController.
func (c *Controller) abortElections(b *batch) {
	for _, id := range slices.Sorted(maps.Keys(c.elections)) {
		b.answers = append(b.answers, AnswerLeaderElection{ID: id, Err: ErrNotController})
	}
}

// onImbalanceCheck elects the preferred replica for the partitions of
// each broker whose share of leaderships it prefers is below the bound.
func (c *Controller) onImbalanceCheck(e LeaderImbalanceCheck, b *batch) {
	if !c.active {
		return
	}
	preferredOf := map[int32][]*partition{}
	for _, p := range c.sortedPartitions(func(p *partition) bool {
		return p.state != nil && len(p.assignment.Replicas) > 0 && !c.isDeleting(p.tp.Topic)
	}) {
		pref := p.assignment.Replicas[0]
		preferredOf[pref] = append(preferredOf[pref], p)
	}
	for _, broker := range slices.Sorted(maps.Keys(preferredOf)) {
		if !c.isLive(broker) || c.shuttingDown[broker] {
			continue
		}
		parts := preferredOf[broker]
		var notLed []*partition
		for _, p := range parts {
			if p.state.Leader != broker {
				notLed = append(notLed, p)
			}
		}
		if len(notLed)*100 <= e.MaxImbalancePercent*len(parts) {
			continue
		}
		for _, p := range notLed {
			if leader, err := c.electionTarget(p, PreferredElection); err == nil {
				c.write(p, c.bumped(*p.state, leader, c.electedISR(p, leader, PreferredElection)), *p.state, b)
			}
		}
	}
}
