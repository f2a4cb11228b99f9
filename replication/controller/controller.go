package controller

import (
	"maps"
	"slices"
)

// Controller is the controller's view of the cluster and its decisions.
// It does no I/O and is not safe for concurrent use: one goroutine owns it
// and feeds it events in the order they happened.
type Controller struct {
	active bool
	// epoch and epochZkVersion fence this controller's writes and requests.
	epoch          int32
	epochZkVersion int32
	live           map[int32]Broker
	// fenced: registered brokers the driver found gone before their
	// session expired (BrokerFenced), by the registration they were
	// fenced in. They are not in live.
	fenced map[int32]Broker
	// shuttingDown: brokers in controlled shutdown (Kafka's
	// shuttingDownBrokerIds). They are live but may not lead or join an ISR.
	shuttingDown map[int32]bool
	// shutdownWaiters: brokers whose ControlledShutdown awaits an answer
	// until the writes on their partitions are done.
	shutdownWaiters map[int32]bool
	unclean         map[string]bool
	partitions      map[TopicPartition]*partition
	// deleting: topics being deleted → broker → its replicas not yet
	// confirmed deleted (deletion.go).
	deleting map[string]map[int32]map[TopicPartition]bool
	// elections: ElectLeaders requests whose writes are out (elections.go).
	elections map[uint64]*pendingElection
	// zkReassign is /admin/reassign_partitions as this controller keeps it:
	// the partitions listed there still moving. strays: replicas removed
	// from an assignment while their broker was dead, deleted when it
	// returns.
	zkReassign map[TopicPartition][]int32
	strays     map[int32]map[TopicPartition]bool
	// busy counts, per broker, its partitions with a write or read out,
	// so a drain knows at once whether it can be answered.
	busy map[int32]int
}

type opKind int

const (
	idle    opKind = iota
	writing        // a WritePartitionState is out
	reading        // a ReadPartitionStates is out, after a conflict
)

type partition struct {
	tp         TopicPartition
	assignment Assignment
	// state is the last known content of the state znode; nil while the
	// partition is a NewPartition.
	state *LeaderAndIsr
	op    opKind
	// proposed is the state being written while op == writing; creating
	// says the write creates the znode.
	proposed   LeaderAndIsr
	creating   bool
	prevLeader int32
	// treatDead: brokers that restarted (a new broker epoch) and are
	// decided upon as dead once, so that what they led or followed is
	// re-elected as Kafka does (onBrokerFailure then onBrokerStartup).
	treatDead map[int32]bool
	// deadInWrite: the treatDead brokers the write out was decided with;
	// its commit settles them.
	deadInWrite []int32
	// reassign is the reassignment in progress (reassign.go); writeKind
	// says which of its steps the write out is.
	reassign  *reassignment
	writeKind writeKind
}

// New returns an inactive controller; it acts once it gets Elected.
func New() *Controller {
	c := &Controller{}
	c.reset()
	return c
}

func (c *Controller) reset() {
	c.active = false
	c.live = map[int32]Broker{}
	c.fenced = map[int32]Broker{}
	c.shuttingDown = map[int32]bool{}
	c.shutdownWaiters = map[int32]bool{}
	c.unclean = map[string]bool{}
	c.partitions = map[TopicPartition]*partition{}
	c.deleting = map[string]map[int32]map[TopicPartition]bool{}
	c.elections = map[uint64]*pendingElection{}
	c.zkReassign = map[TopicPartition][]int32{}
	c.strays = map[int32]map[TopicPartition]bool{}
	c.busy = map[int32]int{}
}

// setOp is the only place p.op changes, keeping busy in step.
func (c *Controller) setOp(p *partition, op opKind) {
	delta := 0
	switch {
	case p.op == idle && op != idle:
		delta = 1
	case p.op != idle && op == idle:
		delta = -1
	}
	p.op = op
	for _, r := range p.assignment.Replicas {
		c.busy[r] += delta
	}
}

