package server

import (
	"sync"
	"sync/atomic"

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
	// Changed is closed the next time the high watermark moves, so a fetch
	// can long-poll without polling.
	Changed() <-chan struct{}
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

	hw atomic.Int64

	mu struct {
		sync.Mutex
		changed chan struct{} // nil until someone waits; closed on HW move
	}
}

func newLocalPartition(topic string, index, brokerID int32, log *storage.Log, producers *producerState) *localPartition {
	p := &localPartition{topic: topic, index: index, brokerID: brokerID, log: log, producers: producers}
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
	p.advanceHighWatermark(res.LastOffset + 1)
	return res, nil
}

// advanceHighWatermark moves the HW forward to at most hw. It uses the
// append's own end, not the log end: a later unsynced append must not become
// visible before it is durable.
func (p *localPartition) advanceHighWatermark(hw int64) {
	for {
		cur := p.hw.Load()
		if hw <= cur {
			return
		}
		if p.hw.CompareAndSwap(cur, hw) {
			break
		}
	}
	p.mu.Lock()
	if p.mu.changed != nil {
		close(p.mu.changed)
		p.mu.changed = nil
	}
	p.mu.Unlock()
}

func (p *localPartition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.changed == nil {
		p.mu.changed = make(chan struct{})
	}
	return p.mu.changed
}

func (p *localPartition) Read(opts storage.ReadOptions, dst []byte) (storage.ReadResult, error) {
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
			p.advanceHighWatermark(p.log.LogEndOffset())
		}
		return recovered, err
	}, p.log.LogEndOffset)
}
