package server

import (
	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
)

// Partition is what the listeners see of one partition: reads and its
// replica state. The broker holds the partitions themselves
// (*replication.Partition, which owns appends and the lifecycle); a
// listener never closes, deletes or appends to one but through the core.
type Partition interface {
	Topic() string
	Index() int32
	// Read returns whole batches; consumers pass MaxOffset = HighWatermark.
	Read(opts storage.ReadOptions, dst []byte) (storage.ReadResult, error)
	// OffsetForTimestamp: base offset of the first batch with maxTimestamp >= ts, or -1.
	OffsetForTimestamp(ts int64) (int64, error)
	LogStartOffset() int64
	LogEndOffset() int64
	// HighWatermark is the offset below which records are visible to
	// consumers: acknowledged by every in-sync replica.
	HighWatermark() int64
	// LastStableOffset is the high watermark until transactions exist.
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

var _ Partition = (*replication.Partition)(nil)
