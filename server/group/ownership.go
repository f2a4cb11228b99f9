package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// A group is served by the broker leading its __consumer_offsets partition
// (Kafka's GroupCoordinator): when this broker starts leading a partition it
// reads the partition's log and serves its groups once that is done
// (COORDINATOR_LOAD_IN_PROGRESS meanwhile); when it stops leading, it drops
// those groups and answers NOT_COORDINATOR, so clients look the coordinator
// up again. A single node leads every partition from the start.

var (
	errCoordinatorLoadInProgress = kerr.CoordinatorLoadInProgress.Code
	errNotCoordinator            = kerr.NotCoordinator.Code
)

// ErrNotCoordinator: the group is coordinated by another broker (or, while
// its partition has no leader, by none). The message names the coordinator.
var ErrNotCoordinator = errors.New("not the group's coordinator")

// loadedPartition is what a load of a __consumer_offsets partition read,
// and what installing it counted.
type loadedPartition struct {
	table     map[string]map[topicPartition]offsetEntry
	instances map[instanceKey]instanceDescriptor
	pending   loadedTxn
	// atStart: loaded before New returns, which logs the totals.
	atStart         bool
	groups, offsets int
}

// newOwnership follows this broker's leadership of __consumer_offsets
// (package ownership: load on a goroutine, serve once installed, drop on
// losing it).
func (c *Coordinator) newOwnership() *ownership.Table[*loadedPartition] {
	return ownership.New(ownership.Hooks[*loadedPartition]{
		Load: func(p, _ int32) (*loadedPartition, error) {
			l := &loadedPartition{table: map[string]map[topicPartition]offsetEntry{}, instances: map[instanceKey]instanceDescriptor{}}
			pending, err := c.loadPartition(p, l.table, l.instances)
			l.pending = pending
			return l, err
		},
		Install: c.installLoaded,
		Drop: func(p int32) {
			n := c.unloadPartition(p)
			c.dropInstances(p)
			c.logger.Info("group coordinator resigned a partition", "partition", p, "groups", n)
		},
		LoadFailed: func(p int32, attempt int, err error) {
			c.logger.Warn("loading committed offsets failed", "partition", p, "attempt", attempt, "err", err)
		},
	}, c.closing, &c.wg)
}

// onLeadership follows this broker's leadership of __consumer_offsets. A
// new epoch while still leading (an ISR change by the controller) leaves
// the groups loaded as they are.
func (c *Coordinator) onLeadership(ch server.LeadershipChange) {
	c.own.Leadership(ch.Partition, ch.Leading, ch.LeaderEpoch)
}

// installLoaded makes a loaded partition's groups served (the Table's lock
// held); its consumer instances are restored once the partition serves.
func (c *Coordinator) installLoaded(p int32, o ownership.Owned, l *loadedPartition, took time.Duration) func() {
	l.groups, l.offsets = c.install(p, l.table)
	producers := c.installTxn(l.pending)
	if l.atStart {
		return nil
	}
	return func() {
		restored := c.restoreInstances(l.instances)
		c.logger.Info("group coordinator serves a partition", "partition", p, "leader_epoch", o.LeaderEpoch,
			"groups", l.groups, "offsets", l.offsets, "pending_transactional_commits", producers, "consumer_instances", restored, "took", took)
	}
}

// install makes the loaded offsets the groups' committed offsets. Callers
// hold own.
func (c *Coordinator) install(p int32, table map[string]map[topicPartition]offsetEntry) (groups, offsets int) {
	for name, offs := range table {
		if len(offs) == 0 {
			continue
		}
		g := c.lockGroup(name, true)
		g.offsets = offs
		g.mu.Unlock()
		groups++
		offsets += len(offs)
	}
	return groups, offsets
}

// unloadPartition drops the groups whose offsets partition is p: their
// waiting joins and syncs end, and every request for them is answered
// NOT_COORDINATOR from now on.
func (c *Coordinator) unloadPartition(p int32) int {
	n := 0
	for _, g := range c.groupList() {
		if c.offsetsPartition(g.name) != p {
			continue
		}
		g.mu.Lock()
		g.state = stateDead
		g.notify()
		c.mu.Lock()
		if c.mu.groups[g.name] == g {
			delete(c.mu.groups, g.name)
		}
		c.mu.Unlock()
		g.mu.Unlock()
		n++
	}
	return n
}

