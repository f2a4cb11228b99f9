package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Transactions (KIP-98), the partition's side. A transactional producer's
// batches (AttrTransactional) open a transaction on the partition at the
// first one's offset; the coordinator's marker (a control batch,
// recordbatch.EndTxnMarker) closes it, commit or abort. The partition
// keeps, per producer, the first offset of its ongoing transaction and
// the coordinator epoch of its last marker, and from them:
//
//   - the last stable offset (LSO): the high watermark, or the first offset
//     of the oldest transaction still open, whichever is lower; a
//     transaction whose marker is not yet below the high watermark still
//     counts as open, as in Kafka (its marker could yet be lost);
//   - the aborted-transaction index (storage's .txnindex): one entry per
//     abort marker, written as the marker is appended (leader) or copied
//     (follower), and again from the log above the newest snapshot when the
//     state loads, so a crash never loses one.
//
// Rules, as Kafka's ProducerStateManager applies them:
//
//   - a marker with an older producer epoch than the producer's is
//     INVALID_PRODUCER_EPOCH; one with an older coordinator epoch than the
//     last marker's is TRANSACTION_COORDINATOR_FENCED (a coordinator that
//     lost its partition);
//   - a non-transactional batch while the producer's transaction is open is
//     INVALID_TXN_STATE;
//   - KIP-890 part 1: a transactional batch that would open a transaction
//     is checked by the caller with the coordinator first
//     (TxnVerification); a marker landing between that check and the
//     append makes the append INVALID_TXN_STATE, so a late produce cannot
//     open a transaction the coordinator never heard of.
//   - KIP-890 part 2 (transaction.version 2), where each transaction has
//     its own epoch and its markers carry the next one's: a batch of a
//     newer epoch than the producer's transaction open here waits for
//     that transaction's marker (AwaitTxnOrder), since the coordinator
//     may add the partition to the next transaction before it is sent;
//     a marker that says the epoch of the data it ends
//     (AppendTxnMarkerEnding) appends nothing when the producer's state
//     here is past that epoch (a resend: the transaction is closed here)
//     and is refused, retriable, when it is ahead of the open one.
//   - a coordinator's own transactional batch for a producer (the group
//     coordinator's offset commits, AppendCoordinatorTxnBatch) opens the
//     producer's transaction like a client's, without a sequence.
//
// A follower applies the batches it copies without the checks: the
// leader made them.

// Errors of the transaction rules; the listeners map them to Kafka's codes.
var (
	ErrInvalidTxnState      = errors.New("invalid transaction state")
	ErrTxnCoordinatorFenced = errors.New("transaction coordinator fenced")
)

// noTxn marks a producer without an ongoing transaction.
const noTxn int64 = -1

// txnSpan is a transaction completed at marker whose marker is not yet
// below the high watermark.
type txnSpan struct{ first, marker int64 }

// TxnGuard is what TxnVerification saw of a producer, for the append to
// tell whether a marker came in between (Kafka's VerificationGuard). The
// zero value verifies nothing (no coordinator to ask).
type TxnGuard struct {
	markers, probes uint64
	verified        bool
}

// AskedAt is g, a guard taken again once the coordinator answered (after
// AwaitTxnOrder), holding the probes as they stood when asked was taken,
// before the question went out: a probe since then may have come from a
// coordinator that took over from the one answering, and settled the
// producer as having nothing open here, so the answer no longer holds.
func (g TxnGuard) AskedAt(asked TxnGuard) TxnGuard {
	g.probes = asked.probes
	return g
}

// TxnVerification reports whether a transactional batch h must be verified
// with its coordinator before it is appended (KIP-890 part 1): its
// producer has no ongoing transaction on this partition. The guard is
// passed to AppendProducerBatch once the coordinator said yes.
func (p *Replica) TxnVerification(h recordbatch.Header) (need bool, guard TxnGuard) {
	return p.txnCheck(h, false)
}

