package zookeeper

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/assign"
	"github.com/ferry-mq/ferry/replication/isr"
)

// Metadata is a cluster's replication.Metadata: topics are Kafka's
// /brokers/topics/<t> and /config/topics/<t>, the live brokers
// /brokers/ids. Creating a topic writes its znodes, as Kafka's
// AdminZkClient does from whichever broker got the request; the controller
// takes it from there (partition states, LeaderAndIsr).
type Metadata struct {
	c         *Client
	clusterID string
}

var _ replication.Metadata = (*Metadata)(nil)

// NewMetadata reads the cluster through c; clusterID is /cluster/id, read
// (or created) once at startup.
func NewMetadata(c *Client, clusterID string) *Metadata {
	return &Metadata{c: c, clusterID: clusterID}
}

func (m *Metadata) ClusterID() string { return m.clusterID }

func (m *Metadata) Topics() ([]replication.TopicMetadata, error) {
	names, err := m.c.Topics()
	if err != nil {
		return nil, err
	}
	out := make([]replication.TopicMetadata, 0, len(names))
	for _, name := range names {
		t, ok, err := m.Topic(name)
		if err != nil {
			return nil, err
		}
		if ok { // deleted meanwhile otherwise
			out = append(out, t)
		}
	}
	return out, nil
}

func (m *Metadata) Topic(name string) (replication.TopicMetadata, bool, error) {
	a, version, err := m.c.TopicVersioned(name)
	if errors.Is(err, ErrNotFound) {
		return replication.TopicMetadata{}, false, nil
	}
	if err != nil {
		return replication.TopicMetadata{}, false, err
	}
	cfg, err := m.c.TopicConfig(name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return replication.TopicMetadata{}, false, err
	}
	replicas := make([][]int32, len(a.Partitions))
	for p, rs := range a.Partitions {
		if p < 0 || int(p) >= len(replicas) {
			return replication.TopicMetadata{}, false, fmt.Errorf("%w: topic %s has partition %d of %d", ErrCorrupt, name, p, len(replicas))
		}
		replicas[p] = rs
	}
	var id string
	if !a.ID.IsZero() {
		id = a.ID.String()
	}
	return replication.TopicMetadata{Name: name, ID: id, Replicas: replicas, Configs: cfg, Version: version}, true, nil
}

// PutTopic creates a new topic's znodes, or replaces a known topic's
// configs (known by its id: a topic of the same name with another id is
// ErrTopicExists). A broker whose table is behind (partitions added elsewhere that
// it holds none of) may name fewer partitions than the znode: they stay.
func (m *Metadata) PutTopic(t replication.TopicMetadata) error {
	cur, ok, err := m.Topic(t.Name)
	if err != nil {
		return err
	}
	if !ok {
		id, err := ParseUUID(t.ID)
		if err != nil {
			return fmt.Errorf("topic id %q: %w", t.ID, err)
		}
		a := TopicAssignment{Name: t.Name, ID: id, Partitions: map[int32][]int32{}}
		for p, rs := range t.Replicas {
			a.Partitions[int32(p)] = rs
		}
		if err := m.c.CreateTopic(a, t.Configs); errors.Is(err, ErrTopicExists) {
			return fmt.Errorf("%w: %s", replication.ErrTopicExists, t.Name)
		} else if err != nil {
			return err
		}
		return nil
	}
	if cur.ID != t.ID {
		// Another broker created a topic of this name first, as this one
		// was creating its own: this one's must not be taken for it.
		return fmt.Errorf("%w: %s, with another topic id", replication.ErrTopicExists, t.Name)
	}
	if len(t.Replicas) > len(cur.Replicas) {
		return fmt.Errorf("zookeeper: %s has %d partitions; partitions are added with AddPartitions, not PutTopic",
			t.Name, len(cur.Replicas))
	}
	if maps.Equal(t.Configs, cur.Configs) {
		return nil
	}
	return m.c.SetTopicConfig(t.Name, t.Configs)
}

// AddPartitions writes the topic znode with added joined to its
// partitions, conditionally on version (Client.AddPartitions).
func (m *Metadata) AddPartitions(name string, version int32, added [][]int32) error {
	deleting, err := m.c.TopicsMarkedForDeletion()
	if err != nil {
		return err
	}
	if slices.Contains(deleting, name) { // as Kafka's AdminManager refuses it
		return fmt.Errorf("%w: %s", replication.ErrTopicQueuedForDeletion, name)
	}
	a, v, err := m.c.TopicVersioned(name)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %s no longer exists", replication.ErrTopicChanged, name)
	}
	if err != nil {
		return err
	}
	if v != version {
		return fmt.Errorf("%w: %s is at version %d with %d partitions, not at version %d",
			replication.ErrTopicChanged, name, v, len(a.Partitions), version)
	}
	if len(a.Adding) > 0 || len(a.Removing) > 0 { // as Kafka's AdminZkClient refuses it
		return fmt.Errorf("%w %s; add partitions once it completes or is cancelled", replication.ErrTopicReassigning, name)
	}
	byIndex := make(map[int32][]int32, len(added))
	for i, rs := range added {
		byIndex[int32(len(a.Partitions)+i)] = rs
	}
	err = m.c.AddPartitions(name, byIndex, version)
	if errors.Is(err, ErrStaleTopic) || errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %v", replication.ErrTopicChanged, err)
	}
	return err
}

// RemoveTopic asks the controller to delete the topic
// (/admin/delete_topics/<t>).
func (m *Metadata) RemoveTopic(name string) error { return m.c.MarkTopicForDeletion(name) }

func (m *Metadata) Brokers() ([]assign.Broker, error) {
	infos, err := m.c.Brokers()
	if err != nil {
		return nil, err
	}
	out := make([]assign.Broker, len(infos))
	for i, b := range infos {
		out[i] = assign.Broker{ID: b.ID, Rack: b.Rack}
	}
	return out, nil
}

// WriteISR records a leader's ISR change (replication/isr's proposal),
// conditionally on the state znode's version, and notifies the controller
// (/isr_change_notification). ErrStalePartitionState: another writer
// changed the state first.
func (m *Metadata) WriteISR(topic string, partition int32, st isr.State) (int32, error) {
	v, err := m.c.UpdateISR(topic, partition, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
		ISR: st.ISR, ControllerEpoch: st.ControllerEpoch, Version: st.Version})
	if err != nil {
		return 0, err
	}
	// The controller learns of it late, never wrongly: a lost notification
	// only delays its metadata (the next change or failover re-reads).
	if err := m.c.NotifyISRChange([]TopicPartition{{Topic: topic, Partition: partition}}); err != nil {
		m.c.log.Warn("ISR change notification failed", "topic", topic, "partition", partition, "err", err)
	}
	return v, nil
}

// ReadState is a partition's state as ZooKeeper holds it now.
func (m *Metadata) ReadState(topic string, partition int32) (isr.State, error) {
	st, err := m.c.PartitionState(topic, partition)
	if err != nil {
		return isr.State{}, err
	}
	return isr.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR,
		ControllerEpoch: st.ControllerEpoch, Version: st.Version}, nil
}
