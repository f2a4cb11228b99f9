package replication

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/ferry-mq/ferry/replication/assign"
	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/storage"
)

// TopicMetadata is one topic as the cluster records it.
type TopicMetadata struct {
	Name string
	// ID is 16 random bytes, base64url, like Kafka's topic ids.
	ID string
	// Replicas[p] is partition p's assigned replicas, the preferred
	// leader first.
	Replicas [][]int32
	Configs  map[string]string
	// Version is the assignment's version as read (on a cluster the
	// topic znode's), which AddPartitions expects.
	Version int32
}

// Partitions is the topic's partition count.
func (t TopicMetadata) Partitions() int32 { return int32(len(t.Replicas)) }

// ReplicationFactor is the replica count of partition 0 (Kafka reports the
// same for a topic whose partitions differ).
func (t TopicMetadata) ReplicationFactor() int16 {
	if len(t.Replicas) == 0 {
		return 0
	}
	return int16(len(t.Replicas[0]))
}

// ErrTopicExists: PutTopic of a new topic whose name another broker
// recorded first (with its own topic id).
var ErrTopicExists = errors.New("topic already exists")

// ErrTopicChanged: AddPartitions to a topic whose assignment changed
// since it was read (another broker added partitions meanwhile).
var ErrTopicChanged = errors.New("topic changed concurrently")

// ErrTopicQueuedForDeletion: AddPartitions to a topic whose deletion was
// asked for and is not finished.
var ErrTopicQueuedForDeletion = errors.New("topic is queued for deletion")

// ErrTopicReassigning: AddPartitions to a topic some of whose partitions
// are being reassigned (Kafka's REASSIGNMENT_IN_PROGRESS).
var ErrTopicReassigning = errors.New("a partition reassignment is in progress for the topic")

// Metadata is where the cluster's topic table lives: a file in the data
// dir on a single node (LocalMetadata), ZooKeeper's /brokers/topics and
// /config/topics on a cluster. The core reads and changes topics only
// through it. A change is durable when the call returns.
type Metadata interface {
	// ClusterID is the cluster's id, made once when the cluster (or the
	// single node's data dir) was first started.
	ClusterID() string
	// Topics lists every topic.
	Topics() ([]TopicMetadata, error)
	// Topic is one topic; ok is false when there is none of that name.
	Topic(name string) (t TopicMetadata, ok bool, err error)
	// PutTopic records a new topic or a known one's configs; a known
	// topic's partitions change through AddPartitions only. A topic of
	// the same name with another id is ErrTopicExists: two brokers
	// creating one name at once must not both think theirs was kept.
	PutTopic(TopicMetadata) error
	// AddPartitions joins added, numbered on from the topic's last
	// partition, to its assignment when that is still at version (as
	// Topic read it): ErrTopicChanged otherwise, ErrTopicQueuedForDeletion
	// while the topic is being deleted.
	AddPartitions(name string, version int32, added [][]int32) error
	// RemoveTopic forgets a topic; removing an unknown one is a no-op.
	RemoveTopic(name string) error
	// Brokers are the live brokers new replicas are assigned to.
	Brokers() ([]assign.Broker, error)
}

// NewTopicID returns a fresh topic id.
func NewTopicID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// LocalMetadataFile is the single-node topic table, in the data dir.
const LocalMetadataFile = "ferry-topics.json"

// LocalMetadata is a single node's Metadata: one JSON file rewritten
// atomically on every change. Every partition has one replica, the node.
type LocalMetadata struct {
	dir      string
	brokerID int32
	mu       struct {
		sync.Mutex
		file localFile
	}
}

// localFile is the file's shape (version 1, kept since the first release):
// partition counts, not assignments, since every replica is this node.
type localFile struct {
	Version   int          `json:"version"`
	ClusterID string       `json:"cluster_id"`
	BrokerID  int32        `json:"broker_id"`
	Topics    []localTopic `json:"topics"`
}

