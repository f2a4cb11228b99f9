package server

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/ferry-mq/ferry/replication"
)

// What the admin surfaces (GET /topics/{t}, /topics, /cluster, the metrics)
// say about partitions on a cluster. Two sources describe a partition's
// leadership: the controller's view (UpdateMetadata; every partition of the
// cluster) and this broker's replica (LeaderAndIsr, plus the ISR changes it
// commits itself while it leads). The view learns of a leader's ISR change
// only after the ISR change notification's linger (isr.ChangeLinger) and the
// controller's round trip; the leader knows it once its write is committed.
// So a partition this broker leads, in the view's leader epoch or a newer
// one, is described from its replica; any other from the view; one the view
// does not describe yet, from the replica when it is here. A single node has
// no view: every answer is its replicas', as before clusters existed.

// bestKnown is one partition's leadership from both sources (local nil:
// no replica here); ok is false when neither describes it.
func bestKnown(self int32, local *replication.Role, pv PartitionView, inView bool) (PartitionView, bool) {
	fromLocal := func() PartitionView {
		return PartitionView{Leader: local.Leader, LeaderEpoch: local.LeaderEpoch, ISR: local.ISR, Replicas: local.Replicas}
	}
	switch {
	case inView && local != nil && local.Leader == self && local.LeaderEpoch >= pv.LeaderEpoch:
		best := fromLocal()
		best.Offline = pv.Offline // only the controller knows which brokers are gone
		return best, true
	case inView:
		return pv, true
	case local != nil:
		return fromLocal(), true
	}
	return PartitionView{}, false
}

// UnderReplicated: the ISR is smaller than the assignment (Kafka's
// UnderReplicatedPartitions counts these on their leaders).
func (pv PartitionView) UnderReplicated() bool { return len(pv.ISR) < len(pv.Replicas) }

// Topics lists the topics the view describes, sorted; nil for a nil view.
func (v *ClusterView) Topics() []string {
	if v == nil {
		return nil
	}
	seen := map[string]struct{}{}
	for tp := range v.Partitions {
		seen[tp.Topic] = struct{}{}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// KnownTopics lists, sorted, the topics this broker holds or knows of and,
// on a cluster, every topic the controller described: a topic without a
// replica here is listed on every broker, as Kafka's Metadata lists it.
func (b *Broker) KnownTopics() []string {
	names := b.Topics()
	view, ok := b.Cluster()
	if !ok {
		return names
	}
	names = append(names, view.Topics()...)
	slices.Sort(names)
	return slices.Compact(names)
}

// describedTopic is the topic named: this broker's entry, or on a cluster
// the cluster metadata's for a topic the controller described but that has
// no replica here (its partitions are all nil).
func (b *Broker) describedTopic(name string, view *ClusterView) (*topic, error) {
	t, err := b.lookup(name)
	if !errors.Is(err, ErrUnknownTopic) || !slices.Contains(view.Topics(), name) {
		return t, err
	}
	tm, ok, err := b.metadata.Topic(name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: read topic %s: %v", ErrStorage, name, err)
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	meta := topicMetaOf(tm)
	return &topic{meta: meta, partitions: make([]*replication.Replica, meta.Partitions)}, nil
}

// ClusterState is the cluster's replication health as this broker knows
// it (GET /cluster).
type ClusterState struct {
	// ControllerID is the controller's broker id, -1 while this cluster's
	// broker has not heard from one; a single node is its own.
	ControllerID int32
	// Brokers are the live brokers, by id; nil on a single node (the
	// listener knows its own address).
	Brokers []ClusterBroker
	// Partitions counts every partition of the cluster; UnderReplicated
	// those whose ISR is smaller than their replicas; Offline those
	// without a leader, or (held here) whose log failed.
	Partitions, UnderReplicated, Offline int
}

// ClusterState sums every partition's best known state.
func (b *Broker) ClusterState() ClusterState {
	view, onCluster := b.Cluster()
	st := ClusterState{ControllerID: b.cfg.BrokerID}
	switch {
	case onCluster:
		st.ControllerID = view.ControllerID
		st.Brokers = slices.Clone(view.Brokers)
		slices.SortFunc(st.Brokers, func(a, b ClusterBroker) int { return cmp.Compare(a.ID, b.ID) })
	case b.cfg.AwaitRoles:
		st.ControllerID = -1 // registered, not yet told of the cluster
	}
	b.eachPartitionState(view, func(pv PartitionView, failed bool) {
		st.Partitions++
		if pv.UnderReplicated() {
			st.UnderReplicated++
		}
		if pv.Leader < 0 || failed {
			st.Offline++
		}
	})
	return st
}

// eachPartitionState calls fn with every partition's best known state:
// those of the view, then those held here that it does not describe yet.
// failed says that the replica here has a failed log.
func (b *Broker) eachPartitionState(view *ClusterView, fn func(pv PartitionView, failed bool)) {
	held := map[TopicPartition]*replication.Replica{}
	b.eachPartition(func(p *replication.Replica) {
		held[TopicPartition{Topic: p.Topic(), Partition: p.Index()}] = p
	})
	state := func(tp TopicPartition, pv PartitionView, inView bool) {
		var local *replication.Role
		p := held[tp]
		if p != nil {
			r := p.Role()
			local = &r
		}
		if best, ok := bestKnown(b.cfg.BrokerID, local, pv, inView); ok {
			fn(best, p != nil && p.Failure() != nil)
		}
	}
	if view != nil {
		for tp, pv := range view.Partitions {
			state(tp, pv, true)
		}
	}
	for tp := range held {
		if _, inView := view.Partition(tp.Topic, tp.Partition); !inView {
			state(tp, PartitionView{}, false)
		}
	}
}

// LeaderlessPartitions counts the partitions of the controller's view
// without a leader (Kafka's OfflinePartitionsCount, which its active
// controller reports), less those held here with a failed log: the
// metrics count those already.
func (b *Broker) LeaderlessPartitions() int {
	view, ok := b.Cluster()
	if !ok {
		return 0
	}
	n := 0
	for tp, pv := range view.Partitions {
		if pv.Leader >= 0 {
			continue
		}
		if p, err := b.partition(tp.Topic, tp.Partition); err == nil && p.Failure() != nil {
			continue
		}
		n++
	}
	return n
}
