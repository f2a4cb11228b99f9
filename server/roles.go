package server

import (
	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/epoch"
)

// SetPartitionRole applies the controller's decision for one partition
// this broker holds (LeaderAndIsr): who leads in which epoch, the assigned
// replicas and the ISR.
func (b *Broker) SetPartitionRole(topicName string, partition int32, r replication.Role) error {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return err
	}
	return p.SetRole(r)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for a partition this
// broker leads: the largest epoch not above requested, and the offset where
// the next one starts (the log end for the current epoch), from the
// partition's leader-epoch history (KIP-101). currentEpoch is the
// request's (negative: not checked).
func (b *Broker) EndOffsetForEpoch(topicName string, partition, currentEpoch, requested int32) (epoch.EndOffset, error) {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return epoch.Undefined, err
	}
	return p.EndOffsetForEpoch(currentEpoch, requested)
}
