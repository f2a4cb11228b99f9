package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// term is one controller epoch of this broker: from winning /controller
// to resigning. Its goroutine (the one running lead) alone touches ctl,
// send and topics; Kafka's ControllerEventThread.
type term struct {
	ctx  context.Context
	c    *Controller
	log  *slog.Logger
	el   zookeeper.Election
	ctl  *controller.Controller
	send *senders

	topics      map[string]*topicWatch
	topicEvents chan topicChange
	waiting     map[int32][]shutdownAsk
	// configCursor is the config change notifications handled; pending,
	// events read together (several topics' changes) not stepped yet.
	configCursor *zookeeper.ConfigChanges
	pending      []controller.Event
	// deleted carries brokers' answers to StopReplica with deletion from
	// the senders' goroutines.
	deleted chan controller.ReplicasDeleted
	// liveness carries the listener probes' BrokerFenced and
	// BrokerUnfenced from the senders' goroutines (liveness.go).
	liveness chan controller.Event
	// electionWaiters: ElectLeaders asks by the id their event carries.
	electionWaiters map[uint64]electionAsk
	reassignWaiters map[uint64]reassignAsk
	imbalance       <-chan time.Time
	quit            chan struct{}
	wg              sync.WaitGroup
}

// topicWatch follows one topic's assignment, forwarding it to the term.
type topicWatch struct {
	w       *zookeeper.Watch[zookeeper.TopicSnapshot]
	created bool // TopicCreated was stepped (or the topic was in the snapshot)
	parts   map[int32]bool
}

type topicChange struct {
	name string
	snap zookeeper.TopicSnapshot
}

// lead acts as controller for election el until it resigns: ctx ends,
// /controller is no longer this broker's, the session expires, or a
// fenced write finds a newer controller. The watches are set before the
// snapshot is read, as Kafka's onControllerFailover does, so nothing that
// changes after the read is missed.
func (c *Controller) lead(ctx context.Context, el zookeeper.Election, controllerWatch <-chan zookeeper.ControllerState, events <-chan zookeeper.SessionEvent) {
	t := &term{ctx: ctx, c: c, log: c.log.With("controller_epoch", el.Epoch), el: el, ctl: controller.New(),
		topics: map[string]*topicWatch{}, topicEvents: make(chan topicChange), waiting: map[int32][]shutdownAsk{},
		deleted: make(chan controller.ReplicasDeleted, 64), liveness: make(chan controller.Event), electionWaiters: map[uint64]electionAsk{},
		reassignWaiters: map[uint64]reassignAsk{}, quit: make(chan struct{})}
	if every := c.cfg.LeaderImbalanceCheckInterval; every > 0 {
		tick := time.NewTicker(every)
		defer tick.Stop()
		t.imbalance = tick.C
	}
	t.send = newSenders(&c.cfg, t.log, &c.metrics, t.reportLiveness, &c.seenUp)
	c.epoch.Store(el.Epoch)
	c.terms.Add(1)
	c.active.Store(true)
	t.log.Info("elected controller")
	defer t.end()

	in := inputs{ctx: ctx, controller: controllerWatch, session: events,
		brokers: c.cfg.ZK.WatchBrokers(), topics: c.cfg.ZK.WatchTopics(), isrChanges: c.cfg.ZK.WatchISRChanges(),
		configChanges: c.cfg.ZK.WatchConfigChanges(), deletions: c.cfg.ZK.WatchTopicDeletions(),
		reassignments: c.cfg.ZK.WatchReassignments()}
	defer in.stop()
	snap, ok := t.readSnapshot()
	if !ok {
		return
	}
	t.send.setBrokers(snap.Brokers)
	ok = t.step(controller.Elected{Epoch: el.Epoch, EpochZkVersion: el.EpochVersion, Snapshot: snap})
	for ok {
		var ev controller.Event
		if ev, ok = t.next(&in); ok && ev != nil {
			ok = t.step(ev)
		}
	}
}

