package server

import (
	"fmt"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server/records"
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
func idempotentBatch(checked *records.Produced) (recordbatch.Header, bool, error) {
	if checked.Batches() == 0 {
		return recordbatch.Header{}, false, fmt.Errorf("%w: no record batch", ErrCorruptMessage)
	}
	h := checked.Header(0)
	if h.Attributes&recordbatch.AttrTransactional != 0 {
		return h, false, fmt.Errorf("%w: transactional batch; ferry does not support transactions", ErrInvalidRecord)
	}
	if h.ProducerID < 0 {
		return h, false, nil
	}
	if checked.Batches() != 1 {
		return h, false, fmt.Errorf("%w: an idempotent producer sends one batch per partition", ErrInvalidRecord)
	}
	return h, true, nil
}
