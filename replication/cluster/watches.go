package cluster

import (
	"errors"
	"maps"
	"slices"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// uncleanKey is the topic config that allows out-of-ISR leaders.
const uncleanKey = "unclean.leader.election.enable"

// readSnapshot reads what a new controller starts from, retrying until
// ZooKeeper answers; false when ctx ended first. Each topic read gets its
// own watch, so later partition additions are seen.
func (t *term) readSnapshot() (controller.Snapshot, bool) {
	backoff := t.c.cfg.RetryBackoff
	for {
		snap, err := t.trySnapshot()
		if err == nil {
			return snap, true
		}
		t.log.Warn("reading the cluster snapshot; retrying", "err", err)
		if errors.Is(err, zookeeper.ErrClosed) || !t.sleep(backoff) {
			return controller.Snapshot{}, false
		}
		backoff = min(2*backoff, t.c.cfg.MaxRetryBackoff)
	}
}

func (t *term) trySnapshot() (controller.Snapshot, error) {
	zk := t.c.cfg.ZK
	bs, err := zk.Brokers()
	if err != nil {
		return controller.Snapshot{}, err
	}
	names, err := zk.Topics()
	if err != nil {
		return controller.Snapshot{}, err
	}
	snap := controller.Snapshot{Brokers: toBrokers(bs), States: map[controller.TopicPartition]controller.LeaderAndIsr{}}
	for _, name := range names {
		topic, err := t.readTopic(name)
		if errors.Is(err, zookeeper.ErrNotFound) {
			continue // deleted since the list
		}
		if err != nil {
			return controller.Snapshot{}, err
		}
		states, err := zk.PartitionStates(name)
		if err != nil && !errors.Is(err, zookeeper.ErrNotFound) {
			return controller.Snapshot{}, err
		}
		for p, st := range states {
			snap.States[controller.TopicPartition{Topic: name, Partition: p}] = fromZK(st)
		}
		snap.Topics = append(snap.Topics, topic)
	}
	if snap.Deleting, err = zk.TopicsMarkedForDeletion(); err != nil {
		return controller.Snapshot{}, err
	}
	rs, err := zk.Reassignments()
	if err != nil {
		return controller.Snapshot{}, err
	}
	snap.Reassignments = fromReassignments(rs)
	for _, topic := range snap.Topics {
		t.watchTopic(topic.Name, true, slices.Collect(maps.Keys(topic.Partitions)))
	}
	return snap, nil
}

// readTopic reads a topic's assignment and its unclean election setting.
func (t *term) readTopic(name string) (controller.Topic, error) {
	ta, err := t.c.cfg.ZK.Topic(name)
	if err != nil {
		return controller.Topic{}, err
	}
	return t.toTopic(ta)
}

func (t *term) toTopic(ta zookeeper.TopicAssignment) (controller.Topic, error) {
	configs, err := t.c.cfg.ZK.TopicConfig(ta.Name)
	if err != nil && !errors.Is(err, zookeeper.ErrNotFound) {
		return controller.Topic{}, err
	}
	return controller.Topic{Name: ta.Name, Partitions: toAssignments(ta, nil), UncleanLeaderElection: configs[uncleanKey] == "true"}, nil
}

// followTopics starts a watch for each new topic name and stops those of
// topics gone (deletion itself is the next issue's).
func (t *term) followTopics(names []string) {
	for _, name := range names {
		if _, ok := t.topics[name]; !ok {
			t.watchTopic(name, false, nil)
		}
	}
	for name, tw := range t.topics {
		if !slices.Contains(names, name) {
			tw.w.Stop()
			delete(t.topics, name)
		}
	}
}

func (t *term) watchTopic(name string, created bool, parts []int32) {
	if _, ok := t.topics[name]; ok {
		return
	}
	w, err := t.c.cfg.ZK.WatchTopic(name)
	if err != nil {
		t.log.Warn("cannot watch a topic", "topic", name, "err", err)
		return
	}
	tw := &topicWatch{w: w, created: created, parts: map[int32]bool{}}
	for _, p := range parts {
		tw.parts[p] = true
	}
	t.topics[name] = tw
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for snap := range w.C {
			select {
			case t.topicEvents <- topicChange{name: name, snap: snap}:
			case <-t.quit:
				return
			}
		}
	}()
}

