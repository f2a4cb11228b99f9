package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
)

// A transactional id is served by the broker leading its
// __transaction_state partition (Kafka's TransactionStateManager): when
// this broker starts leading a partition it reads the log, serves its ids
// once that is done (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and completes
// the transactions the log left prepared; when it stops leading, it drops
// them and answers NOT_COORDINATOR. The partition's leader epoch is the
// coordinator epoch its markers carry, so a partition leader can refuse
// the markers of a deposed coordinator.

var (
	errNotCoordinator     = kerr.NotCoordinator.Code
	errLoadInProgress     = kerr.CoordinatorLoadInProgress.Code
	errUnknownServerError = kerr.UnknownServerError.Code
)

// newOwnership follows this broker's leadership of __transaction_state
// (package ownership: load on a goroutine, serve once installed, drop on
// losing it).
func (c *Coordinator) newOwnership() *ownership.Table[map[string]Txn] {
	return ownership.New(ownership.Hooks[map[string]Txn]{
		Load:    func(p, _ int32) (map[string]Txn, error) { return c.loadPartition(p) },
		Install: c.install,
		Drop: func(p int32) {
			n := c.unloadPartition(p)
			c.logger.Info("transaction coordinator resigned a partition", "partition", p, "transactional_ids", n)
		},
		LoadFailed: func(p int32, attempt int, err error) {
			c.logger.Warn("loading transaction state failed", "partition", p, "attempt", attempt, "err", err)
		},
	}, c.life)
}

// install serves the ids of a loaded partition (the Table's lock held) and
// returns the start of the completions of the prepared ones, which runs
// once the partition serves.
func (c *Coordinator) install(p int32, o ownership.Owned, table map[string]Txn, took time.Duration) (func(), error) {
	var prepared []*entry
	c.mu.Lock()
	now := c.nowMs()
	for id, t := range table {
		t = t.Loaded(now)
		e := &entry{txn: t, written: true}
		if t.State == PrepareCommit || t.State == PrepareAbort || t.Pending != nil {
			// Markers to send: the prepared transaction's, and before
			// them those a transaction begun ahead of them left pending.
			e.completing = true
			prepared = append(prepared, e)
		}
		c.mu.txns[id] = e
	}
	c.mu.Unlock()
	return func() {
		for _, e := range prepared {
			c.startCompletion(e, e.txn, p, o.LeaderEpoch, o.Term)
		}
		c.logger.Info("transaction coordinator serves a partition", "partition", p, "leader_epoch", o.LeaderEpoch,
			"transactional_ids", len(table), "took", took)
	}, nil
}

// unloadPartition drops the ids of partition p.
func (c *Coordinator) unloadPartition(p int32) int {
	n := c.state.PartitionCount()
	if n < 1 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped := 0
	for id := range c.mu.txns {
		if StatePartition(id, n) == p {
			delete(c.mu.txns, id)
			dropped++
		}
	}
	return dropped
}

// loadPartition reads partition p of __transaction_state: the last value
// per id wins, a tombstone removes it.
func (c *Coordinator) loadPartition(p int32) (map[string]Txn, error) {
	table := map[string]Txn{}
	err := c.state.ReadRecords(p, func(r records.Record) { applyRecord(table, r.Key, r.Value) })
	if err != nil {
		return nil, err
	}
	return table, nil
}

// loadLedPartitions loads, before New returns, the partitions this broker
// leads already: on a single node, all of them.
func (c *Coordinator) loadLedPartitions() error {
	return c.own.LoadLedPartitions(c.state, func(p, _ int32) (map[string]Txn, error) { return c.loadPartition(p) })
}

// serves is the gate of every request for id: this broker leads the id's
// partition, has loaded it and has not fenced itself
// (ownership.Topic.Fenced). It returns the partition and its epoch.
func (c *Coordinator) serves(id string) (p, epoch int32, code int16) {
	if c.closed() {
		return 0, 0, errCoordinatorUnavailable
	}
	if !c.state.Clustered() {
		// A single node coordinates every id: the first request of a
		// transaction creates the state topic, whichever API it is.
		if err := c.ensureSingleNodeState(); err != nil {
			c.logger.Warn("create "+StateTopic, "err", err)
			return 0, 0, errCoordinatorUnavailable
		}
	}
	p, ok := c.state.Partition(id)
	if !ok {
		return 0, 0, errNotCoordinator
	}
	op, ok := c.own.Get(p)
	switch {
	case !ok:
		return p, 0, errNotCoordinator
	case op.State == ownership.Loading:
		return p, 0, errLoadInProgress
	case c.state.Fenced(p) != nil:
		return p, 0, errNotCoordinator
	}
	return p, op.LeaderEpoch, 0
}

// Coordinates reports whether this broker serves id now (0), or the code
// a request for it is answered with.
func (c *Coordinator) Coordinates(id string) int16 {
	_, _, code := c.serves(id)
	return code
}

// ensureSingleNodeState creates __transaction_state on a single node, if
// it is missing, and loads it (nothing to read but what a concurrent
// caller wrote). A topic there from before is loaded by the leadership
// watcher, which answers LOAD_IN_PROGRESS meanwhile.
func (c *Coordinator) ensureSingleNodeState() error {
	if c.singleNode.ready.Load() {
		return nil
	}
	c.singleNode.Lock()
	defer c.singleNode.Unlock()
	if c.singleNode.ready.Load() {
		return nil
	}
	if c.state.PartitionCount() < 1 {
		if err := c.state.Create(); err != nil {
			return err
		}
		if err := c.loadLedPartitions(); err != nil {
			return err
		}
	}
	c.singleNode.ready.Store(true)
	return nil
}

// errNoCoordinator: the id's partition has no leader yet.
var errNoCoordinator = errors.New("no transaction coordinator is available")

// CoordinatorOf finds id's coordinator: this node on a single node, else
// the leader of its partition in the controller's view (creating the topic
// on a cluster's first lookup).
func (c *Coordinator) CoordinatorOf(id string) (int32, error) {
	if c.closed() {
		return -1, fmt.Errorf("%w: shutting down", errNoCoordinator)
	}
	if !c.state.Clustered() {
		if err := c.ensureSingleNodeState(); err != nil {
			return -1, err
		}
		return c.broker.BrokerID(), nil
	}
	return c.state.Leader(id)
}

// writeCode maps a failed __transaction_state write to the code Kafka's
// TransactionStateManager answers.
func writeCode(err error) int16 {
	switch {
	case errors.Is(err, server.ErrNotLeader), errors.Is(err, server.ErrStorage):
		return errNotCoordinator
	case errors.Is(err, server.ErrUnknownTopic), errors.Is(err, server.ErrNotEnoughReplicas),
		errors.Is(err, server.ErrNotEnoughReplicasAfterAppend), errors.Is(err, server.ErrRequestTimedOut),
		errors.Is(err, server.ErrShuttingDown), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errCoordinatorUnavailable
	}
	return errUnknownServerError
}