// Step applies one event and returns what the driver must do, in order:
// ZooKeeper writes and reads first, then requests to brokers, then answers.
func (c *Controller) Step(ev Event) []Action {
	b := newBatch(c)
	switch e := ev.(type) {
	case Elected:
		c.onElected(e, b)
	case Resigned:
		c.onResigned(b)
	case BrokersChanged:
		c.onBrokersChanged(e, b)
	case BrokerFenced:
		c.onBrokerFenced(e, b)
	case BrokerUnfenced:
		c.onBrokerUnfenced(e, b)
	case TopicCreated:
		c.onTopicCreated(e, b)
	case PartitionsAdded:
		c.addPartitions(e.Topic, e.Partitions, b)
	case TopicConfigChanged:
		c.onTopicConfigChanged(e, b)
	case IsrChangeNotified:
		c.onIsrChange(e, b)
	case PartitionStatesRead:
		c.onStatesRead(e, b)
	case StateWritten:
		c.onWritten(e, b)
	case StateWriteConflict:
		c.onConflict(e, b)
	case ControlledShutdownRequested:
		c.onControlledShutdown(e, b)
	case TopicDeletionsRequested:
		c.onDeletionsRequested(e, b)
	case ReplicasDeleted:
		c.onReplicasDeleted(e, b)
	case LeaderElectionRequested:
		c.onElectionRequested(e, b)
	case LeaderImbalanceCheck:
		c.onImbalanceCheck(e, b)
	case ReassignmentsRequested:
		c.onReassignmentsRequested(e, b)
	case AssignmentWritten:
		c.onAssignmentWritten(e, b)
	}
	c.answerShutdowns(b)
	c.answerElections(b)
	return b.flush()
}

// onElected is Kafka's onControllerFailover: take the view from ZooKeeper,
// finish what the previous controller left (partitions without a state
// znode, leaders that died), and tell every broker the whole state.
func (c *Controller) onElected(e Elected, b *batch) {
	if e.Epoch <= c.epoch {
		return
	}
	c.abortShutdowns(b)
	c.abortElections(b)
	c.reset()
	c.active, c.epoch, c.epochZkVersion = true, e.Epoch, e.EpochZkVersion
	for _, br := range e.Snapshot.Brokers {
		c.live[br.ID] = br
	}
	for _, t := range e.Snapshot.Topics {
		c.unclean[t.Name] = t.UncleanLeaderElection
		for id, a := range t.Partitions {
			p := c.newPartition(TopicPartition{t.Name, id}, a)
			if st, ok := e.Snapshot.States[p.tp]; ok {
				st = st.clone()
				p.state = &st
			}
		}
	}
	// Deletions the previous controller left are resumed first: their
	// partitions are not elected for.
	deleting := slices.Clone(e.Snapshot.Deleting)
	slices.Sort(deleting)
	for _, t := range slices.Compact(deleting) {
		c.startDeletion(t, b)
	}
	c.resumeReassignments(e.Snapshot.Reassignments, b)
	for _, p := range c.sortedPartitions(nil) {
		c.decide(p, b)
		if p.op == idle && p.state != nil && !c.isDeleting(p.tp.Topic) {
			b.leaderAndIsrToReplicas(p)
		}
	}
	b.fullMetadataTo(c.liveIDs()...)
}

// onResigned is Kafka's onControllerResignation.
func (c *Controller) onResigned(b *batch) {
	c.abortShutdowns(b)
	c.abortElections(b)
	c.reset()
}

// abortShutdowns answers every waiting drain with NOT_CONTROLLER, so the
// brokers retry with the next controller (Kafka's preemptControlledShutdown).
func (c *Controller) abortShutdowns(b *batch) {
	for _, id := range slices.Sorted(maps.Keys(c.shutdownWaiters)) {
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: id, Err: ErrNotController})
	}
}

// abortShutdown ends the shutdown of a broker that left or restarted,
// answering its waiting request, if any, with err.
func (c *Controller) abortShutdown(id int32, err error, b *batch) {
	if c.shutdownWaiters[id] {
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: id, Err: err})
	}
	delete(c.shuttingDown, id)
	delete(c.shutdownWaiters, id)
}

