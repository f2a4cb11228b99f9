package server

import (
	"fmt"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/storage/recordbatch"
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

// idempotentBatch returns the header of an idempotent producer's batch.
// Such a request must hold exactly one batch, and no transactional one:
// ferry has no transactions.
func idempotentBatch(data []byte) (recordbatch.Header, bool, error) {
	h, err := recordbatch.ParseHeader(data)
	if err != nil {
		return h, false, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	const transactional = 0x10
	if h.Attributes&transactional != 0 {
		return h, false, fmt.Errorf("%w: transactional batch; ferry does not support transactions", ErrInvalidRecord)
	}
	if h.ProducerID < 0 {
		return h, false, nil
	}
	if h.Size() != int64(len(data)) {
		return h, false, fmt.Errorf("%w: an idempotent producer sends one batch per partition", ErrInvalidRecord)
	}
	return h, true, nil
}