type localTopic struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// OpenLocalMetadata reads dir's topic table (a missing file is a new data
// dir, which gets a new cluster id) and records brokerID in it.
func OpenLocalMetadata(dir string, brokerID int32) (*LocalMetadata, error) {
	m := &LocalMetadata{dir: dir, brokerID: brokerID}
	data, err := os.ReadFile(filepath.Join(dir, LocalMetadataFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		m.mu.file = localFile{Version: 1, ClusterID: NewTopicID()}
	case err != nil:
		return nil, fmt.Errorf("read topic metadata: %w", err)
	default:
		if err := json.Unmarshal(data, &m.mu.file); err != nil {
			return nil, fmt.Errorf("parse %s: %w", LocalMetadataFile, err)
		}
	}
	m.mu.file.BrokerID = brokerID
	if err := m.saveLocked(m.mu.file); err != nil {
		return nil, fmt.Errorf("write topic metadata: %w", err)
	}
	return m, nil
}

func (m *LocalMetadata) ClusterID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.file.ClusterID
}

func (m *LocalMetadata) Topics() ([]TopicMetadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicMetadata, len(m.mu.file.Topics))
	for i, lt := range m.mu.file.Topics {
		out[i] = m.fromLocal(lt)
	}
	return out, nil
}

func (m *LocalMetadata) Topic(name string) (TopicMetadata, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, lt := range m.mu.file.Topics {
		if lt.Name == name {
			return m.fromLocal(lt), true, nil
		}
	}
	return TopicMetadata{}, false, nil
}

// Brokers is this node alone.
func (m *LocalMetadata) Brokers() ([]assign.Broker, error) {
	return []assign.Broker{{ID: m.brokerID}}, nil
}

func (m *LocalMetadata) fromLocal(lt localTopic) TopicMetadata {
	replicas := make([][]int32, lt.Partitions)
	for p := range replicas {
		replicas[p] = []int32{m.brokerID}
	}
	return TopicMetadata{Name: lt.Name, ID: lt.ID, Replicas: replicas, Configs: maps.Clone(lt.Configs)}
}

func (m *LocalMetadata) PutTopic(t TopicMetadata) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.IndexFunc(m.mu.file.Topics, func(lt localTopic) bool { return lt.Name == t.Name }); i >= 0 && m.mu.file.Topics[i].ID != t.ID {
		return fmt.Errorf("%w: %s, with another topic id", ErrTopicExists, t.Name)
	}
	next := m.mu.file
	next.Topics = slices.DeleteFunc(slices.Clone(next.Topics), func(lt localTopic) bool { return lt.Name == t.Name })
	next.Topics = append(next.Topics, localTopic{Name: t.Name, ID: t.ID, Partitions: t.Partitions(),
		ReplicationFactor: t.ReplicationFactor(), Configs: maps.Clone(t.Configs)})
	return m.saveLocked(next)
}

// AddPartitions raises the topic's partition count. Only this node's
// broker writes the file, one change at a time: version is not checked.
func (m *LocalMetadata) AddPartitions(name string, _ int32, added [][]int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.mu.file
	next.Topics = slices.Clone(next.Topics)
	i := slices.IndexFunc(next.Topics, func(lt localTopic) bool { return lt.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: add partitions to %s: no such topic", ErrTopicChanged, name)
	}
	next.Topics[i].Partitions += int32(len(added))
	return m.saveLocked(next)
}

func (m *LocalMetadata) RemoveTopic(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.mu.file
	next.Topics = slices.DeleteFunc(slices.Clone(next.Topics), func(lt localTopic) bool { return lt.Name == name })
	return m.saveLocked(next)
}

// saveLocked replaces the file atomically (a crash leaves the old or the
// new one, never a mix), then adopts f. Expects mu.
func (m *LocalMetadata) saveLocked(f localFile) error {
	sort.Slice(f.Topics, func(i, j int) bool { return f.Topics[i].Name < f.Topics[j].Name })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := checkpoint.WriteFile(storage.OSFS{}, filepath.Join(m.dir, LocalMetadataFile), data); err != nil {
		return err
	}
	m.mu.file = f
	return nil
}
