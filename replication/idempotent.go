package replication

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Idempotent producers (Kafka's KIP-98, without transactions).
//
// A producer that got an id from InitProducerID numbers its batches per
// partition: baseSequence, baseSequence+1, … one per record. The core keeps,
// per partition and producer, the epoch and the last producerBatchesKept
// batches it appended, and applies Kafka's rules before appending:
//
//   - a batch equal to one of those (same first and last sequence) is a
//     retry: it is not appended again and gets the offsets of the original;
//   - an older epoch is INVALID_PRODUCER_EPOCH;
//   - a newer epoch must start at sequence 0;
//   - otherwise the batch must start right after the last one
//     (OUT_OF_ORDER_SEQUENCE_NUMBER on a gap or an older, evicted retry);
//   - a producer the partition has not seen may start at any sequence (as
//     Kafka does since KIP-360, after retention removed its batches).
//
// Each partition owns its producers' state (producers.go): one lock per
// partition and one per producer, none shared across partitions. It is
// loaded on first use from the partition's newest snapshot file
// (producersnapshot.go) plus a replay of the batches after it, which carry
// producer id, epoch and base sequence; snapshots are written at segment
// rolls, when the log start moves and at a clean close, so a restart
// replays nothing after a clean close and, after a kill -9, the batches
// since the newest snapshot (about one segment at most).

// Errors of the idempotence rules; the listeners map them to Kafka's codes.
var (
	ErrOutOfOrderSequence   = errors.New("out of order sequence number")
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
)

const (
	// producerBatchesKept is how many batches per producer and partition
	// are remembered for duplicate detection (Kafka keeps 5, the most
	// in-flight requests an idempotent producer may have).
	producerBatchesKept = 5
	// producerScanWindow bounds the replay when a partition has no usable
	// snapshot: only the last this many offsets are scanned. A producer
	// whose last batch is older is treated as new (any sequence accepted).
	producerScanWindow = 1 << 20
	// noEpoch marks a producer entry that has accepted nothing yet.
	noEpoch int16 = -1
)

// seqBatch is one remembered batch of a producer.
type seqBatch struct {
	firstSeq, lastSeq      int32
	baseOffset, lastOffset int64
}

// producerEntry is one producer's state on one partition. mu is held from
// the sequence check through the append, so two retries of one batch can
// never both be appended; other producers of the partition do not wait.
type producerEntry struct {
	mu            sync.Mutex
	epoch         int16 // guarded by mu
	batches       []seqBatch
	lastTimestamp int64
	// lastAppend is the broker's clock (ms) at the producer's last append
	// here, or when its state was loaded; expiry counts from it.
	lastAppend int64
	// txnFirst is the first offset of the producer's ongoing transaction
	// on this partition, noTxn when none (transactions.go).
	txnFirst int64
	// coordinatorEpoch is the coordinator epoch of the producer's last
	// marker here (-1: none), to fence a deposed coordinator's markers.
	coordinatorEpoch int32
	// markers counts the markers applied since the entry was made, and
	// probes the probes that found no transaction open (ProbeTxn):
	// KIP-890's verification guard; not persisted.
	markers, probes uint64
	// txnClosed, when not nil, is closed by the next marker applied:
	// AwaitTxnOrder's waiters look again (transactions.go).
	txnClosed chan struct{}
}

func newProducerEntry() *producerEntry {
	return &producerEntry{epoch: noEpoch, txnFirst: noTxn, coordinatorEpoch: -1}
}

// nextSeq is Kafka's sequence increment, wrapping at MaxInt32 to 0.
func nextSeq(seq int32, inc int32) int32 {
	if int64(seq)+int64(inc) > math.MaxInt32 {
		return int32(int64(inc) - (math.MaxInt32 - int64(seq)) - 1)
	}
	return seq + inc
}

// AppendIdempotent checks a producer's single batch against its state and
// appends it, or answers a retry with the original offsets. h is the
// batch's header (the caller has checked it is one idempotent batch).
// Append errors are storage's, unwrapped.
func (p *Replica) AppendIdempotent(h recordbatch.Header, batch []byte, opts storage.AppendOptions) (storage.AppendResult, error) {
	return p.AppendProducerBatch(h, batch, opts, TxnGuard{})
}

// AppendProducerBatch is AppendIdempotent for a batch that may be
// transactional: the transaction rules apply too (transactions.go), with
// guard from TxnVerification when the batch was verified with its
// coordinator.
func (p *Replica) AppendProducerBatch(h recordbatch.Header, batch []byte, opts storage.AppendOptions, guard TxnGuard) (storage.AppendResult, error) {
	ps := p.producers
	ps.appendMu.RLock()
	defer ps.appendMu.RUnlock()
	ps.ready(p.log)
	e := ps.entry(h.ProducerID)
	e.mu.Lock()
	defer e.mu.Unlock()
	dup, isDup, err := e.check(h)
	if err != nil {
		return storage.AppendResult{}, fmt.Errorf("%w: %s-%d producer %d: %v",
			err, p.topic, p.index, h.ProducerID, errorDetail(err, e, h))
	}
	if isDup {
		return storage.AppendResult{BaseOffset: dup.baseOffset, LastOffset: dup.lastOffset,
			LogAppendTime: -1, MaxTimestamp: -1}, nil
	}
	if err := e.checkTxn(h, guard); err != nil {
		return storage.AppendResult{}, fmt.Errorf("%s-%d producer %d: %w", p.topic, p.index, h.ProducerID, err)
	}
	return p.appendOpening(e, h, batch, opts)
}

// appendOpening appends a producer's checked batch and records it in e:
// the producer's transaction opens at it when it is transactional (the
// LSO held from before the append, released if the append fails).
// Expects appendMu read-locked and e.mu.
func (p *Replica) appendOpening(e *producerEntry, h recordbatch.Header, batch []byte, opts storage.AppendOptions) (storage.AppendResult, error) {
	ps := p.producers
	opening := ps.holdLSO(e, h.ProducerID, h, p.log.LogEndOffset())
	res, err := p.Append(batch, opts)
	if err != nil {
		if opening {
			ps.releaseLSO(h.ProducerID)
		}
		return res, err
	}
	ps.beginTxn(e, h.ProducerID, h, res.BaseOffset)
	e.record(h, res.BaseOffset, res.LastOffset, time.Now().UnixMilli())
	return res, nil
}

// AppendCoordinatorTxnBatch appends, as the leader, a transactional
// batch that a coordinator on this broker wrote for a producer: the group
// coordinator's TxnOffsetCommit on __consumer_offsets (Kafka's
// AppendOrigin.COORDINATOR). The producer's transaction opens here at it
// as at a client's batch, so that the LSO, the order of the producer's
// next transaction (AwaitTxnOrder) and a resent marker
// (AppendTxnMarkerEnding) see it, as a follower copying it does
// (recordReplicated); without it a resent marker of the previous
// transaction was appended again and ended this one's commits in the log.
// It has no sequence (the coordinator writes each once), so none is
// checked; an older epoch than the producer's is
// ErrInvalidProducerEpoch (a fenced producer's late commit).
func (p *Replica) AppendCoordinatorTxnBatch(h recordbatch.Header, batch []byte, opts storage.AppendOptions) (storage.AppendResult, error) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return storage.AppendResult{}, fmt.Errorf("%s-%d: a coordinator's batch without a producer's transaction", p.topic, p.index)
	}
	ps := p.producers
	ps.appendMu.RLock()
	defer ps.appendMu.RUnlock()
	ps.ready(p.log)
	e := ps.entry(h.ProducerID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.epoch != noEpoch && h.ProducerEpoch < e.epoch {
		return storage.AppendResult{}, fmt.Errorf("%w: %s-%d producer %d: epoch %d is older than %d",
			ErrInvalidProducerEpoch, p.topic, p.index, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	return p.appendOpening(e, h, batch, opts)
}

func errorDetail(err error, e *producerEntry, h recordbatch.Header) string {
	if errors.Is(err, ErrInvalidProducerEpoch) {
		return fmt.Sprintf("epoch %d is older than %d", h.ProducerEpoch, e.epoch)
	}
	if h.ProducerEpoch != e.epoch {
		return fmt.Sprintf("new epoch %d must start at sequence 0, not %d", h.ProducerEpoch, h.BaseSequence)
	}
	last := e.batches[len(e.batches)-1].lastSeq
	return fmt.Sprintf("sequence %d, expected %d", h.BaseSequence, nextSeq(last, 1))
}

// check applies the rules in the file comment. Expects e.mu.
func (e *producerEntry) check(h recordbatch.Header) (seqBatch, bool, error) {
	switch {
	case e.epoch != noEpoch && h.ProducerEpoch < e.epoch:
		// Also with no batch kept: a marker with a bumped epoch fenced it.
		return seqBatch{}, false, ErrInvalidProducerEpoch
	case e.epoch == noEpoch || len(e.batches) == 0:
		return seqBatch{}, false, nil
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return seqBatch{}, false, ErrOutOfOrderSequence
		}
		return seqBatch{}, false, nil
	}
	last := nextSeq(h.BaseSequence, h.LastOffsetDelta)
	for _, sb := range e.batches {
		if sb.firstSeq == h.BaseSequence && sb.lastSeq == last {
			return sb, true, nil
		}
	}
	if h.BaseSequence != nextSeq(e.batches[len(e.batches)-1].lastSeq, 1) {
		return seqBatch{}, false, ErrOutOfOrderSequence
	}
	return seqBatch{}, false, nil
}

// record remembers an appended batch. Expects e.mu.
func (e *producerEntry) record(h recordbatch.Header, base, last, now int64) {
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == producerBatchesKept {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchesKept-1]
	}
	e.batches = append(e.batches, seqBatch{
		firstSeq:   h.BaseSequence,
		lastSeq:    nextSeq(h.BaseSequence, h.LastOffsetDelta),
		baseOffset: base,
		lastOffset: last,
	})
	e.lastTimestamp = h.MaxTimestamp
	e.lastAppend = now
}

