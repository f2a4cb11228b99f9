package server

import (
	"github.com/ferry-mq/ferry/replication"
)

// The idempotent producer rules live with the partition that owns their
// state (replication/idempotent.go); these are their names in the core.
var (
	ErrOutOfOrderSequence   = replication.ErrOutOfOrderSequence
	ErrInvalidProducerEpoch = replication.ErrInvalidProducerEpoch
)

// ProducerState describes one idempotent producer of a partition
// (DescribeProducers).
type ProducerState = replication.ProducerState

// Producers returns the idempotent producers a partition remembers.
func (b *Broker) Producers(topicName string, partition int32) ([]ProducerState, error) {
	t, err := b.lookup(topicName)
	if err != nil {
		return nil, err
	}
	p, err := t.partition(partition)
	if err != nil {
		return nil, err
	}
	return p.Producers(), nil
}
