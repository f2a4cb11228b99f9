package controller

import (
	"maps"
	"slices"
)

// batch gathers one Step's output so that each broker gets one request of
// each kind per step, as Kafka's ControllerBrokerRequestBatch does.
// Requests are built at flush from the committed states, so a partition
// touched twice in a step is sent once, as it ends.
type batch struct {
	c      *Controller
	writes []Action
	reads  []TopicPartition
	// leaderAndIsr: broker → partition → isNew.
	leaderAndIsrs map[int32]map[TopicPartition]bool
	stops         map[int32][]TopicPartition
	deletes       map[int32][]TopicPartition
	topicDeletes  []string
	// assignmentWrites: topics whose znode must be written;
	// zkReassignChanged: /admin/reassign_partitions must be rewritten.
	assignmentWrites  map[string]bool
	zkReassignChanged bool
	changed           map[TopicPartition]bool
	liveChanged       bool
	fullTo            map[int32]bool
	answers           []Action
}

func newBatch(c *Controller) *batch {
	return &batch{
		c:                c,
		leaderAndIsrs:    map[int32]map[TopicPartition]bool{},
		stops:            map[int32][]TopicPartition{},
		deletes:          map[int32][]TopicPartition{},
		assignmentWrites: map[string]bool{},
		changed:          map[TopicPartition]bool{},
		fullTo:           map[int32]bool{},
	}
}

func (b *batch) leaderAndIsr(broker int32, p *partition, isNew bool) {
	m := b.leaderAndIsrs[broker]
	if m == nil {
		m = map[TopicPartition]bool{}
		b.leaderAndIsrs[broker] = m
	}
	m[p.tp] = m[p.tp] || isNew
}

// leaderAndIsrToReplicas sends p's state to its replicas that are live and
// not shutting down.
func (b *batch) leaderAndIsrToReplicas(p *partition) {
	for _, r := range p.assignment.Replicas {
		if b.c.isLive(r) && !b.c.shuttingDown[r] {
			b.leaderAndIsr(r, p, false)
		}
	}
}

// announce spreads a committed state: LeaderAndIsr to the replicas that
// take a role (and to a shutting-down leader just demoted, so it stops
// taking writes), UpdateMetadata to every broker.
func (b *batch) announce(p *partition, isNew bool, prevLeader int32) {
	for _, r := range p.assignment.Replicas {
		if b.c.isLive(r) && (!b.c.shuttingDown[r] || r == prevLeader) {
			b.leaderAndIsr(r, p, isNew)
		}
	}
	b.changed[p.tp] = true
}

// stopReplica asks a broker to stop (not delete) its replica of tp;
// deletion comes with topic deletion.
func (b *batch) stopReplica(broker int32, tp TopicPartition) {
	b.stops[broker] = append(b.stops[broker], tp)
}

// deleteReplica asks a broker to stop and delete its replica of tp.
func (b *batch) deleteReplica(broker int32, tp TopicPartition) {
	b.deletes[broker] = append(b.deletes[broker], tp)
}

func (b *batch) assignmentWrite(topic string) { b.assignmentWrites[topic] = true }

func (b *batch) fullMetadataTo(ids ...int32) {
	for _, id := range ids {
		b.fullTo[id] = true
	}
}

func (b *batch) flush() []Action {
	c := b.c
	out := b.writes
	if len(b.reads) > 0 {
		slices.SortFunc(b.reads, compareTP)
		out = append(out, ReadPartitionStates{ControllerEpoch: c.epoch, Partitions: b.reads})
	}
	if c.active {
		for _, t := range b.topicDeletes {
			out = append(out, DeleteTopicZnodes{ControllerEpoch: c.epoch, ControllerEpochZkVersion: c.epochZkVersion, Topic: t})
		}
		for _, t := range slices.Sorted(maps.Keys(b.assignmentWrites)) {
			out = append(out, WriteTopicAssignment{ControllerEpoch: c.epoch, ControllerEpochZkVersion: c.epochZkVersion,
				Topic: t, Partitions: c.topicAssignments(t)})
		}
		if b.zkReassignChanged {
			remaining := map[TopicPartition][]int32{}
			for tp, target := range c.zkReassign {
				remaining[tp] = slices.Clone(target)
			}
			out = append(out, WriteZKReassignments{ControllerEpoch: c.epoch, ControllerEpochZkVersion: c.epochZkVersion, Remaining: remaining})
		}
	}
	if c.active {
		// Kafka's order (ControllerBrokerRequestBatch): a broker learns the
		// new metadata before it stops a replica, so a deleted topic leaves
		// every broker's metadata, and DeleteTopics is answered, before its
		// replicas go; clients whose fetch fails then find it already gone.
		out = b.appendLeaderAndIsrs(out)
		out = b.appendMetadata(out)
		out = b.appendStops(out)
	}
	return append(out, b.answers...)
}

