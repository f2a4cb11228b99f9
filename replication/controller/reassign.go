package controller

import (
	"errors"
	"fmt"
	"slices"
)

// Partition reassignment, as Kafka's controller does it (KIP-455, ZooKeeper
// era): the target replicas are added to the partition's replica set
// (adding_replicas / removing_replicas in /brokers/topics/<t>), the leader
// epoch is bumped so every replica hears its role, the new replicas fetch
// and join the ISR; once every target replica is in the ISR the leader
// moves if it is being removed, the ISR is cut to the target, the removed
// replicas are deleted, and the topic znode holds the target alone. No
// replica is dropped before the target is in sync. A reassignment to the
// original replicas cancels one in progress, without waiting for the ISR.
//
// Sources: /admin/reassign_partitions (the whole list each time; each
// partition leaves it as it completes, and the znode goes with the last)
// and AlterPartitionReassignments (45); ListPartitionReassignments (46)
// reads Reassignments.

// ErrInvalidReplicaAssignment maps to INVALID_REPLICA_ASSIGNMENT;
// ErrNoReassignmentInProgress to NO_REASSIGNMENT_IN_PROGRESS.
var (
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	ErrNoReassignmentInProgress = errors.New("no reassignment in progress")
)

// ReassignmentsRequested asks for reassignments: a target per partition,
// nil to cancel. FromZK: the list is /admin/reassign_partitions whole
// (partitions it no longer lists keep going); otherwise an
// AlterPartitionReassignments, answered by AnswerReassignments with ID.
type ReassignmentsRequested struct {
	ID         uint64
	FromZK     bool
	Partitions map[TopicPartition][]int32
}

// AssignmentWritten: a WriteTopicAssignment was done.
type AssignmentWritten struct {
	ControllerEpoch int32
	Topic           string
}

// WriteTopicAssignment: write /brokers/topics/<Topic> with these
// assignments (every partition of the topic), fenced by the controller
// epoch; report AssignmentWritten.
type WriteTopicAssignment struct {
	ControllerEpoch          int32
	ControllerEpochZkVersion int32
	Topic                    string
	Partitions               map[int32]Assignment
}

// WriteZKReassignments: /admin/reassign_partitions must list Remaining
// (empty: delete it), fenced by the controller epoch.
type WriteZKReassignments struct {
	ControllerEpoch          int32
	ControllerEpochZkVersion int32
	Remaining                map[TopicPartition][]int32
}

// AnswerReassignments answers an AlterPartitionReassignments: per
// partition nil (started or cancelled) or an error.
type AnswerReassignments struct {
	ID      uint64
	Results map[TopicPartition]error
	Err     error
}

func (ReassignmentsRequested) isEvent() {}
func (AssignmentWritten) isEvent()      {}
func (WriteTopicAssignment) isAction()  {}
func (WriteZKReassignments) isAction()  {}
func (AnswerReassignments) isAction()   {}

type reassignPhase int8

const (
	// assigning: the topic znode write with the full replica set is due.
	assigning reassignPhase = iota
	// bumping: the leader epoch bump that tells every replica is due or out.
	bumping
	// copying: the target replicas catch up; completion waits for the ISR.
	copying
	// completing: the write moving the leader and cutting the ISR is out.
	completing
	// finalizing: the topic znode write with the target alone is due.
	finalizing
)

type reassignment struct {
	target, original []int32
	phase            reassignPhase
	fromZK           bool
}

// writeKind says which reassignment step a partition's write is.
type writeKind int8

const (
	decisionWrite writeKind = iota
	bumpWrite
	completeWrite
)

