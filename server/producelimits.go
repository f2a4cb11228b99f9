package server

import (
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// ProduceLimits say how much one produce request to a topic can hold, so a
// listener that parses records itself (the HTTP gateway) can refuse an
// oversized request while still reading it instead of after building it.
type ProduceLimits struct {
	Partitions int32
	// MaxRecordsBytes is max.message.bytes less the batch header: what the
	// encoded records of one partition's batch may add up to.
	MaxRecordsBytes int
}

// ProduceLimits returns topic's limits; a topic that does not exist yet
// gets what auto-creation would give it; one held elsewhere in the
// cluster, its configs there.
func (b *Broker) ProduceLimits(topicName string) ProduceLimits {
	partitions, maxBatch := b.cfg.NumPartitions, b.cfg.MessageMaxBytes
	t, err := b.lookup(topicName)
	if err != nil {
		var ok bool
		if t, ok, _ = b.topicHeldElsewhere(topicName); !ok {
			t = nil
		}
	}
	if t != nil {
		view, _ := b.Cluster()
		partitions, maxBatch = t.partitionCount(view), t.settings.maxMessageBytes
	}
	return ProduceLimits{Partitions: partitions, MaxRecordsBytes: max(maxBatch-recordbatch.HeaderSize, 0)}
}
