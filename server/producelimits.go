package server

import "github.com/ferry-mq/ferry/storage"

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
// gets what auto-creation would give it.
func (b *Broker) ProduceLimits(topicName string) ProduceLimits {
	partitions, maxBatch := b.cfg.NumPartitions, b.cfg.MessageMaxBytes
	if t, err := b.lookup(topicName); err == nil {
		partitions, maxBatch = int32(len(t.partitions)), t.settings.maxMessageBytes
	}
	return ProduceLimits{Partitions: partitions, MaxRecordsBytes: max(maxBatch-storage.BatchHeaderSize, 0)}
}