// inputs are what a term's loop waits on.
type inputs struct {
	ctx        context.Context
	controller <-chan zookeeper.ControllerState
	session    <-chan zookeeper.SessionEvent
	brokers    *zookeeper.Watch[[]zookeeper.BrokerInfo]
	topics     *zookeeper.Watch[[]string]
	isrChanges *zookeeper.Watch[[]string]
	// configChanges starts before the snapshot is read: its first names
	// are changes the snapshot holds.
	configChanges *zookeeper.Watch[[]string]
	deletions     *zookeeper.Watch[[]string]
	reassignments *zookeeper.Watch[[]zookeeper.Reassignment]
}

func (in *inputs) stop() {
	in.brokers.Stop()
	in.topics.Stop()
	in.isrChanges.Stop()
	in.configChanges.Stop()
	in.deletions.Stop()
	in.reassignments.Stop()
}

// next waits for the next input and turns it into an event (nil: none to
// step); false when the term ends.
func (t *term) next(in *inputs) (controller.Event, bool) {
	if len(t.pending) > 0 {
		ev := t.pending[0]
		t.pending = t.pending[1:]
		return ev, true
	}
	select {
	case <-in.ctx.Done():
		if err := t.c.cfg.ZK.Resign(t.el); err != nil {
			t.log.Warn("giving up /controller", "err", err)
		}
		return nil, false
	case st, ok := <-in.controller:
		return nil, ok && !t.lostController(st)
	case se, ok := <-in.session:
		if !ok || se.State == zookeeper.Expired || se.State == zookeeper.NewSession {
			t.log.Warn("ZooKeeper session ended; resigning", "state", se.State)
			return nil, false
		}
		return nil, true
	case bs, ok := <-in.brokers.C:
		if !ok {
			return nil, false
		}
		live := toBrokers(bs)
		t.send.setBrokers(live) // first: the event's requests go to these brokers
		return controller.BrokersChanged{Live: live}, true
	case names, ok := <-in.topics.C:
		if ok {
			t.followTopics(names)
		}
		return nil, ok
	case tc := <-t.topicEvents:
		return t.topicChanged(tc), true
	case _, ok := <-in.isrChanges.C:
		if !ok {
			return nil, false
		}
		return t.readISRChanges(), true
	case rs, ok := <-in.reassignments.C:
		return controller.ReassignmentsRequested{FromZK: true, Partitions: fromReassignments(rs)}, ok
	case ask := <-t.c.reassigns:
		if ask.list != nil {
			ask.list <- t.ctl.Reassignments()
			return nil, true
		}
		id := t.c.electID.Add(1)
		t.reassignWaiters[id] = ask
		return controller.ReassignmentsRequested{ID: id, Partitions: ask.partitions}, true
	case names, ok := <-in.deletions.C:
		return controller.TopicDeletionsRequested{Topics: names}, ok
	case d := <-t.deleted:
		return d, true
	case ev := <-t.liveness:
		return ev, true
	case ask := <-t.c.elections:
		id := t.c.electID.Add(1)
		t.electionWaiters[id] = ask
		return controller.LeaderElectionRequested{ID: id, Type: ask.typ, Partitions: ask.partitions}, true
	case <-t.imbalance:
		return controller.LeaderImbalanceCheck{MaxImbalancePercent: t.c.cfg.MaxLeaderImbalance}, true
	case names, ok := <-in.configChanges.C:
		if ok {
			t.configChanged(names)
		}
		return nil, ok
	case ask := <-t.c.asks:
		t.waiting[ask.broker] = append(t.waiting[ask.broker], ask)
		return controller.ControlledShutdownRequested{Broker: ask.broker, BrokerEpoch: ask.brokerEpoch}, true
	}
}