// topicChanged turns a topic znode's new content into TopicCreated (its
// first sight) or PartitionsAdded (partitions not seen before).
func (t *term) topicChanged(tc topicChange) controller.Event {
	tw, ok := t.topics[tc.name]
	if !ok || !tc.snap.Present {
		return nil
	}
	if !tw.created {
		topic, err := t.toTopic(tc.snap.Assignment)
		if err != nil {
			t.log.Warn("reading a new topic's configs; assuming the defaults", "topic", tc.name, "err", err)
			topic = controller.Topic{Name: tc.name, Partitions: toAssignments(tc.snap.Assignment, nil)}
		}
		tw.created = true
		for p := range topic.Partitions {
			tw.parts[p] = true
		}
		return controller.TopicCreated{Topic: topic}
	}
	added := toAssignments(tc.snap.Assignment, tw.parts)
	if len(added) == 0 {
		return nil
	}
	for p := range added {
		tw.parts[p] = true
	}
	return controller.PartitionsAdded{Topic: tc.name, Partitions: added}
}

// readISRChanges reads the pending notifications and the states they
// name, then deletes them (fenced: a deposed controller deletes nothing).
// A failover re-reads every state, so a crash between the read and the
// controller acting loses nothing.
func (t *term) readISRChanges() controller.Event {
	zk := t.c.cfg.ZK
	changes, err := zk.ISRChanges()
	if err != nil {
		t.log.Warn("reading ISR change notifications", "err", err)
		return nil
	}
	if len(changes) == 0 {
		return nil
	}
	states := map[controller.TopicPartition]controller.LeaderAndIsr{}
	var names []string
	for _, ch := range changes {
		names = append(names, ch.Name)
		for _, tp := range ch.Partitions {
			ctp := controller.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
			if _, done := states[ctp]; done {
				continue
			}
			st, found, ok := t.readState(ctp)
			if !ok {
				return nil
			}
			if found {
				states[ctp] = st
			}
		}
	}
	if err := zk.DeleteISRChanges(names, t.el.EpochVersion); errors.Is(err, zookeeper.ErrControllerMoved) {
		return controller.Resigned{}
	} else if err != nil {
		t.log.Warn("deleting ISR change notifications", "err", err)
	}
	return controller.IsrChangeNotified{States: states}
}

// toAssignments converts a topic's assignment, leaving out the partitions
// in skip.
func toAssignments(ta zookeeper.TopicAssignment, skip map[int32]bool) map[int32]controller.Assignment {
	out := map[int32]controller.Assignment{}
	for p, replicas := range ta.Partitions {
		if skip[p] {
			continue
		}
		out[p] = controller.Assignment{Replicas: replicas, Adding: ta.Adding[p], Removing: ta.Removing[p]}
	}
	return out
}

// toBrokers converts registrations. The broker epoch is the registration
// timestamp: zookeeper does not expose the znode's czxid (Kafka's broker
// epoch), and a broker that restarts registers with a new timestamp.
func toBrokers(bs []zookeeper.BrokerInfo) []controller.Broker {
	out := make([]controller.Broker, len(bs))
	for i, b := range bs {
		out[i] = controller.Broker{ID: b.ID, Rack: b.Rack, Epoch: b.Timestamp, Endpoints: b.Endpoints}
	}
	return out
}

func fromZK(st zookeeper.PartitionState) controller.LeaderAndIsr {
	return controller.LeaderAndIsr{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR,
		ControllerEpoch: st.ControllerEpoch, ZkVersion: st.Version}
}