// serves is the gate every group request passes (Kafka's
// validateGroupStatus): the coordinator is open, and this broker leads the
// group's partition and has loaded it. An empty name passes: callers
// answer INVALID_GROUP_ID themselves.
func (c *Coordinator) serves(name string) int16 {
	if c.closed() {
		return errCoordinatorNotAvailable
	}
	if name == "" {
		return errNone
	}
	n := c.offsetsPartitionCount()
	if n < 1 {
		return errCoordinatorNotAvailable
	}
	op, ok := c.own.Get(OffsetsPartition(name, n))
	switch {
	case !ok:
		return errNotCoordinator
	case op.State == ownership.Loading:
		return errCoordinatorLoadInProgress
	}
	return errNone
}

// servesErr is serves for the HTTP consumer API: an error naming the
// coordinator when it is another broker.
func (c *Coordinator) servesErr(name string) error {
	switch c.serves(name) {
	case errNone:
		return nil
	case errCoordinatorNotAvailable:
		if c.closed() {
			return ErrClosed
		}
	}
	co, err := c.coordinatorOf(name)
	if err != nil {
		return fmt.Errorf("%w: group %q: %v", ErrNotCoordinator, name, err)
	}
	if co.ID == c.broker.BrokerID() {
		return fmt.Errorf("%w: group %q: this broker is loading its committed offsets", ErrNotCoordinator, name)
	}
	return fmt.Errorf("%w: group %q is coordinated by broker %d at %s", ErrNotCoordinator, name, co.ID,
		net.JoinHostPort(co.Host, strconv.Itoa(int(co.Port))))
}

// coordinator is the broker that serves a group, as FindCoordinator
// answers it.
type coordinator struct {
	ID   int32
	Host string
	Port int32
}

// errNoCoordinator: the group's partition has no leader, or the cluster
// has no __consumer_offsets yet.
var errNoCoordinator = errors.New("no coordinator is available")

// coordinatorOf finds a group's coordinator: this node on a single node,
// else the leader of the group's partition in the controller's view.
func (c *Coordinator) coordinatorOf(name string) (coordinator, error) {
	if !c.clustered() {
		host, port, err := c.advertised()
		if err != nil {
			return coordinator{}, err
		}
		return coordinator{ID: c.broker.BrokerID(), Host: host, Port: port}, nil
	}
	n := c.offsetsPartitionCount()
	if n < 1 {
		if err := c.createOffsetsTopic(); err != nil {
			return coordinator{}, err
		}
		return coordinator{}, fmt.Errorf("%w: %s is being created", errNoCoordinator, OffsetsTopic)
	}
	p := OffsetsPartition(name, n)
	view, _ := c.broker.Cluster()
	pv, ok := view.Partition(OffsetsTopic, p)
	if !ok || pv.Leader < 0 {
		return coordinator{}, fmt.Errorf("%w: %s-%d has no leader", errNoCoordinator, OffsetsTopic, p)
	}
	for _, b := range view.Brokers {
		if b.ID == pv.Leader {
			return coordinator{ID: b.ID, Host: b.Host, Port: b.Port}, nil
		}
	}
	return coordinator{}, fmt.Errorf("%w: %s-%d is led by broker %d, which is not live", errNoCoordinator, OffsetsTopic, p, pv.Leader)
}

// clustered: this broker is one of a cluster's, whose partitions take
// their roles from the controller.
func (c *Coordinator) clustered() bool { return c.broker.Config().AwaitRoles }

// offsetsPartitionCount is the partition count of __consumer_offsets, from
// this broker's table or, when it holds none of the topic, the
// controller's view; 0 when the topic does not exist.
func (c *Coordinator) offsetsPartitionCount() int32 {
	if n, err := c.broker.PartitionCount(OffsetsTopic); err == nil {
		return n
	}
	view, ok := c.broker.Cluster()
	if !ok {
		return 0
	}
	return view.PartitionCount(OffsetsTopic)
}

// createOffsetsTopic creates __consumer_offsets with
// offsets.topic.replication.factor replicas, as Kafka does on the first
// FindCoordinator: with fewer live brokers it fails and the client asks
// again.
func (c *Coordinator) createOffsetsTopic() error {
	rf := c.cfg.OffsetsTopicReplicationFactor
	if !c.clustered() {
		rf = 1 // one broker, one replica
	}
	err := c.broker.CreateTopic(server.TopicSpec{
		Name:              OffsetsTopic,
		Partitions:        c.cfg.OffsetsTopicPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{server.CfgCleanupPolicy: "compact",
			server.CfgSegmentBytes: strconv.Itoa(int(c.cfg.OffsetsTopicSegmentBytes))},
	})
	if err != nil && !errors.Is(err, server.ErrTopicExists) {
		return fmt.Errorf("create %s (offsets.topic.replication.factor %d): %w", OffsetsTopic, rf, err)
	}
	return nil
}