// TxnAddition is TxnVerification for KIP-890 part 2 (transaction.version
// 2), where each transaction of a producer has its own epoch: a batch of
// another epoch than the producer's transaction open here begins the
// producer's next transaction (the open one's marker is on its way), so
// its partition must be added too. The coordinator may answer the add
// before that marker is here: the caller waits for it (AwaitTxnOrder)
// and takes the guard again then.
func (p *Replica) TxnAddition(h recordbatch.Header) (need bool, guard TxnGuard) {
	return p.txnCheck(h, true)
}

func (p *Replica) txnCheck(h recordbatch.Header, byEpoch bool) (need bool, guard TxnGuard) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return false, TxnGuard{}
	}
	ps := p.producers
	ps.ready(p.log)
	e := ps.entry(h.ProducerID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.txnFirst != noTxn && (!byEpoch || e.epoch == h.ProducerEpoch) {
		return false, TxnGuard{}
	}
	return true, TxnGuard{markers: e.markers, probes: e.probes, verified: true}
}

// AwaitTxnOrder returns once a transactional batch of producerID at
// producerEpoch may open the producer's transaction here in log order
// (transaction.version 2): when the producer has a transaction of an
// older epoch open here, its marker must be appended first, or that
// marker, carrying the batch's epoch, would end the batch's transaction
// too. The coordinator answers the add of the next
// transaction's partitions while the previous one's markers may still be
// on their way, so the leader waits for the marker here, until ctx ends
// (ctx's error then: the producer retries). The marker written first, a
// batch appended after it makes it durable with it.
func (p *Replica) AwaitTxnOrder(ctx context.Context, producerID int64, producerEpoch int16) error {
	if producerID < 0 {
		return nil
	}
	ps := p.producers
	ps.ready(p.log)
	for {
		e := ps.entry(producerID)
		e.mu.Lock()
		if e.txnFirst == noTxn || e.epoch == noEpoch || e.epoch >= producerEpoch {
			e.mu.Unlock()
			return nil
		}
		if e.txnClosed == nil {
			e.txnClosed = make(chan struct{})
		}
		closed, open := e.txnClosed, e.epoch
		e.mu.Unlock()
		select {
		case <-closed:
		case <-ctx.Done():
			return fmt.Errorf("%s-%d producer %d: the marker of its transaction at epoch %d, before epoch %d, has not come: %w",
				p.topic, p.index, producerID, open, producerEpoch, ctx.Err())
		}
	}
}