// onBrokersChanged is Kafka's processBrokerChange: onBrokerFailure for
// brokers gone, onBrokerStartup for brokers new, both for brokers that
// came back with a new epoch.
func (c *Controller) onBrokersChanged(e BrokersChanged, b *batch) {
	if !c.active {
		return
	}
	next := make(map[int32]Broker, len(e.Live))
	for _, br := range e.Live {
		next[br.ID] = br
	}
	c.keepFenced(next)
	changed := map[int32]bool{}
	var started []int32
	for id, old := range c.live {
		br, ok := next[id]
		switch {
		case !ok:
			changed[id] = true
			c.abortShutdown(id, ErrBrokerNotAvailable, b)
		case br.Epoch != old.Epoch:
			changed[id] = true
			started = append(started, id)
			c.abortShutdown(id, ErrStaleBrokerEpoch, b)
			c.markRestarted(id)
		}
	}
	for id := range next {
		if _, ok := c.live[id]; !ok {
			changed[id] = true
			started = append(started, id)
		}
	}
	c.live = next
	// Every change reaches brokers by UpdateMetadata, even one of a member's
	// data alone (endpoints, rack: Kafka's BrokerModifications).
	b.liveChanged = true
	if len(changed) == 0 {
		return
	}
	c.startUp(started, changed, b)
}

// keepFenced takes out of next the fenced brokers still registered in the
// registration they were fenced in, and forgets the fence of the others:
// a broker that left is dead anyway, one registered again (a restart) is
// new and started like any.
func (c *Controller) keepFenced(next map[int32]Broker) {
	for id, f := range c.fenced {
		if br, ok := next[id]; ok && br.Epoch == f.Epoch {
			delete(next, id)
			continue
		}
		delete(c.fenced, id)
	}
}

// onBrokerFenced is onBrokerFailure ahead of the session expiry: the
// broker leaves live, what it led gets a new leader from the ISR with a
// bumped leader epoch, and it leaves the ISRs it was in, by the same
// conditional writes as a broker whose registration went away.
func (c *Controller) onBrokerFenced(e BrokerFenced, b *batch) {
	br, ok := c.live[e.Broker]
	if !c.active || !ok || br.Epoch != e.Epoch {
		return // not live, or the evidence is about an earlier registration
	}
	delete(c.live, e.Broker)
	c.fenced[e.Broker] = br
	c.abortShutdown(e.Broker, ErrBrokerNotAvailable, b)
	b.liveChanged = true
	c.startUp(nil, map[int32]bool{e.Broker: true}, b)
}

// onBrokerUnfenced is onBrokerStartup for a fenced broker whose listener
// answers again under the same registration.
func (c *Controller) onBrokerUnfenced(e BrokerUnfenced, b *batch) {
	br, ok := c.fenced[e.Broker]
	if !c.active || !ok || br.Epoch != e.Epoch {
		return
	}
	delete(c.fenced, e.Broker)
	c.live[e.Broker] = br
	b.liveChanged = true
	c.startUp([]int32{e.Broker}, map[int32]bool{e.Broker: true}, b)
}

// startUp decides for every partition on a changed broker, then sends new
// brokers their roles for the partitions that need no write.
func (c *Controller) startUp(started []int32, changed map[int32]bool, b *batch) {
	for _, p := range c.sortedPartitions(func(p *partition) bool { return hasAny(p.assignment.Replicas, changed) }) {
		c.decide(p, b)
	}
	for _, id := range started {
		for _, p := range c.partitions {
			if p.op == idle && p.state != nil && slices.Contains(p.assignment.Replicas, id) && !c.isDeleting(p.tp.Topic) {
				b.leaderAndIsr(id, p, false)
			}
		}
	}
	for _, id := range started {
		for _, tp := range slices.SortedFunc(maps.Keys(c.strays[id]), compareTP) {
			b.deleteReplica(id, tp)
		}
		delete(c.strays, id)
	}
	if len(c.deleting) > 0 && len(started) > 0 {
		// A returning broker deletes the replicas it held of deleted topics.
		only := map[int32]bool{}
		for _, id := range started {
			only[id] = true
		}
		for _, t := range slices.Sorted(maps.Keys(c.deleting)) {
			c.sendDeletes(t, only, b)
		}
	}
	b.fullMetadataTo(started...)
}