// loadPartition reads partition p of __consumer_offsets from its log start
// to its log end into table: the last record per key wins, a tombstone
// deletes, a transactional batch's records wait for their producer's
// marker (what is still undecided is returned). It reads past the high
// watermark: a new leader's log holds every commit the old one
// acknowledged, some not yet below its high watermark.
func (c *Coordinator) loadPartition(p int32, table map[string]map[topicPartition]offsetEntry, instances map[instanceKey]instanceDescriptor) (loadedTxn, error) {
	part, err := c.broker.Partition(OffsetsTopic, p)
	if err != nil {
		return nil, err
	}
	next, end := part.LogStartOffset(), part.LogEndOffset()
	maxDecompressed := c.broker.Config().MaxDecompressedBytes
	var replay txnReplay
	var buf []byte
	for next < end {
		data, err := c.broker.ReadBatches(OffsetsTopic, p, next, end, 1<<20, buf[:0])
		if err != nil {
			return nil, fmt.Errorf("load %s-%d at %d: %w", OffsetsTopic, p, next, err)
		}
		if len(data) == 0 {
			break
		}
		buf = data
		from := next
		for len(data) > 0 {
			batch, rest, err := recordbatch.Next(data)
			if err != nil {
				return nil, fmt.Errorf("load %s-%d at %d: %w", OffsetsTopic, p, next, err)
			}
			if batch == nil {
				break // a truncated last batch: read again from it
			}
			data = rest
			h := recordbatch.ReadHeader(batch)
			if h.LastOffset() < next {
				continue
			}
			done, err := replay.batch(h, batch, next, maxDecompressed, table)
			if err == nil && !done {
				err = records.Decode(batch, next, maxDecompressed, func(r records.Record) bool {
					applyOffsetRecord(table, r)
					applyInstanceRecord(instances, r)
					return true
				})
			}
			if err != nil {
				return nil, fmt.Errorf("load %s-%d at %d: %w", OffsetsTopic, p, h.BaseOffset, err)
			}
			next = h.LastOffset() + 1
		}
		if next == from {
			break
		}
	}
	return replay.pending(), nil
}

// loadLedPartitions loads, before New returns, the partitions this broker
// leads already: on a single node, all of them.
func (c *Coordinator) loadLedPartitions(ctx context.Context) (groups, offsets int, err error) {
	n := c.offsetsPartitionCount()
	for p := int32(0); p < n; p++ {
		part, err := c.broker.Partition(OffsetsTopic, p)
		if err != nil || part.Leader() != c.broker.BrokerID() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return groups, offsets, err
		}
		var l *loadedPartition
		load := func(p, _ int32) (*loadedPartition, error) {
			l = &loadedPartition{table: map[string]map[topicPartition]offsetEntry{}, atStart: true}
			// A single node keeps no instances (persistInstance): none to read.
			pending, err := c.loadPartition(p, l.table, map[instanceKey]instanceDescriptor{})
			l.pending = pending
			return l, err
		}
		if err := c.own.LoadLed(p, part.LeaderEpoch(), load); err != nil {
			return groups, offsets, err
		}
		if l != nil {
			groups, offsets = groups+l.groups, offsets+l.offsets
		}
	}
	return groups, offsets, nil
}

// Locate says which broker serves a group's requests: here (this broker
// coordinates it, or is loading it, or nobody can be named: the local
// answer explains), or another broker, whose requests a gateway hands on.
func (c *Coordinator) Locate(name string) (broker int32, here bool) {
	if name == "" || c.serves(name) == errNone {
		return c.broker.BrokerID(), true
	}
	co, err := c.coordinatorOf(name)
	if err != nil || co.ID == c.broker.BrokerID() {
		return c.broker.BrokerID(), true
	}
	return co.ID, false
}

// Serves reports whether this broker serves a group's requests now: nil,
// or ErrNotCoordinator naming the coordinator (ErrClosed when closing).
func (c *Coordinator) Serves(name string) error { return c.servesErr(name) }