// configChanged queues TopicConfigChanged for the topics named by config
// change notifications newer than the last handled; the first snapshot
// of names only marks where to start.
func (t *term) configChanged(names []string) {
	zk := t.c.cfg.ZK
	if t.configCursor == nil {
		t.configCursor = zk.ConfigChangesAfter(names)
		return
	}
	topics, err := t.configCursor.Topics(names)
	if err != nil {
		t.log.Warn("reading config change notifications", "err", err)
	}
	for _, name := range topics {
		configs, err := zk.TopicConfig(name)
		if errors.Is(err, zookeeper.ErrNotFound) {
			continue // deleted
		}
		if err != nil {
			t.log.Warn("reading a changed topic config", "topic", name, "err", err)
			continue
		}
		t.pending = append(t.pending, controller.TopicConfigChanged{Topic: name, UncleanLeaderElection: configs[uncleanKey] == "true"})
	}
}

func fromReassignments(rs []zookeeper.Reassignment) map[controller.TopicPartition][]int32 {
	out := map[controller.TopicPartition][]int32{}
	for _, r := range rs {
		out[controller.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Replicas
	}
	return out
}

// writeTopicAssignment writes a reassignment step's topic znode, retrying
// while ZooKeeper does not answer; a fenced controller resigns.
func (t *term) writeTopicAssignment(a controller.WriteTopicAssignment) controller.Event {
	ta := zookeeper.TopicAssignment{Name: a.Topic, Partitions: map[int32][]int32{},
		Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}
	for p, as := range a.Partitions {
		ta.Partitions[p] = as.Replicas
		if len(as.Adding) > 0 {
			ta.Adding[p] = as.Adding
		}
		if len(as.Removing) > 0 {
			ta.Removing[p] = as.Removing
		}
	}
	if !t.retryZK("writing a topic's assignment", a.Topic, func() error { return t.c.cfg.ZK.WriteTopicAssignment(ta, a.ControllerEpochZkVersion) }) {
		return controller.Resigned{}
	}
	return controller.AssignmentWritten{ControllerEpoch: a.ControllerEpoch, Topic: a.Topic}
}

// writeZKReassignments leaves in /admin/reassign_partitions the
// partitions still moving (deleting it when none is).
func (t *term) writeZKReassignments(a controller.WriteZKReassignments) controller.Event {
	zk := t.c.cfg.ZK
	write := func() error { return zk.DeleteReassignments(a.ControllerEpochZkVersion) }
	if len(a.Remaining) > 0 {
		var rs []zookeeper.Reassignment
		for tp, target := range a.Remaining {
			rs = append(rs, zookeeper.Reassignment{TopicPartition: zookeeper.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}, Replicas: target})
		}
		write = func() error {
			err := zk.SetReassignments(rs, a.ControllerEpochZkVersion)
			if errors.Is(err, zookeeper.ErrNotFound) {
				return nil // deleted by an operator meanwhile: nothing left to track there
			}
			return err
		}
	}
	if !t.retryZK("updating /admin/reassign_partitions", "", write) {
		return controller.Resigned{}
	}
	return nil
}

// retryZK runs a controller write until it applies; false when this
// controller was fenced or the term ended.
func (t *term) retryZK(what, topic string, write func() error) bool {
	backoff := t.c.cfg.RetryBackoff
	for {
		err := write()
		if err == nil {
			return true
		}
		if errors.Is(err, zookeeper.ErrControllerMoved) || errors.Is(err, zookeeper.ErrClosed) {
			t.log.Warn(what+": no longer the controller", "topic", topic, "err", err)
			return false
		}
		t.log.Warn(what+"; retrying", "topic", topic, "err", err)
		if !t.sleep(backoff) {
			return false
		}
		backoff = min(2*backoff, t.c.cfg.MaxRetryBackoff)
	}
}
