package server

import (
	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
)

// Partition is what the listeners see of one partition: its offsets and
// replica state, in no storage type. The broker holds the partitions
// themselves (*replication.Partition, which owns appends, reads and the
// lifecycle); a listener never reads, appends to, closes or deletes one but
// through the core (Fetch, Produce, ReadBatches).
type Partition interface {
	Topic() string
	Index() int32
	// OffsetForTimestamp: base offset of the first batch with maxTimestamp >= ts, or -1.
	OffsetForTimestamp(ts int64) (int64, error)
	LogStartOffset() int64
	LogEndOffset() int64
	// HighWatermark is the offset below which records are visible to
	// consumers: acknowledged by every in-sync replica.
	HighWatermark() int64
	// LastStableOffset is the offset below which every transaction is
	// decided: the high watermark, or the first offset of the oldest open
	// transaction when lower (read_committed readers stop there).
	LastStableOffset() int64
	LeaderEpoch() int32
	Leader() int32
	Replicas() []int32
	ISR() []int32
	// WaitState is what waiting fetches count bytes from (replication/delayed).
	WaitState() delayed.State
	Size() int64
	SegmentCount() int
	// CheckLeading is nil when produce and consumer reads may be served
	// here: this broker leads the partition and has not fenced itself
	// (cut from ZooKeeper, replication/fence); ErrNotLeader otherwise.
	CheckLeading() error
}

var _ Partition = (*replication.Replica)(nil)

// ReadBatches appends to dst the whole batches of a partition from the one
// holding offset on, below maxOffset, within maxBytes (the first batch
// whole however large): a plain read for the core's own scans of a log,
// such as the group coordinator's load. Errors are storage's, unwrapped.
func (b *Broker) ReadBatches(topicName string, partition int32, offset, maxOffset int64, maxBytes int, dst []byte) ([]byte, error) {
	p, err := b.partition(topicName, partition)
	if err != nil {
		return dst, err
	}
	return readBatches(p, offset, maxOffset, maxBytes, dst)
}

func readBatches(p *replication.Replica, offset, maxOffset int64, maxBytes int, dst []byte) ([]byte, error) {
	rr, err := p.Read(storage.ReadOptions{Offset: offset, MaxBytes: maxBytes, MinOneBatch: true, MaxOffset: maxOffset}, dst)
	return rr.Data, err
}
