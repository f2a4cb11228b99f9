package ownership

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Topic is an internal topic whose partitions coordinate keys (group
// names, transactional ids, idempotency keys): how it is created, how a
// key finds its partition, which broker leads that partition and so
// coordinates the key, and how a partition's log is read back. The group
// coordinator, the transaction coordinator and the idempotency keys store
// each describe theirs with one.
type Topic struct {
	Broker *server.Broker
	Name   string
	// Partitions, ReplicationFactor and SegmentBytes shape the topic when
	// a cluster creates it; a single node creates it with one replica and
	// SingleNodePartitions partitions (when not 0). It is always compacted:
	// the last record per key is the state.
	Partitions           int32
	SingleNodePartitions int32
	ReplicationFactor    int16
	SegmentBytes         int32
	// ReplicationSetting names where ReplicationFactor comes from
	// (offsets.topic.replication.factor, …), for the error of a failed
	// creation. Default "replication factor".
	ReplicationSetting string
	// MinISR is the topic's min.insync.replicas, at most its replication
	// factor; 0 leaves the broker's default.
	MinISR int
	// Configs are further topic configs.
	Configs map[string]string
	// PartitionOf is the partition of key among n (Kafka's Java hash for
	// groups and transactional ids).
	PartitionOf func(key string, n int32) int32
	// NoCoordinator is what a lookup that names no broker wraps (each
	// owner's own error).
	NoCoordinator error
}

// Clustered: this broker is one of a cluster's, whose partitions take
// their roles from the controller (a single node leads every partition
// from the start).
func (t *Topic) Clustered() bool { return t.Broker.Config().AwaitRoles }

// PartitionCount is the topic's partition count, from this broker's table
// or, when it holds none of the topic, the controller's view; 0 when the
// topic does not exist.
func (t *Topic) PartitionCount() int32 {
	if n, err := t.Broker.PartitionCount(t.Name); err == nil {
		return n
	}
	view, _ := t.Broker.Cluster()
	return view.PartitionCount(t.Name)
}

// Partition is key's partition as the topic is now; false when the topic
// does not exist.
func (t *Topic) Partition(key string) (int32, bool) {
	n := t.PartitionCount()
	if n < 1 {
		return 0, false
	}
	return t.PartitionOf(key, n), true
}

// Create creates the topic unless it exists, as Kafka does on the first
// FindCoordinator: with fewer live brokers than its replication factor it
// fails, and the client asks again.
func (t *Topic) Create() error {
	rf, partitions := t.ReplicationFactor, t.Partitions
	if !t.Clustered() {
		rf = 1 // one broker, one replica
		if t.SingleNodePartitions > 0 {
			partitions = t.SingleNodePartitions
		}
	}
	configs := map[string]string{server.CfgCleanupPolicy: "compact", server.CfgSegmentBytes: strconv.Itoa(int(t.SegmentBytes))}
	if t.MinISR > 0 {
		configs[server.CfgMinInsyncReplicas] = strconv.Itoa(min(t.MinISR, int(rf)))
	}
	for k, v := range t.Configs {
		configs[k] = v
	}
	err := t.Broker.CreateTopic(server.TopicSpec{Name: t.Name, Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	if err != nil && !errors.Is(err, server.ErrTopicExists) {
		setting := t.ReplicationSetting
		if setting == "" {
			setting = "replication factor"
		}
		return fmt.Errorf("create %s (%s %d): %w", t.Name, setting, rf, err)
	}
	return nil
}

// Leader is the broker leading key's partition in the controller's view,
// which coordinates key on a cluster; the first lookup of a cluster
// creates the topic. None while this broker is that leader but fenced
// itself (fencedHere). Its errors wrap NoCoordinator. A single node's
// owner answers for itself instead.
func (t *Topic) Leader(key string) (int32, error) {
	_, pv, err := t.leader(key)
	if err != nil {
		return -1, err
	}
	return pv.Leader, nil
}

// Coordinator is Leader's broker with its address, which must be live.
func (t *Topic) Coordinator(key string) (server.ClusterBroker, error) {
	p, pv, err := t.leader(key)
	if err != nil {
		return server.ClusterBroker{}, err
	}
	view, _ := t.Broker.Cluster()
	for _, b := range view.Brokers {
		if b.ID == pv.Leader {
			return b, nil
		}
	}
	return server.ClusterBroker{}, fmt.Errorf("%w: %s-%d is led by broker %d, which is not live", t.NoCoordinator, t.Name, p, pv.Leader)
}

func (t *Topic) leader(key string) (int32, server.PartitionView, error) {
	p, ok := t.Partition(key)
	if !ok {
		if err := t.Create(); err != nil {
			return 0, server.PartitionView{}, fmt.Errorf("%w: %w", t.NoCoordinator, err)
		}
		return 0, server.PartitionView{}, fmt.Errorf("%w: %s is being created", t.NoCoordinator, t.Name)
	}
	view, _ := t.Broker.Cluster()
	pv, ok := view.Partition(t.Name, p)
	if !ok || pv.Leader < 0 {
		return p, pv, fmt.Errorf("%w: %s-%d has no leader", t.NoCoordinator, t.Name, p)
	}
	if err := t.fencedHere(p, pv.Leader); err != nil {
		return p, pv, fmt.Errorf("%w: %w", t.NoCoordinator, err)
	}
	return p, pv, nil
}

// fencedHere is why this broker, named leader of partition p by its view,
// must not name itself coordinator: it leads p but fenced itself (cut
// from ZooKeeper for its session timeout and no follower fetched,
// replication/fence), so its view is stale and another broker leads p or
// will shortly, as its Metadata then says (no leader). Clients are told
// COORDINATOR_NOT_AVAILABLE and ask again, elsewhere; naming itself sent
// them to a coordinator whose writes are refused, and back again. nil
// otherwise: a leader still in contact, or one no clean election can
// replace (its ISR is itself alone), goes on coordinating.
func (t *Topic) fencedHere(p, leader int32) error {
	if leader != t.Broker.BrokerID() {
		return nil
	}
	return t.Fenced(p)
}

// Fenced is why this broker, leading partition p, must not coordinate
// p's keys now (fencedHere), or nil. The owners' gates ask it on every
// request, not only FindCoordinator: a member that found this broker
// before the fence goes on heartbeating here, and answered, it would not
// look for the coordinator elected in its place while that one's group
// rebalances without it.
func (t *Topic) Fenced(p int32) error {
	part, err := t.Broker.Partition(t.Name, p)
	if err != nil || part.Leader() != t.Broker.BrokerID() {
		return nil
	}
	return part.CheckLeading()
}

// ReadLog reads partition p from its log start to its log end, calling
// visit for each batch in order; from is the first offset not read yet
// (a batch may begin before it). It reads past the high watermark: a new
// leader's log holds everything the old one acknowledged, some of it not
// yet below its high watermark.
func (t *Topic) ReadLog(p int32, visit func(batch []byte, h recordbatch.Header, from int64) error) error {
	_, err := t.ReadLogFrom(p, -1, visit)
	return err
}

// ReadLogFrom is ReadLog from offset start (from the log start when start
// is below it); next is the offset after the last batch visited, where a
// later read of what was appended since goes on.
func (t *Topic) ReadLogFrom(p int32, start int64, visit func(batch []byte, h recordbatch.Header, from int64) error) (next int64, err error) {
	part, err := t.Broker.Partition(t.Name, p)
	if err != nil {
		return start, err
	}
	next, end := max(start, part.LogStartOffset()), part.LogEndOffset()
	var buf []byte
	for next < end {
		data, err := t.Broker.ReadBatches(t.Name, p, next, end, 1<<20, buf[:0])
		if err != nil {
			return next, fmt.Errorf("load %s-%d at %d: %w", t.Name, p, next, err)
		}
		if len(data) == 0 {
			break
		}
		buf = data
		from := next
		for len(data) > 0 {
			batch, rest, err := recordbatch.Next(data)
			if err != nil {
				return next, fmt.Errorf("load %s-%d at %d: %w", t.Name, p, next, err)
			}
			if batch == nil {
				break // a truncated last batch: read again from it
			}
			data = rest
			h := recordbatch.ReadHeader(batch)
			if h.LastOffset() < next {
				continue
			}
			if err := visit(batch, h, next); err != nil {
				return next, fmt.Errorf("load %s-%d at %d: %w", t.Name, p, h.BaseOffset, err)
			}
			next = h.LastOffset() + 1
		}
		if next == from {
			break
		}
	}
	return next, nil
}

// ReadRecords is ReadLog for a topic of plain batches: apply gets each
// record in order (control batches are skipped).
func (t *Topic) ReadRecords(p int32, apply func(records.Record)) error {
	maxDecompressed := t.MaxDecompressed()
	return t.ReadLog(p, func(batch []byte, _ recordbatch.Header, from int64) error {
		return records.Decode(batch, from, maxDecompressed, func(r records.Record) bool {
			apply(r)
			return true
		})
	})
}

// MaxDecompressed is the bound on a batch's decompressed size.
func (t *Topic) MaxDecompressed() int { return t.Broker.Config().MaxDecompressedBytes }

// FollowLeadership makes the Table follow this broker's leadership of
// topic's partitions, from now on.
func (tab *Table[T]) FollowLeadership(topic *Topic) {
	topic.Broker.WatchLeadership(topic.Name, func(ch server.LeadershipChange) {
		tab.Leadership(ch.Partition, ch.Leading, ch.LeaderEpoch)
	})
}

// LoadLedPartitions loads, before the caller goes on, each partition of
// topic this broker leads already (on a single node, all of them) with
// load, as LoadLed does; it stops at the first that fails.
func (tab *Table[T]) LoadLedPartitions(topic *Topic, load func(p, leaderEpoch int32) (T, error)) error {
	n := topic.PartitionCount()
	for p := int32(0); p < n; p++ {
		part, err := topic.Broker.Partition(topic.Name, p)
		if err != nil || part.Leader() != topic.Broker.BrokerID() {
			continue
		}
		if err := tab.LoadLed(p, part.LeaderEpoch(), load); err != nil {
			return err
		}
	}
	return nil
}

// JavaHashPartition is Kafka's choice of a key's partition among n for its
// coordinators: abs(key.hashCode) % n, with Java's String.hashCode over
// UTF-16 code units, so tools that compute it (Burrow, Cruise Control)
// agree with the broker.
func JavaHashPartition(key string, n int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return (h & 0x7fffffff) % n
}