// lostController confirms a watch's news by reading /controller: the
// watch may deliver the vacancy that let this broker win.
func (t *term) lostController(st zookeeper.ControllerState) bool {
	if st.Present && st.ID == t.c.cfg.BrokerID {
		return false
	}
	id, err := t.c.cfg.ZK.Controller()
	if err == nil && id == t.c.cfg.BrokerID {
		return false
	}
	if err != nil && !errors.Is(err, zookeeper.ErrNotFound) {
		return false // unreachable: the session events say whether it is lost
	}
	t.log.Info("/controller is no longer this broker's; resigning", "controller", id)
	return true
}

// reportLiveness hands a listener probe's finding to the loop, unless the
// probe's sender (quit) or the term stops first.
func (t *term) reportLiveness(ev controller.Event, quit <-chan struct{}) {
	select {
	case t.liveness <- ev:
	case <-quit:
	case <-t.quit:
	}
}

func (t *term) end() {
	if t.ctl.Active() {
		t.ctl.Step(controller.Resigned{})
	}
	close(t.quit)
	for _, tw := range t.topics {
		tw.w.Stop()
	}
	t.wg.Wait()
	t.send.stopAll()
	for _, ask := range t.reassignWaiters {
		ask.answer <- controller.AnswerReassignments{Err: controller.ErrNotController}
	}
	for _, ask := range t.electionWaiters {
		ask.answer <- controller.AnswerLeaderElection{Err: controller.ErrNotController}
	}
	for _, asks := range t.waiting {
		for _, a := range asks {
			a.answer <- controller.AnswerControlledShutdown{Broker: a.broker, Err: controller.ErrNotController}
		}
	}
	t.c.active.Store(false)
	t.log.Info("resigned as controller")
}

// step feeds ev and performs what it returns, feeding each outcome back
// in turn, until nothing is left; false once the controller resigned.
func (t *term) step(ev controller.Event) bool {
	pending := []controller.Event{ev}
	for len(pending) > 0 {
		ev, pending = pending[0], pending[1:]
		actions := t.ctl.Step(ev)
		for len(actions) > 0 {
			if n := leadingWrites(actions); n > 0 {
				pending = append(pending, t.writeStates(actions[:n])...)
				actions = actions[n:]
				continue
			}
			if out := t.perform(actions[0]); out != nil {
				pending = append(pending, out)
			}
			actions = actions[1:]
		}
		if !t.ctl.Active() {
			return false
		}
	}
	return true
}

// perform does one action and returns its outcome event, if it has one.
func (t *term) perform(a controller.Action) controller.Event {
	switch a := a.(type) {
	case controller.WritePartitionState:
		return t.writeState(a)
	case controller.ReadPartitionStates:
		return t.readStates(a)
	case controller.SendLeaderAndIsr:
		t.send.enqueue(a.Broker, &leaderAndIsr{a})
	case controller.SendUpdateMetadata:
		for _, b := range a.Brokers {
			t.send.enqueue(b, &updateMetadata{a})
		}
	case controller.SendStopReplica:
		req := &stopReplica{SendStopReplica: a}
		if a.Delete {
			req.answered = t.replicasDeleted
		}
		t.send.enqueue(a.Broker, req)
	case controller.DeleteTopicZnodes:
		t.deleteTopicZnodes(a)
	case controller.WriteTopicAssignment:
		return t.writeTopicAssignment(a)
	case controller.WriteZKReassignments:
		return t.writeZKReassignments(a)
	case controller.AnswerReassignments:
		if ask, ok := t.reassignWaiters[a.ID]; ok {
			ask.answer <- a
			delete(t.reassignWaiters, a.ID)
		}
	case controller.AnswerLeaderElection:
		if ask, ok := t.electionWaiters[a.ID]; ok {
			ask.answer <- a
			delete(t.electionWaiters, a.ID)
		}
	case controller.AnswerControlledShutdown:
		for _, ask := range t.waiting[a.Broker] {
			ask.answer <- a
		}
		delete(t.waiting, a.Broker)
	default:
		t.log.Error("unknown controller action", "action", a)
	}
	return nil
}

// leadingWrites counts the WritePartitionState actions at the start of
// actions.
func leadingWrites(actions []controller.Action) int {
	n := 0
	for n < len(actions) {
		if _, ok := actions[n].(controller.WritePartitionState); !ok {
			break
		}
		n++
	}
	return n
}

