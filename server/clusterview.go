package server

import (
	"maps"
	"slices"
	"sync/atomic"
)

// The cluster as the controller last described it to this broker
// (UpdateMetadata, Kafka's MetadataCache): the live brokers and every
// partition's leader, epoch, ISR, replicas and offline replicas, including
// partitions this broker does not hold. A single node has none; its
// answers come from its own partitions.

// ClusterBroker is a live broker and where its Kafka listeners are.
type ClusterBroker struct {
	ID int32
	// Host and Port are its first endpoint (the only one before listener
	// names).
	Host string
	Port int32
	Rack string
	// Endpoints are all its listeners, as it registered them.
	Endpoints []Endpoint
}

// Endpoint is one listener of a broker.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
	// Protocol is Kafka's security protocol id (0 PLAINTEXT, 1 SSL,
	// 2 SASL_PLAINTEXT, 3 SASL_SSL).
	Protocol int16
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionView is one partition's state in the cluster.
type PartitionView struct {
	Leader, LeaderEpoch    int32
	ISR, Replicas, Offline []int32
}

// ClusterView is a snapshot; it is never changed after it is published.
type ClusterView struct {
	ControllerID, ControllerEpoch int32
	Brokers                       []ClusterBroker
	Partitions                    map[TopicPartition]PartitionView
}

// Partition is one partition's state in the view; ok is false when the
// view (or a nil one) does not describe it.
func (v *ClusterView) Partition(topic string, partition int32) (pv PartitionView, ok bool) {
	if v == nil {
		return PartitionView{}, false
	}
	pv, ok = v.Partitions[TopicPartition{Topic: topic, Partition: partition}]
	return pv, ok
}

// Live says whether broker id is among the live brokers of the view.
func (v *ClusterView) Live(id int32) bool {
	if v == nil {
		return false
	}
	for _, br := range v.Brokers {
		if br.ID == id {
			return true
		}
	}
	return false
}

// leaderDuringDelete is the leader Kafka's controller sends for a
// partition of a topic being deleted: drop it from the view.
const leaderDuringDelete = -2

// clusterViewHolder is the Broker's current view (nil: none yet).
type clusterViewHolder struct{ v atomic.Pointer[ClusterView] }

// ApplyUpdateMetadata replaces the live brokers and updates the given
// partitions, as Kafka's UpdateMetadata does; a request from an older
// controller epoch is refused.
func (b *Broker) ApplyUpdateMetadata(controllerID, controllerEpoch int32, brokers []ClusterBroker, partitions map[TopicPartition]PartitionView) error {
	if err := b.checkControllerEpoch(controllerEpoch); err != nil {
		return err
	}
	for {
		old := b.cluster.v.Load()
		next := &ClusterView{ControllerID: controllerID, ControllerEpoch: controllerEpoch,
			Brokers: slices.Clone(brokers), Partitions: map[TopicPartition]PartitionView{}}
		if old != nil {
			maps.Copy(next.Partitions, old.Partitions)
		}
		for tp, pv := range partitions {
			if pv.Leader == leaderDuringDelete {
				delete(next.Partitions, tp)
				continue
			}
			next.Partitions[tp] = pv
		}
		if b.cluster.v.CompareAndSwap(old, next) {
			if b.cfg.Forwarder != nil {
				b.cfg.Forwarder.LiveBrokers(next.Brokers)
			}
			return nil
		}
	}
}

// Cluster is the controller's last description of the cluster; ok is
// false before the first (and always on a single node).
func (b *Broker) Cluster() (view *ClusterView, ok bool) {
	v := b.cluster.v.Load()
	return v, v != nil
}

// PartitionCount is how many partitions of topic the view describes (0:
// none). It walks the whole view: for rare lookups only.
func (v *ClusterView) PartitionCount(topic string) int32 {
	if v == nil {
		return 0
	}
	var n int32
	for tp := range v.Partitions {
		if tp.Topic == topic && tp.Partition >= n {
			n = tp.Partition + 1
		}
	}
	return n
}

// PartitionsFrom is topic's partition count given that this broker knows
// of n: more when the view describes partitions from n on, added since
// this broker's topic table was read (a broker holding none of them is
// not told otherwise). Partitions are numbered without gaps, so it looks
// up only the ones beyond n.
func (v *ClusterView) PartitionsFrom(topic string, n int32) int32 {
	for {
		if _, ok := v.Partition(topic, n); !ok {
			return n
		}
		n++
	}
}

// TopicNames lists the topics the view describes, sorted. It walks the
// whole view.
func (v *ClusterView) TopicNames() []string {
	if v == nil {
		return nil
	}
	seen := map[string]bool{}
	for tp := range v.Partitions {
		seen[tp.Topic] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