// onReassignmentsRequested starts, changes or cancels reassignments.
func (c *Controller) onReassignmentsRequested(e ReassignmentsRequested, b *batch) {
	if !c.active {
		if !e.FromZK {
			b.answers = append(b.answers, AnswerReassignments{ID: e.ID, Err: ErrNotController})
		}
		return
	}
	results := map[TopicPartition]error{}
	if e.FromZK {
		c.zkReassign = map[TopicPartition][]int32{}
	}
	for _, tp := range sortedTPs(e.Partitions) {
		target := e.Partitions[tp]
		err := c.reassign(tp, target, e.FromZK, b)
		results[tp] = err
		if e.FromZK {
			if err == nil && c.partitions[tp].reassign != nil {
				c.zkReassign[tp] = slices.Clone(target)
			} else {
				b.zkReassignChanged = true // done at once, or refused: off the list
			}
		}
	}
	if !e.FromZK {
		b.answers = append(b.answers, AnswerReassignments{ID: e.ID, Results: results})
	}
}

// reassign moves tp toward target (nil: cancel).
func (c *Controller) reassign(tp TopicPartition, target []int32, fromZK bool, b *batch) error {
	p, ok := c.partitions[tp]
	if !ok || c.isDeleting(tp.Topic) {
		return ErrUnknownPartition
	}
	original := p.assignment.Replicas
	if p.reassign != nil {
		original = p.reassign.original
	}
	if target == nil {
		if p.reassign == nil {
			return ErrNoReassignmentInProgress
		}
		target = original
	}
	if err := c.validTarget(target); err != nil {
		return err
	}
	if p.reassign != nil && slices.Equal(p.reassign.target, target) {
		p.reassign.fromZK = p.reassign.fromZK || fromZK
		return nil // the same move, asked again
	}
	if p.reassign == nil && slices.Equal(target, original) {
		return nil // nothing to move
	}
	full := slices.Compact(append(slices.Clone(target), without(original, target)...))
	next := Assignment{Replicas: full, Adding: without(full, original), Removing: without(full, target)}
	// Replicas an earlier target added that this one does not keep.
	for _, r := range without(p.assignment.Replicas, full) {
		c.dropReplica(r, tp, b)
	}
	c.setAssignment(p, next)
	p.reassign = &reassignment{target: slices.Clone(target), original: slices.Clone(original), phase: assigning, fromZK: fromZK}
	b.assignmentWrite(tp.Topic)
	return nil
}