// writeStates performs a run of writes and returns their outcomes in the
// actions' order. They are independent (the controller has at most one
// write out per partition), so they go out together: the creations of one
// topic's state znodes as one CreatePartitionStates (a new topic's
// partitions, in as few multis as fit), the rest up to MaxConcurrentWrites
// at a time, pipelined on the session. Kafka batches them too
// (ZkClient.createTopicPartitionStatesRaw, updateLeaderAndIsr).
func (t *term) writeStates(run []controller.Action) []controller.Event {
	out := make([]controller.Event, len(run))
	creates := map[string][]int{}
	var jobs []func()
	for i, a := range run {
		w := a.(controller.WritePartitionState)
		if w.ExpectedZkVersion == controller.NoZkVersion {
			creates[w.Partition.Topic] = append(creates[w.Partition.Topic], i)
			continue
		}
		jobs = append(jobs, func() { out[i] = t.writeState(w) })
	}
	for _, idx := range creates {
		jobs = append(jobs, func() { t.createStates(run, idx, out) })
	}
	if len(jobs) == 1 {
		jobs[0]()
		return out
	}
	sem := make(chan struct{}, t.c.cfg.MaxConcurrentWrites)
	var wg sync.WaitGroup
	for _, job := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			job()
		}()
	}
	wg.Wait()
	return out
}

// createStates creates one topic's state znodes (run[i] for i in idx)
// together. When that fails other than by the fence, one of them exists
// already: each is then created alone, so each gets its own outcome.
func (t *term) createStates(run []controller.Action, idx []int, out []controller.Event) {
	if len(idx) == 1 {
		out[idx[0]] = t.writeState(run[idx[0]].(controller.WritePartitionState))
		return
	}
	first := run[idx[0]].(controller.WritePartitionState)
	states := make(map[int32]zookeeper.PartitionState, len(idx))
	for _, i := range idx {
		w := run[i].(controller.WritePartitionState)
		states[w.Partition.Partition] = toZK(w)
	}
	err := t.c.cfg.ZK.CreatePartitionStates(first.Partition.Topic, states, first.ControllerEpochZkVersion)
	if err != nil && !errors.Is(err, zookeeper.ErrControllerMoved) {
		for _, i := range idx {
			out[i] = t.writeState(run[i].(controller.WritePartitionState))
		}
		return
	}
	for _, i := range idx {
		w := run[i].(controller.WritePartitionState)
		out[i] = t.outcome(w, 0, err)
	}
}

// writeState is the fenced conditional write.
func (t *term) writeState(a controller.WritePartitionState) controller.Event {
	tp := a.Partition
	st := toZK(a)
	var version int32
	var err error
	if a.ExpectedZkVersion == controller.NoZkVersion {
		err = t.c.cfg.ZK.CreatePartitionStates(tp.Topic, map[int32]zookeeper.PartitionState{tp.Partition: st}, a.ControllerEpochZkVersion)
	} else {
		version, err = t.c.cfg.ZK.UpdatePartitionState(tp.Topic, tp.Partition, st, a.ControllerEpochZkVersion)
	}
	return t.outcome(a, version, err)
}

// outcome is a write's result for the controller. A connection loss is
// reported as a conflict: the controller re-reads, which is always safe.
func (t *term) outcome(a controller.WritePartitionState, version int32, err error) controller.Event {
	tp := a.Partition
	switch {
	case err == nil:
		t.c.stateWrites.Add(1)
		return controller.StateWritten{ControllerEpoch: a.ControllerEpoch, Partition: tp, ZkVersion: version}
	case errors.Is(err, zookeeper.ErrControllerMoved):
		t.log.Warn("a newer controller fenced this one's write; resigning", "partition", tp)
		return controller.Resigned{}
	default:
		t.log.Info("partition state write did not apply; re-reading", "partition", tp, "err", err)
		return controller.StateWriteConflict{ControllerEpoch: a.ControllerEpoch, Partition: tp}
	}
}

