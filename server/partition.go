package server

import (
	"sync"
	"sync/atomic"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
)

// Partition is what the core's produce and fetch paths see of one partition.
// Today it is a local log on a single node; a replicated partition
// (replication/) implements the same methods with a leader, followers and an
// ISR, and the listeners do not change.
type Partition interface {
	Topic() string
	Index() int32
	// Append writes batches and returns once they are acknowledged by the
	// partition's rules (for a replicated partition: acks). The partition
	// sets the leader epoch.
	Append(batches []byte, opts storage.AppendOptions) (storage.AppendResult, error)
	// Read returns whole batches; consumers pass MaxOffset = HighWatermark.
	Read(opts storage.ReadOptions, dst []byte) (storage.ReadResult, error)
	// OffsetForTimestamp: base offset of the first batch with maxTimestamp >= ts, or -1.
	OffsetForTimestamp(ts int64) (int64, error)
	LogStartOffset() int64
	LogEndOffset() int64
	// HighWatermark is the offset below which records are visible to
	// consumers: acknowledged by every in-sync replica. On one node it
	// follows the log end offset (after fsync, for synced appends).
	HighWatermark() int64
	// LastStableOffset is the high watermark until transactions exist.
	LastStableOffset() int64
	LeaderEpoch() int32
	Leader() int32
	Replicas() []int32
	ISR() []int32
	// WaitState is what waiting fetches count bytes from (replication/delayed):
	// the high watermark and the bytes below it, read without I/O. The
	// partition notifies the broker's purgatory whenever it changes.
	WaitState() delayed.State
	Size() int64
	SegmentCount() int
}

// localPartition is a single-node partition: this broker leads, it is the
// only replica, and the high watermark is what the log has acknowledged.
type localPartition struct {
	topic    string
	index    int32
	brokerID int32
	log      *storage.Log
	epoch    int32
	// producers is the idempotent producer state of this partition.
	producers *producerState

	// waiters is told of every change of WaitState; nil in tests that
	// build a partition alone.
	waiters *delayed.Purgatory
	// reads counts log reads, so tests can prove a waiting fetch reads
	// nothing until data arrives.
	reads atomic.Int64

	hw atomic.Int64

	mu struct {
		sync.Mutex
		// visibleBytes counts the bytes appended below the high watermark
		// since the partition opened; it moves with hw under mu.
		visibleBytes int64
	}
}

func newLocalPartition(topic string, index, brokerID int32, log *storage.Log, producers *producerState, waiters *delayed.Purgatory) *localPartition {
	p := &localPartition{topic: topic, index: index, brokerID: brokerID, log: log, producers: producers, waiters: waiters}
	p.hw.Store(log.LogEndOffset())
	return p
}

func (p *localPartition) Topic() string { return p.topic }
func (p *localPartition) Index() int32  { return p.index }

func (p *localPartition) Append(batches []byte, opts storage.AppendOptions) (storage.AppendResult, error) {
	opts.LeaderEpoch = p.epoch
	res, err := p.log.Append(batches, opts)
	if err != nil {
		return res, err
	}
	p.advanceHighWatermark(res.LastOffset+1, int64(len(batches)))
	return res, nil
}

// advanceHighWatermark moves the HW forward to at most hw and counts the
// append's bytes as visible. It uses the append's own end, not the log end:
// a later unsynced append must not become visible before it is durable.
// Two appends finishing out of order undercount for a moment (the later's
// HW covers the earlier's records before its bytes are added); the earlier
// one's notification then carries the full count.
func (p *localPartition) advanceHighWatermark(hw, appended int64) {
	p.mu.Lock()
	if hw > p.hw.Load() {
		p.hw.Store(hw)
	}
	p.mu.visibleBytes += appended
	p.mu.Unlock()
	p.notifyWaiters()
}

// notifyWaiters tells the purgatory the partition's state changed: its
// high watermark, visible bytes or log start.
func (p *localPartition) notifyWaiters() {
	if p.waiters == nil {
		return
	}
	if k := (delayed.Key{Topic: p.topic, Partition: p.index}); p.waiters.Watched(k) {
		p.waiters.Notify(k, p.WaitState())
	}
}

// notifyGone answers the fetches waiting on a deleted partition.
func (p *localPartition) notifyGone() {
	if p.waiters != nil {
		p.waiters.Notify(delayed.Key{Topic: p.topic, Partition: p.index}, delayed.State{Gone: true})
	}
}

func (p *localPartition) WaitState() delayed.State {
	p.mu.Lock()
	st := delayed.State{HighWatermark: p.hw.Load(), VisibleBytes: p.mu.visibleBytes}
	p.mu.Unlock()
	st.LogStartOffset = p.log.LogStartOffset()
	return st
}

func (p *localPartition) Read(opts storage.ReadOptions, dst []byte) (storage.ReadResult, error) {
	p.reads.Add(1)
	return p.log.Read(opts, dst)
}

func (p *localPartition) OffsetForTimestamp(ts int64) (int64, error) {
	return p.log.OffsetForTimestamp(ts)
}

func (p *localPartition) LogStartOffset() int64   { return p.log.LogStartOffset() }
func (p *localPartition) LogEndOffset() int64     { return p.log.LogEndOffset() }
func (p *localPartition) HighWatermark() int64    { return p.hw.Load() }
func (p *localPartition) LastStableOffset() int64 { return p.hw.Load() }
func (p *localPartition) LeaderEpoch() int32      { return p.epoch }
func (p *localPartition) Leader() int32           { return p.brokerID }
func (p *localPartition) Replicas() []int32       { return []int32{p.brokerID} }
func (p *localPartition) ISR() []int32            { return []int32{p.brokerID} }
func (p *localPartition) Size() int64             { return p.log.Size() }
func (p *localPartition) SegmentCount() int       { return p.log.SegmentCount() }

// Failure is the error that failed the partition's log (it refuses appends
// until recovered), or nil.
func (p *localPartition) Failure() error { return p.log.Failure() }

// recoverLog reopens a failed log (storage.Log.Recover) and moves the high
// watermark to the recovered log end: recovery fsynced everything it kept,
// so it is all durable, as after a restart. The producer state is dropped
// with it, to be reloaded from the snapshots and the recovered log.
func (p *localPartition) recoverLog() (recovered bool, err error) {
	return p.producers.recover(func() (bool, error) {
		recovered, err := p.log.Recover()
		if recovered {
			p.advanceHighWatermark(p.log.LogEndOffset(), 0)
		}
		return recovered, err
	}, p.log.LogEndOffset)
}
