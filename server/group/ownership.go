package group

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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
	replay    txnReplay
	// next is the offset after the last batch read; the install reads on
	// from there.
	next int64
	// atStart: loaded before New returns, which logs the totals.
	atStart         bool
	groups, offsets int
}

func newLoadedPartition(atStart bool) *loadedPartition {
	return &loadedPartition{table: map[string]map[topicPartition]offsetEntry{},
		instances: map[instanceKey]instanceDescriptor{}, next: -1, atStart: atStart}
}

// newOwnership follows this broker's leadership of __consumer_offsets
// (package ownership: load on a goroutine, serve once installed, drop on
// losing it).
func (c *Coordinator) newOwnership() *ownership.Table[*loadedPartition] {
	return ownership.New(ownership.Hooks[*loadedPartition]{
		Load: func(p, _ int32) (*loadedPartition, error) {
			l := newLoadedPartition(false)
			return l, c.readPartition(p, l)
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
	}, c.life)
}

// installLoaded makes a loaded partition's groups served (the Table's lock
// held); its consumer instances are restored once the partition serves.
//
// While the partition loaded, its groups' requests were refused, but the
// broker appended transaction markers (WriteTxnMarkers) and told them to
// groups not yet installed. So the install first reads what was appended
// since the load; a marker appended later is told to the installed groups
// (markersVsInstall). Without that read a commit whose marker landed in
// the gap stayed pending, and every stable OffsetFetch of its partition
// answered UNSTABLE_OFFSET_COMMIT for good. The read holds both locks, but
// the load returned just before (same goroutine): there is rarely anything
// to read, and then no read at all (ReadLogFrom stops at the log end).
// When that read fails nothing is installed: serving what the load read
// could leave a commit pending whose marker is in the part not read, so
// the partition stays loading and is read again from its start.
func (c *Coordinator) installLoaded(p int32, o ownership.Owned, l *loadedPartition, took time.Duration) (func(), error) {
	c.markersVsInstall.Lock()
	defer c.markersVsInstall.Unlock()
	readTail := c.readPartition
	if c.readTail != nil {
		readTail = c.readTail
	}
	if err := readTail(p, l); err != nil {
		return nil, fmt.Errorf("reading what was appended to partition %d while it loaded, from offset %d: %w", p, l.next, err)
	}
	l.groups, l.offsets = c.install(p, l.table)
	producers := c.installTxn(l.replay.pending())
	if l.atStart {
		return nil, nil
	}
	return func() {
		restored := c.restoreInstances(l.instances)
		c.logger.Info("group coordinator serves a partition", "partition", p, "leader_epoch", o.LeaderEpoch,
			"groups", l.groups, "offsets", l.offsets, "pending_transactional_commits", producers, "consumer_instances", restored, "took", took)
	}, nil
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
	gs := c.groupsOfPartition(p)
	for _, g := range gs {
		g.mu.Lock()
		c.removeLocked(g)
		g.mu.Unlock()
	}
	return len(gs)
}

// serves is the gate every group request passes (Kafka's
// validateGroupStatus): the coordinator is open, and this broker leads the
// group's partition, has loaded it and has not fenced itself
// (ownership.Topic.Fenced). An empty name passes: callers answer
// INVALID_GROUP_ID themselves.
func (c *Coordinator) serves(name string) int16 {
	if c.closed() {
		return errCoordinatorNotAvailable
	}
	if name == "" {
		return errNone
	}
	p, ok := c.offsets.Partition(name)
	if !ok {
		return errCoordinatorNotAvailable
	}
	op, ok := c.own.Get(p)
	switch {
	case !ok:
		return errNotCoordinator
	case op.State == ownership.Loading:
		return errCoordinatorLoadInProgress
	case c.offsets.Fenced(p) != nil:
		return errNotCoordinator
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
	if !c.offsets.Clustered() {
		host, port, err := c.advertised()
		if err != nil {
			return coordinator{}, err
		}
		return coordinator{ID: c.broker.BrokerID(), Host: host, Port: port}, nil
	}
	b, err := c.offsets.Coordinator(name)
	if err != nil {
		return coordinator{}, err
	}
	return coordinator{ID: b.ID, Host: b.Host, Port: b.Port}, nil
}

// readPartition reads partition p of __consumer_offsets from l.next (its
// log start at first) to its log end into l: the last record per key
// wins, a tombstone deletes, a transactional batch's records wait for
// their producer's marker (l.replay).
func (c *Coordinator) readPartition(p int32, l *loadedPartition) error {
	maxDecompressed := c.offsets.MaxDecompressed()
	next, err := c.offsets.ReadLogFrom(p, l.next, func(batch []byte, h recordbatch.Header, from int64) error {
		done, err := l.replay.batch(h, batch, from, maxDecompressed, l.table)
		if err != nil || done {
			return err
		}
		return records.Decode(batch, from, maxDecompressed, func(r records.Record) bool {
			applyOffsetRecord(l.table, r)
			applyInstanceRecord(l.instances, r)
			return true
		})
	})
	l.next = next
	return err
}

// loadLedPartitions loads, before New returns, the partitions this broker
// leads already: on a single node, all of them.
func (c *Coordinator) loadLedPartitions() (groups, offsets int, err error) {
	var loaded []*loadedPartition
	err = c.own.LoadLedPartitions(c.offsets, func(p, _ int32) (*loadedPartition, error) {
		// A single node keeps no instances (persistInstance): none read.
		l := newLoadedPartition(true)
		loaded = append(loaded, l)
		return l, c.readPartition(p, l)
	})
	for _, l := range loaded { // installing counted them
		groups, offsets = groups+l.groups, offsets+l.offsets
	}
	return groups, offsets, err
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