// toZK is the znode content a write asks for; Version is the one expected
// (0 for a creation, which CreatePartitionStates ignores).
func toZK(a controller.WritePartitionState) zookeeper.PartitionState {
	st := zookeeper.PartitionState{Leader: a.State.Leader, LeaderEpoch: a.State.LeaderEpoch, ISR: a.State.ISR,
		ControllerEpoch: a.State.ControllerEpoch, Version: a.ExpectedZkVersion}
	if a.ExpectedZkVersion == controller.NoZkVersion {
		st.Version = 0
	}
	return st
}

// readStates reads the state znodes, retrying one that ZooKeeper does not
// answer until it does or the term ends: the controller waits on it.
func (t *term) readStates(a controller.ReadPartitionStates) controller.Event {
	out := controller.PartitionStatesRead{ControllerEpoch: a.ControllerEpoch, States: map[controller.TopicPartition]controller.LeaderAndIsr{}}
	for _, tp := range a.Partitions {
		st, found, ok := t.readState(tp)
		if !ok {
			return nil
		}
		if found {
			out.States[tp] = st
		} else {
			out.Missing = append(out.Missing, tp)
		}
	}
	return out
}

// readState is one read with retries; ok false when the term ended first.
func (t *term) readState(tp controller.TopicPartition) (st controller.LeaderAndIsr, found, ok bool) {
	backoff := t.c.cfg.RetryBackoff
	for {
		zs, err := t.c.cfg.ZK.PartitionState(tp.Topic, tp.Partition)
		if err == nil {
			return fromZK(zs), true, true
		}
		if errors.Is(err, zookeeper.ErrNotFound) {
			return controller.LeaderAndIsr{}, false, true
		}
		if errors.Is(err, zookeeper.ErrClosed) {
			return controller.LeaderAndIsr{}, false, false
		}
		t.log.Warn("reading a partition state; retrying", "partition", tp, "err", err)
		if !t.sleep(backoff) {
			return controller.LeaderAndIsr{}, false, false
		}
		backoff = min(2*backoff, t.c.cfg.MaxRetryBackoff)
	}
}

func (t *term) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// replicasDeleted reports, from a sender's goroutine, the partitions a
// broker deleted (or did not hold); the term's loop steps them.
func (t *term) replicasDeleted(broker, controllerEpoch int32, resp *kmsg.StopReplicaResponse) {
	if resp.ErrorCode != 0 {
		return // refused whole (a stale epoch): the next controller asks again
	}
	d := controller.ReplicasDeleted{ControllerEpoch: controllerEpoch, Broker: broker}
	for _, p := range resp.Partitions {
		if p.ErrorCode == 0 {
			d.Partitions = append(d.Partitions, controller.TopicPartition{Topic: p.Topic, Partition: p.Partition})
		}
	}
	if len(d.Partitions) == 0 {
		return
	}
	select {
	case t.deleted <- d:
	case <-t.quit:
	}
}

// deleteTopicZnodes removes a deleted topic's znodes, retrying while
// ZooKeeper does not answer; a fenced controller resigns.
func (t *term) deleteTopicZnodes(a controller.DeleteTopicZnodes) {
	backoff := t.c.cfg.RetryBackoff
	for {
		err := t.c.cfg.ZK.DeleteTopicZnodes(a.Topic, a.ControllerEpochZkVersion)
		if err == nil {
			t.log.Info("topic deleted", "topic", a.Topic)
			return
		}
		if errors.Is(err, zookeeper.ErrControllerMoved) || errors.Is(err, zookeeper.ErrClosed) {
			t.log.Warn("topic znodes not deleted: no longer the controller", "topic", a.Topic, "err", err)
			return
		}
		t.log.Warn("deleting a topic's znodes; retrying", "topic", a.Topic, "err", err)
		if !t.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, t.c.cfg.MaxRetryBackoff)
	}
}