// ProbeTxn answers a coordinator that cannot tell whether the producer's
// next transaction began here (it loaded a record carrying this
// partition, and the coordinator before it may have let a leader append
// without a record since): open is whether the producer has a transaction
// open here. When it has none, every verification already granted to one
// of its batches is revoked (the guard such a batch carries no longer
// matches, so its append is refused as INVALID_TXN_STATE, an abortable
// error): a batch verified before the probe cannot land after it, where
// the coordinator, told nothing is open, would no longer end it.
func (p *Replica) ProbeTxn(producerID int64) (open bool) {
	ps := p.producers
	ps.ready(p.log)
	e := ps.entry(producerID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.txnFirst != noTxn {
		return true
	}
	e.probes++
	return false
}

// AwaitingTxnOrder reports whether a batch of producerID waits in
// AwaitTxnOrder for the marker of the producer's open transaction here.
func (p *Replica) AwaitingTxnOrder(producerID int64) bool {
	ps := p.producers
	ps.mu.Lock()
	e, ok := ps.mu.entries[producerID]
	ps.mu.Unlock()
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.txnClosed != nil
}

// checkTxn applies the transaction rules to a data batch. Expects e.mu.
func (e *producerEntry) checkTxn(h recordbatch.Header, guard TxnGuard) error {
	switch {
	case !h.IsTransactional() && e.txnFirst != noTxn:
		return fmt.Errorf("%w: a non-transactional batch while the producer's transaction from offset %d is open",
			ErrInvalidTxnState, e.txnFirst)
	case h.IsTransactional() && e.txnFirst == noTxn && guard.verified && guard.markers != e.markers:
		return fmt.Errorf("%w: the producer's transaction ended since the batch was verified", ErrInvalidTxnState)
	case h.IsTransactional() && e.txnFirst == noTxn && guard.verified && guard.probes != e.probes:
		return fmt.Errorf("%w: the coordinator probed the producer here, finding nothing open, since the batch was verified", ErrInvalidTxnState)
	}
	return nil
}

// holdLSO, before a batch that opens a transaction is appended, holds the
// LSO at end (the log end before the append, at or below where the batch
// lands): the append may move the high watermark past the batch before
// beginTxn records the real offset, and a read_committed reader must not
// see it in between. It reports whether it held. Expects e.mu.
func (ps *producerState) holdLSO(e *producerEntry, id int64, h recordbatch.Header, end int64) bool {
	if !h.IsTransactional() || e.txnFirst != noTxn {
		return false
	}
	ps.txn.Lock()
	if ps.txn.ongoing == nil {
		ps.txn.ongoing = make(map[int64]int64)
	}
	ps.txn.ongoing[id] = end
	ps.txn.Unlock()
	return true
}

// releaseLSO drops holdLSO's hold after a failed append.
func (ps *producerState) releaseLSO(id int64) {
	ps.txn.Lock()
	delete(ps.txn.ongoing, id)
	ps.txn.Unlock()
}

// beginTxn opens the producer's transaction at offset if h is
// transactional and none is open. Expects e.mu.
func (ps *producerState) beginTxn(e *producerEntry, id int64, h recordbatch.Header, offset int64) {
	if !h.IsTransactional() || e.txnFirst != noTxn {
		return
	}
	e.txnFirst = offset
	ps.txn.Lock()
	if ps.txn.ongoing == nil {
		ps.txn.ongoing = make(map[int64]int64)
	}
	ps.txn.ongoing[id] = offset
	ps.txn.Unlock()
}

// AppendTxnMarker appends the coordinator's marker ending producerID's
// transaction on this partition, as the leader, after the epoch checks.
// The aborted-transaction index has an abort's entry before it returns.
func (p *Replica) AppendTxnMarker(producerID int64, producerEpoch int16, m recordbatch.EndTxnMarker, opts storage.AppendOptions) (storage.AppendResult, error) {
	res, _, err := p.AppendTxnMarkerEnding(producerID, producerEpoch, UnknownTxnEpoch, m, opts)
	return res, err
}

// UnknownTxnEpoch: a marker that does not say the epoch of the data it
// ends (Kafka's coordinators and tools, and a transaction.version 1 end).
const UnknownTxnEpoch int16 = -1

// ErrTxnMarkerEarly: the marker ends a transaction of a later epoch than
// the one the producer has open here, whose own marker has not come yet;
// the coordinator sends it again (retriable).
var ErrTxnMarkerEarly = errors.New("transaction marker ahead of an earlier one")

// AppendTxnMarkerEnding is AppendTxnMarker for a marker that says the
// producer epoch of the data it ends (dataEpoch; UnknownTxnEpoch: as
// AppendTxnMarker). At transaction.version 2 a coordinator answers the
// add of the producer's next transaction while the previous one's
// markers are still being written, and the next transaction's epoch is
// the marker's: a resent marker of the previous one (its first answer
// lost, or a new coordinator resending what the log left pending) must
// not end the next one. So when the producer's state here is past
// dataEpoch (a transaction of a later epoch is open, or a later marker
// was written) the transaction it ends is already closed here: nothing
// is appended (appended false) and res covers the log as it stands, so
// the caller's acks=all wait makes the earlier marker durable before it
// answers. A marker for a later epoch than the transaction open here is
// ErrTxnMarkerEarly.
func (p *Replica) AppendTxnMarkerEnding(producerID int64, producerEpoch, dataEpoch int16, m recordbatch.EndTxnMarker, opts storage.AppendOptions) (res storage.AppendResult, appended bool, err error) {
	res, indexErr, skipped, err := p.appendTxnMarker(producerID, producerEpoch, dataEpoch, m, opts)
	if err != nil || skipped {
		return res, false, err
	}
	// The append told the waiting fetches of the marker before the
	// transaction was ended here: with no follower to wait for, the high
	// watermark passed the marker then, and the last stable offset moves
	// only now, so read_committed fetches are told again.
	p.notifyWaiters()
	if indexErr == nil {
		return res, true, nil
	}
	// The marker is in the log but its abort is not indexed: a
	// read_committed reader would take the aborted records for committed.
	// Dropping the state makes the next use reload it from the snapshot
	// and the log, which indexes the abort again.
	p.logger.Error("aborted transaction index", "producer", producerID, "marker", res.BaseOffset, "err", indexErr)
	p.producers.recover(func() (bool, error) { return true, nil }, p.log.LogEndOffset)
	return res, true, fmt.Errorf("%w: %s-%d: %v", storage.ErrFailed, p.topic, p.index, indexErr)
}

func (p *Replica) appendTxnMarker(producerID int64, producerEpoch, dataEpoch int16, m recordbatch.EndTxnMarker, opts storage.AppendOptions) (res storage.AppendResult, indexErr error, skipped bool, err error) {
	ps := p.producers
	ps.appendMu.RLock()
	defer ps.appendMu.RUnlock()
	ps.ready(p.log)
	e := ps.entry(producerID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if dataEpoch != UnknownTxnEpoch && e.epoch != noEpoch {
		open := e.txnFirst != noTxn
		switch {
		case open && e.epoch > dataEpoch, !open && e.epoch > producerEpoch:
			// Closed here already: the next transaction's data, or a
			// later marker, came after this one's first copy.
			if m.CoordinatorEpoch < e.coordinatorEpoch {
				return res, nil, false, fmt.Errorf("%w: %s-%d producer %d: coordinator epoch %d is older than %d",
					ErrTxnCoordinatorFenced, p.topic, p.index, producerID, m.CoordinatorEpoch, e.coordinatorEpoch)
			}
			end := p.log.LogEndOffset()
			return storage.AppendResult{BaseOffset: end - 1, LastOffset: end - 1}, nil, true, nil
		case open && e.epoch < dataEpoch:
			return res, nil, false, fmt.Errorf("%w: %s-%d producer %d: the marker ends epoch %d, epoch %d is open here",
				ErrTxnMarkerEarly, p.topic, p.index, producerID, dataEpoch, e.epoch)
		}
	}
	switch {
	case e.epoch != noEpoch && producerEpoch < e.epoch:
		return res, nil, false, fmt.Errorf("%w: %s-%d producer %d: marker epoch %d is older than %d",
			ErrInvalidProducerEpoch, p.topic, p.index, producerID, producerEpoch, e.epoch)
	case m.CoordinatorEpoch < e.coordinatorEpoch:
		return res, nil, false, fmt.Errorf("%w: %s-%d producer %d: coordinator epoch %d is older than %d",
			ErrTxnCoordinatorFenced, p.topic, p.index, producerID, m.CoordinatorEpoch, e.coordinatorEpoch)
	}
	batch := recordbatch.AppendEndTxnMarker(nil, producerID, producerEpoch, m, p.now().UnixMilli())
	res, err = p.Append(batch, opts)
	if err != nil {
		return res, nil, false, err
	}
	return res, ps.endTxn(p.log, e, producerID, producerEpoch, m, res.BaseOffset, time.Now().UnixMilli()), false, nil
}

// endTxn applies a marker at offset to the producer's state and indexes an
// abort. Expects e.mu (or a load in progress).
//
// An abort is indexed before the transaction stops holding the LSO back:
// the marker is already in the log, so the high watermark may pass it at
// any moment (at once with no follower), and a read_committed fetch that
// found the LSO past the marker but the index without the abort would
// hand out the aborted records as committed (an aborted read, seen under
// the flapping nemesis).
func (ps *producerState) endTxn(log *storage.Log, e *producerEntry, id int64, epoch int16, m recordbatch.EndTxnMarker, offset, now int64) error {
	first := e.txnFirst
	if first == noTxn {
		first = offset // a transaction that wrote nothing here
	}
	var indexErr error
	if !m.Commit {
		indexErr = log.AppendAbortedTxn(storage.AbortedTxn{ProducerID: id, FirstOffset: first, LastOffset: offset,
			LastStableOffset: ps.stableWithout(id, offset+1)})
	}
	e.txnFirst = noTxn
	e.coordinatorEpoch = m.CoordinatorEpoch
	e.markers++
	if e.txnClosed != nil {
		close(e.txnClosed)
		e.txnClosed = nil
	}
	e.lastAppend = now
	if epoch != e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	ps.txn.Lock()
	delete(ps.txn.ongoing, id)
	if ps.highWatermark != nil {
		ps.pruneCompletedLocked(ps.highWatermark.Load())
	}
	ps.txn.completing = append(ps.txn.completing, txnSpan{first: first, marker: offset})
	ps.txn.Unlock()
	return indexErr
}

// stableWithout is the LSO the other producers' open transactions allow,
// at most upTo: what an abort's index entry records.
func (ps *producerState) stableWithout(id, upTo int64) int64 {
	ps.txn.Lock()
	defer ps.txn.Unlock()
	stable := upTo
	for other, f := range ps.txn.ongoing {
		if other != id {
			stable = min(stable, f)
		}
	}
	return stable
}

// applyMarker applies a marker found in the log (a replay, a follower's
// copy) without the leader's checks. Expects e.mu or a load in progress.
func (ps *producerState) applyMarker(log *storage.Log, e *producerEntry, h recordbatch.Header, batch []byte, now int64) {
	m, err := recordbatch.ParseEndTxnMarker(batch)
	if err != nil {
		ps.logger.Warn("unreadable transaction marker skipped", "offset", h.BaseOffset, "err", err)
		return
	}
	if err := ps.endTxn(log, e, h.ProducerID, h.ProducerEpoch, m, h.BaseOffset, now); err != nil && !errors.Is(err, storage.ErrClosed) {
		ps.logger.Error("aborted transaction index", "producer", h.ProducerID, "marker", h.BaseOffset, "err", err)
	}
}

// lastStable is the LSO for high watermark hw; completed transactions whose
// marker is below hw are forgotten.
func (ps *producerState) lastStable(hw int64) int64 {
	ps.txn.Lock()
	defer ps.txn.Unlock()
	lso := hw
	for _, f := range ps.txn.ongoing {
		lso = min(lso, f)
	}
	ps.pruneCompletedLocked(hw)
	for _, c := range ps.txn.completing {
		lso = min(lso, c.first)
	}
	return lso
}

// pruneCompletedLocked forgets the completed transactions whose marker is
// below hw. Expects ps.txn.
func (ps *producerState) pruneCompletedLocked(hw int64) {
	kept := ps.txn.completing[:0]
	for _, c := range ps.txn.completing {
		if c.marker >= hw {
			kept = append(kept, c)
		}
	}
	clear(ps.txn.completing[len(kept):])
	ps.txn.completing = kept
}

// LastStableOffset is the offset below which every transaction is decided
// (Kafka's LSO): read_committed consumers read up to it.
func (p *Replica) LastStableOffset() int64 {
	p.producers.ready(p.log)
	return p.producers.lastStable(p.hw.Load())
}

// AbortedTxns returns the aborted transactions overlapping [from, upTo)
// (storage's index), for a read_committed fetch of that range.
func (p *Replica) AbortedTxns(from, upTo int64) ([]storage.AbortedTxn, error) {
	p.producers.ready(p.log) // a load indexes what a crash lost
	return p.log.AbortedTxns(from, upTo)
}