func (c *Controller) markRestarted(id int32) {
	for _, p := range c.partitions {
		if slices.Contains(p.assignment.Replicas, id) {
			if p.treatDead == nil {
				p.treatDead = map[int32]bool{}
			}
			p.treatDead[id] = true
		}
	}
}

// onTopicCreated is Kafka's onNewPartitionCreation: NonExistentPartition →
// NewPartition → OnlinePartition.
func (c *Controller) onTopicCreated(e TopicCreated, b *batch) {
	if !c.active {
		return
	}
	if _, ok := c.unclean[e.Topic.Name]; !ok {
		c.unclean[e.Topic.Name] = e.Topic.UncleanLeaderElection
	}
	c.addPartitions(e.Topic.Name, e.Topic.Partitions, b)
}

func (c *Controller) addPartitions(topic string, parts map[int32]Assignment, b *batch) {
	if !c.active {
		return
	}
	if _, ok := c.unclean[topic]; !ok {
		c.unclean[topic] = false
	}
	var added []*partition
	for id, a := range parts {
		tp := TopicPartition{topic, id}
		if _, ok := c.partitions[tp]; !ok {
			added = append(added, c.newPartition(tp, a))
		}
	}
	slices.SortFunc(added, func(x, y *partition) int { return compareTP(x.tp, y.tp) })
	for _, p := range added {
		c.decide(p, b)
	}
}

func (c *Controller) newPartition(tp TopicPartition, a Assignment) *partition {
	p := &partition{tp: tp, prevLeader: NoLeader, assignment: Assignment{
		Replicas: slices.Clone(a.Replicas),
		Adding:   slices.Clone(a.Adding),
		Removing: slices.Clone(a.Removing),
	}}
	c.partitions[tp] = p
	return p
}

// onTopicConfigChanged: enabling unclean election retries the topic's
// offline partitions at once.
func (c *Controller) onTopicConfigChanged(e TopicConfigChanged, b *batch) {
	if !c.active {
		return
	}
	c.unclean[e.Topic] = e.UncleanLeaderElection
	if !e.UncleanLeaderElection {
		return
	}
	for _, p := range c.sortedPartitions(func(p *partition) bool { return p.tp.Topic == e.Topic }) {
		c.decide(p, b)
	}
}

// onIsrChange is Kafka's processIsrChangeNotification: adopt the leaders'
// ISR writes and spread them with UpdateMetadata. A partition with a write
// or read out learns the new state from its outcome instead.
func (c *Controller) onIsrChange(e IsrChangeNotified, b *batch) {
	if !c.active {
		return
	}
	for _, tp := range sortedTPs(e.States) {
		p, ok := c.partitions[tp]
		if !ok || p.op != idle {
			continue
		}
		st := e.States[tp]
		if p.state != nil && st.ZkVersion <= p.state.ZkVersion {
			continue
		}
		st = st.clone()
		p.state = &st
		b.changed[tp] = true
		c.decide(p, b)
	}
}

// onStatesRead takes the re-read state znodes as the truth and decides
// again on them.
func (c *Controller) onStatesRead(e PartitionStatesRead, b *batch) {
	if !c.active || e.ControllerEpoch != c.epoch {
		return
	}
	for _, tp := range sortedTPs(e.States) {
		p, ok := c.partitions[tp]
		if !ok || p.op == writing {
			continue
		}
		if p.op == idle && p.state != nil && e.States[tp].ZkVersion < p.state.ZkVersion {
			continue // an unsolicited read older than what we know
		}
		st := e.States[tp].clone()
		p.state = &st
		c.setOp(p, idle)
		b.changed[tp] = true
		c.decide(p, b)
	}
	for _, tp := range e.Missing {
		p, ok := c.partitions[tp]
		if !ok || p.op == writing {
			continue
		}
		p.state = nil
		c.setOp(p, idle)
		c.decide(p, b)
	}
}