// ProducerState describes one idempotent producer of a partition
// (DescribeProducers).
type ProducerState struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of its last marker (-1).
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its ongoing
	// transaction here, -1 when none.
	CurrentTxnStartOffset int64
}

// keepLastBatches is the cleaner's KeepEmpty for this partition: it keeps
// the last batch of each producer the partition remembers, as Kafka's
// cleaner keeps lastRecordsOfActiveProducers, so the producer's epoch
// and sequence survive compaction in the log that a replica or a restart
// rebuilds producer state from. The set is taken once, at the start of
// a pass: a batch that a later append made no longer last is only kept
// one pass longer.
func (p *Replica) keepLastBatches() func(recordbatch.Header) bool {
	ps := p.producers
	ps.ready(p.log)
	ps.mu.Lock()
	entries := maps.Clone(ps.mu.entries)
	ps.mu.Unlock()
	last := make(map[int64]int64, len(entries))
	for id, e := range entries {
		e.mu.Lock()
		if n := len(e.batches); n > 0 {
			last[id] = e.batches[n-1].lastOffset
		}
		e.mu.Unlock()
	}
	return func(h recordbatch.Header) bool {
		off, ok := last[h.ProducerID]
		return ok && off == h.LastOffset()
	}
}

// Producers returns the idempotent producers the partition remembers.
func (p *Replica) Producers() []ProducerState {
	ps := p.producers
	ps.ready(p.log)
	ps.mu.Lock()
	entries := make(map[int64]*producerEntry, len(ps.mu.entries))
	for id, e := range ps.mu.entries {
		entries[id] = e
	}
	ps.mu.Unlock()
	var out []ProducerState
	for id, e := range entries {
		e.mu.Lock()
		if len(e.batches) > 0 || e.txnFirst != noTxn {
			last := int32(-1)
			if len(e.batches) > 0 {
				last = e.batches[len(e.batches)-1].lastSeq
			}
			out = append(out, ProducerState{ProducerID: id, ProducerEpoch: e.epoch, LastSequence: last,
				LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.txnFirst})
		}
		e.mu.Unlock()
	}
	return out
}
