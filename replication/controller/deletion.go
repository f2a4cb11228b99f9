package controller

import (
	"maps"
	"slices"
)

// Topic deletion, as Kafka's TopicDeletionManager: a topic marked in
// /admin/delete_topics leaves every broker's metadata at once
// (UpdateMetadata with LeaderDuringDelete), each of its replicas gets a
// StopReplica that deletes it, and once every replica has answered, the
// topic's znodes go. A replica on a dead broker holds the deletion until
// that broker returns and deletes it too, so no replica's data outlives
// the topic. Partitions of a topic being deleted are never elected for.

// onDeletionsRequested starts deleting each listed topic not yet being
// deleted; a listed topic that does not exist only has its mark removed.
func (c *Controller) onDeletionsRequested(e TopicDeletionsRequested, b *batch) {
	if !c.active {
		return
	}
	topics := slices.Clone(e.Topics)
	slices.Sort(topics)
	for _, t := range slices.Compact(topics) {
		c.startDeletion(t, b)
	}
}

func (c *Controller) startDeletion(topic string, b *batch) {
	if _, ok := c.deleting[topic]; ok {
		return
	}
	parts := c.sortedPartitions(func(p *partition) bool { return p.tp.Topic == topic })
	if len(parts) == 0 {
		b.topicDeletes = append(b.topicDeletes, topic)
		return
	}
	pending := map[int32]map[TopicPartition]bool{}
	for _, p := range parts {
		for _, r := range p.assignment.Replicas {
			if pending[r] == nil {
				pending[r] = map[TopicPartition]bool{}
			}
			pending[r][p.tp] = true
		}
		b.changed[p.tp] = true // UpdateMetadata: LeaderDuringDelete
	}
	c.deleting[topic] = pending
	c.sendDeletes(topic, nil, b)
}

// sendDeletes asks the live brokers (of only, if set) holding replicas of
// topic not yet deleted to delete them.
func (c *Controller) sendDeletes(topic string, only map[int32]bool, b *batch) {
	pending := c.deleting[topic]
	for _, broker := range slices.Sorted(maps.Keys(pending)) {
		if !c.isLive(broker) || (only != nil && !only[broker]) {
			continue
		}
		for _, tp := range slices.SortedFunc(maps.Keys(pending[broker]), compareTP) {
			b.deleteReplica(broker, tp)
		}
	}
}

// onReplicasDeleted settles a broker's deleted replicas; a topic whose
// every replica is deleted loses its znodes.
func (c *Controller) onReplicasDeleted(e ReplicasDeleted, b *batch) {
	if !c.active || e.ControllerEpoch != c.epoch {
		return
	}
	touched := map[string]bool{}
	for _, tp := range e.Partitions {
		pending := c.deleting[tp.Topic]
		if pending == nil {
			continue
		}
		delete(pending[e.Broker], tp)
		if len(pending[e.Broker]) == 0 {
			delete(pending, e.Broker)
		}
		touched[tp.Topic] = true
	}
	for _, topic := range slices.Sorted(maps.Keys(touched)) {
		if len(c.deleting[topic]) == 0 {
			c.finishDeletion(topic, b)
		}
	}
}

func (c *Controller) finishDeletion(topic string, b *batch) {
	for tp, p := range c.partitions {
		if tp.Topic != topic {
			continue
		}
		c.setOp(p, idle) // a write still out is forgotten with the partition
		delete(c.partitions, tp)
		delete(b.changed, tp)
	}
	delete(c.deleting, topic)
	delete(c.unclean, topic)
	b.topicDeletes = append(b.topicDeletes, topic)
}

func (c *Controller) isDeleting(topic string) bool {
	_, ok := c.deleting[topic]
	return ok
}
