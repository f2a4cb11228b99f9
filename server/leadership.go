package server

import "sync"

// Coordinators that keep state in a partition's log (the group coordinator
// and __consumer_offsets) follow this broker's leadership of that topic:
// they load the state when this broker starts leading a partition and drop
// it when it stops (Kafka's onElection and onResignation hooks, called by
// its ReplicaManager after a LeaderAndIsr or StopReplica is applied).

// LeadershipChange is this broker starting or stopping leading one
// partition of a watched topic.
type LeadershipChange struct {
	Partition   int32
	LeaderEpoch int32
	Leading     bool
}

// leadershipWatchers holds the callbacks per topic.
type leadershipWatchers struct {
	mu      sync.Mutex
	byTopic map[string][]func(LeadershipChange)
}

// WatchLeadership calls fn after every role the controller gives this
// broker for a partition of topic (leading, following, stopped). fn runs on
// the goroutine applying the controller's request and must not block; the
// same change may be reported more than once.
func (b *Broker) WatchLeadership(topic string, fn func(LeadershipChange)) {
	w := &b.leadership
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byTopic == nil {
		w.byTopic = map[string][]func(LeadershipChange){}
	}
	w.byTopic[topic] = append(w.byTopic[topic], fn)
}

func (b *Broker) leadershipChanged(topic string, change LeadershipChange) {
	w := &b.leadership
	w.mu.Lock()
	fns := w.byTopic[topic]
	w.mu.Unlock()
	for _, fn := range fns {
		fn(change)
	}
}