func (c *Controller) validTarget(target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the target names no replica", ErrInvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if seen[r] {
			return fmt.Errorf("%w: the target names broker %d twice", ErrInvalidReplicaAssignment, r)
		}
		seen[r] = true
		if !c.isLive(r) {
			return fmt.Errorf("%w: broker %d of the target is not live", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// setAssignment changes p's replicas, moving its busy count with them.
func (c *Controller) setAssignment(p *partition, a Assignment) {
	if p.op != idle {
		for _, r := range p.assignment.Replicas {
			c.busy[r]--
		}
		for _, r := range a.Replicas {
			c.busy[r]++
		}
	}
	p.assignment = a
}

// dropReplica deletes a replica leaving p's assignment: now if its broker
// is live, else when it returns.
func (c *Controller) dropReplica(broker int32, tp TopicPartition, b *batch) {
	if c.isLive(broker) {
		b.deleteReplica(broker, tp)
		return
	}
	if c.strays[broker] == nil {
		c.strays[broker] = map[TopicPartition]bool{}
	}
	c.strays[broker][tp] = true
}

// onAssignmentWritten moves the topic's reassignments past their znode
// writes: a started one on to the epoch bump, a finished one off the list.
func (c *Controller) onAssignmentWritten(e AssignmentWritten, b *batch) {
	if !c.active || e.ControllerEpoch != c.epoch {
		return
	}
	for _, p := range c.sortedPartitions(func(p *partition) bool { return p.tp.Topic == e.Topic && p.reassign != nil }) {
		switch p.reassign.phase {
		case assigning:
			p.reassign.phase = bumping
			if slices.Equal(p.reassign.target, p.reassign.original) {
				p.reassign.phase = copying // a cancellation waits for no one
			}
			c.decide(p, b)
		case finalizing:
			p.reassign = nil
			if _, ok := c.zkReassign[p.tp]; ok {
				delete(c.zkReassign, p.tp)
				b.zkReassignChanged = true
			}
		}
	}
}

// advanceReassignment takes a settled partition's reassignment one step.
func (c *Controller) advanceReassignment(p *partition, b *batch) {
	r := p.reassign
	if r == nil || p.op != idle || p.state == nil {
		return
	}
	cur := *p.state
	switch r.phase {
	case bumping:
		c.writeAs(p, c.bumped(cur, cur.Leader, cur.ISR), bumpWrite, b)
	case copying, completing:
		cancel := slices.Equal(r.target, r.original)
		if !cancel && !containsAll(cur.ISR, r.target) {
			return
		}
		eligible := c.eligibleFor(p)
		leader := cur.Leader
		if !slices.Contains(r.target, leader) || !eligible(leader) {
			var ok bool
			if leader, ok = ReassignmentLeader(r.target, cur.ISR, eligible); !ok {
				return // no target replica can lead yet
			}
		}
		isr := filter(cur.ISR, func(id int32) bool { return slices.Contains(r.target, id) })
		r.phase = completing
		c.writeAs(p, c.bumped(cur, leader, isr), completeWrite, b)
	}
}

func (c *Controller) writeAs(p *partition, next LeaderAndIsr, kind writeKind, b *batch) {
	c.write(p, next, *p.state, b)
	p.writeKind = kind
}

// reassignmentWriteCommitted runs before a committed write is announced.
func (c *Controller) reassignmentWriteCommitted(p *partition, kind writeKind, b *batch) {
	r := p.reassign
	if r == nil {
		return
	}
	switch {
	case kind == bumpWrite && r.phase == bumping:
		r.phase = copying
	case kind == completeWrite && r.phase == completing:
		for _, gone := range without(p.assignment.Replicas, r.target) {
			c.dropReplica(gone, p.tp, b)
		}
		c.setAssignment(p, Assignment{Replicas: slices.Clone(r.target)})
		r.phase = finalizing
		b.assignmentWrite(p.tp.Topic)
	}
}

// Reassignments lists the partitions being reassigned with their
// assignment (replicas, adding, removing), for ListPartitionReassignments.
func (c *Controller) Reassignments() map[TopicPartition]Assignment {
	out := map[TopicPartition]Assignment{}
	for tp, p := range c.partitions {
		if p.reassign != nil {
			out[tp] = Assignment{slices.Clone(p.assignment.Replicas), slices.Clone(p.assignment.Adding), slices.Clone(p.assignment.Removing)}
		}
	}
	return out
}

// resumeReassignments takes up, after a failover, the reassignments the
// topic znodes show in progress (adding or removing replicas).
func (c *Controller) resumeReassignments(zk map[TopicPartition][]int32, b *batch) {
	for _, p := range c.sortedPartitions(func(p *partition) bool {
		return len(p.assignment.Adding) > 0 || len(p.assignment.Removing) > 0
	}) {
		a := p.assignment
		_, listed := zk[p.tp]
		p.reassign = &reassignment{target: without(a.Replicas, a.Removing), original: without(a.Replicas, a.Adding),
			phase: bumping, fromZK: listed}
	}
	c.zkReassign = map[TopicPartition][]int32{}
	for _, tp := range sortedTPs(zk) {
		if err := c.reassign(tp, zk[tp], true, b); err == nil && c.partitions[tp].reassign != nil {
			c.zkReassign[tp] = slices.Clone(zk[tp])
		} else {
			b.zkReassignChanged = true
		}
	}
}

func without(ids, drop []int32) []int32 {
	return filter(ids, func(id int32) bool { return !slices.Contains(drop, id) })
}

func containsAll(set, ids []int32) bool {
	for _, id := range ids {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

func (c *Controller) topicAssignments(topic string) map[int32]Assignment {
	out := map[int32]Assignment{}
	for tp, p := range c.partitions {
		if tp.Topic == topic {
			a := p.assignment
			out[tp.Partition] = Assignment{slices.Clone(a.Replicas), slices.Clone(a.Adding), slices.Clone(a.Removing)}
		}
	}
	return out
}