func (b *batch) appendLeaderAndIsrs(out []Action) []Action {
	c := b.c
	for _, id := range slices.Sorted(maps.Keys(b.leaderAndIsrs)) {
		br, ok := c.live[id]
		if !ok {
			continue
		}
		req := SendLeaderAndIsr{ControllerEpoch: c.epoch, Broker: id, BrokerEpoch: br.Epoch}
		leaders := map[int32]bool{}
		for _, tp := range sortedTPs(b.leaderAndIsrs[id]) {
			p := c.partitions[tp]
			if p == nil || p.state == nil {
				continue
			}
			req.Partitions = append(req.Partitions, c.info(p, b.leaderAndIsrs[id][tp]))
			leaders[p.state.Leader] = true
		}
		for _, l := range slices.Sorted(maps.Keys(leaders)) {
			if lb, ok := c.live[l]; ok {
				req.Leaders = append(req.Leaders, lb)
			}
		}
		if len(req.Partitions) > 0 {
			out = append(out, req)
		}
	}
	return out
}

func (b *batch) appendStops(out []Action) []Action {
	c := b.c
	for _, stops := range []struct {
		byBroker map[int32][]TopicPartition
		delete   bool
	}{{b.stops, false}, {b.deletes, true}} {
		for _, id := range slices.Sorted(maps.Keys(stops.byBroker)) {
			if br, ok := c.live[id]; ok {
				tps := slices.Clone(stops.byBroker[id])
				slices.SortFunc(tps, compareTP)
				out = append(out, SendStopReplica{ControllerEpoch: c.epoch, Broker: id, BrokerEpoch: br.Epoch,
					Partitions: slices.Compact(tps), Delete: stops.delete})
			}
		}
	}
	return out
}

// appendMetadata sends brokers that need everything (new ones, or all
// after a failover) every partition, and the others what changed.
func (b *batch) appendMetadata(out []Action) []Action {
	c := b.c
	var full, rest []int32
	for _, id := range c.liveIDs() {
		if b.fullTo[id] {
			full = append(full, id)
		} else {
			rest = append(rest, id)
		}
	}
	if len(full) > 0 {
		out = append(out, SendUpdateMetadata{ControllerEpoch: c.epoch, Brokers: full,
			Partitions: c.infos(c.sortedPartitions(nil)), LiveBrokers: c.liveBrokers()})
	}
	if len(rest) > 0 && (len(b.changed) > 0 || b.liveChanged) {
		var ps []*partition
		for _, tp := range sortedTPs(b.changed) {
			ps = append(ps, c.partitions[tp])
		}
		out = append(out, SendUpdateMetadata{ControllerEpoch: c.epoch, Brokers: rest,
			Partitions: c.infos(ps), LiveBrokers: c.liveBrokers()})
	}
	return out
}

func (c *Controller) infos(ps []*partition) []PartitionInfo {
	out := make([]PartitionInfo, 0, len(ps))
	for _, p := range ps {
		if p != nil && p.state != nil {
			out = append(out, c.info(p, false))
		}
	}
	return out
}

func (c *Controller) info(p *partition, isNew bool) PartitionInfo {
	st := p.state.clone()
	if c.isDeleting(p.tp.Topic) {
		st.Leader = LeaderDuringDelete
	}
	return PartitionInfo{
		Partition: p.tp,
		State:     st,
		Replicas:  slices.Clone(p.assignment.Replicas),
		Adding:    slices.Clone(p.assignment.Adding),
		Removing:  slices.Clone(p.assignment.Removing),
		Offline:   filter(p.assignment.Replicas, func(id int32) bool { return !c.isLive(id) }),
		IsNew:     isNew,
	}
}