// onWritten commits a write: the brokers concerned learn the new state.
func (c *Controller) onWritten(e StateWritten, b *batch) {
	p := c.pendingWrite(e.ControllerEpoch, e.Partition)
	if p == nil {
		return
	}
	st := p.proposed.clone()
	st.ZkVersion = e.ZkVersion
	isNew, prev, kind := p.creating, p.prevLeader, p.writeKind
	p.state, p.creating, p.prevLeader, p.writeKind = &st, false, NoLeader, decisionWrite
	c.setOp(p, idle)
	c.reassignmentWriteCommitted(p, kind, b)
	for _, id := range p.deadInWrite {
		delete(p.treatDead, id)
	}
	p.deadInWrite = nil
	b.announce(p, isNew, prev)
	c.decide(p, b)
}

// onConflict: someone else (a leader changing the ISR, or a previous
// controller) wrote first; re-read before deciding again.
func (c *Controller) onConflict(e StateWriteConflict, b *batch) {
	p := c.pendingWrite(e.ControllerEpoch, e.Partition)
	if p == nil {
		return
	}
	p.creating = false
	c.setOp(p, reading)
	b.reads = append(b.reads, p.tp)
}

func (c *Controller) pendingWrite(epoch int32, tp TopicPartition) *partition {
	if !c.active || epoch != c.epoch {
		return nil
	}
	p, ok := c.partitions[tp]
	if !ok || p.op != writing {
		return nil
	}
	return p
}

// onControlledShutdown is Kafka's doControlledShutdown: the broker joins
// shuttingDown; partitions it leads elect another leader
// (ControlledShutdownPartitionLeaderElectionStrategy); partitions it
// follows drop it from the ISR and it stops fetching them. Partitions of
// a single replica are left alone, as in Kafka. The answer waits for the
// writes.
func (c *Controller) onControlledShutdown(e ControlledShutdownRequested, b *batch) {
	if !c.active {
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: e.Broker, Err: ErrNotController})
		return
	}
	br, ok := c.live[e.Broker]
	if !ok {
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: e.Broker, Err: ErrBrokerNotAvailable})
		return
	}
	if e.BrokerEpoch >= 0 && e.BrokerEpoch < br.Epoch {
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: e.Broker, Err: ErrStaleBrokerEpoch})
		return
	}
	c.shuttingDown[e.Broker] = true
	c.shutdownWaiters[e.Broker] = true
	for _, p := range c.sortedPartitions(func(p *partition) bool { return c.drains(p, e.Broker) }) {
		if p.state.Leader != e.Broker {
			b.stopReplica(e.Broker, p.tp)
		}
		c.decide(p, b)
	}
}

// drains says whether controlled shutdown of broker acts on p.
func (c *Controller) drains(p *partition, broker int32) bool {
	return p.state != nil && len(p.assignment.Replicas) > 1 && slices.Contains(p.assignment.Replicas, broker) && !c.isDeleting(p.tp.Topic)
}

// answerShutdowns answers each waiting broker once no write or read is out
// on its partitions, with the partitions it still leads.
func (c *Controller) answerShutdowns(b *batch) {
	for _, id := range slices.Sorted(maps.Keys(c.shutdownWaiters)) {
		if c.busy[id] > 0 {
			continue
		}
		delete(c.shutdownWaiters, id)
		var remaining []TopicPartition
		for _, p := range c.sortedPartitions(func(p *partition) bool { return c.drains(p, id) && p.state.Leader == id }) {
			remaining = append(remaining, p.tp)
		}
		b.answers = append(b.answers, AnswerControlledShutdown{Broker: id, Remaining: remaining})
	}
}
