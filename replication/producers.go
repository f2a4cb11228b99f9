package replication

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// producerState is one partition's idempotent producer state; the
// partition owns it, so producers of different partitions never share a
// lock. It is loaded on first use (an idempotent produce, DescribeProducers,
// a snapshot) from the newest usable snapshot plus a replay of the log
// after it, and written back as a snapshot when the log rolls (by the flush
// loop), when the log start moves, and at a clean close.
//
// Locks, in the order they are taken: snapMu, appendMu, loadMu, mu, then a
// producerEntry's mu. No other partition ever waits on any of them.
type producerState struct {
	fs     storage.FS
	dir    string
	logger *slog.Logger
	// expiration is producer.id.expiration.ms.
	expiration time.Duration

	// rolled is set by the log's OnRoll hook (under the log's write lock,
	// so it only notes the roll); the flush loop snapshots the state.
	rolled atomic.Bool

	// snapMu serialises snapshot writes and pruning.
	snapMu sync.Mutex
	// appendMu is held shared by each idempotent append from its rules
	// check through recording it, and exclusively by a snapshot (so it
	// sees every appended batch recorded), an expiry and a recovery.
	appendMu sync.RWMutex

	loaded atomic.Bool
	loadMu sync.Mutex
	// baseline is the log end when the log was opened or recovered.
	// Snapshots above it describe bytes a crash lost and are stale; every
	// batch appended since, before the load, is not idempotent (idempotent
	// appends load first), so a load replays only up to baseline. Guarded
	// by loadMu.
	baseline int64
	// lastSnapshot is the offset of the newest snapshot this state was
	// loaded from or written to (-1: none). Guarded by snapMu.
	lastSnapshot int64

	mu struct {
		sync.Mutex
		entries map[int64]*producerEntry // nil until a producer is seen
	}
	// highWatermark is the partition's (nil in tests of the state alone),
	// to forget completed transactions as markers come even when no one
	// reads the LSO.
	highWatermark *atomic.Int64
	// txn is the partition's open transactions (transactions.go); taken
	// after an entry's mu, never before.
	txn struct {
		sync.Mutex
		ongoing    map[int64]int64 // producer id → first offset of its transaction
		completing []txnSpan       // ended, marker not yet below the high watermark
	}
}

func newProducerState(fsys storage.FS, dir string, expiration time.Duration, logger *slog.Logger) *producerState {
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	return &producerState{fs: fsys, dir: dir, logger: logger, expiration: expiration, lastSnapshot: -1}
}

func (ps *producerState) entry(id int64) *producerEntry {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e, ok := ps.mu.entries[id]
	if !ok {
		if ps.mu.entries == nil { // most partitions never see a producer
			ps.mu.entries = make(map[int64]*producerEntry)
		}
		e = newProducerEntry()
		ps.mu.entries[id] = e
	}
	return e
}

// ready loads the state the first time it is needed.
func (ps *producerState) ready(log *storage.Log) {
	if ps.loaded.Load() {
		return
	}
	ps.loadMu.Lock()
	defer ps.loadMu.Unlock()
	if ps.loaded.Load() {
		return
	}
	snap := ps.loadSnapshot(log.LogStartOffset())
	from := snap
	if from < 0 {
		// No usable snapshot (a data dir from before snapshots, or all
		// corrupt): bound the replay as the lazy rebuild always did. A
		// producer whose last batch is older is treated as new.
		from = max(log.LogStartOffset(), ps.baseline-producerScanWindow)
	}
	n := ps.replay(log, from, ps.baseline)
	n -= ps.expireLocked(time.Now().UnixMilli())
	ps.loaded.Store(true)
	if n > 0 {
		ps.logger.Info("producer state loaded", "snapshot_offset", snap, "replayed", ps.baseline-from, "producers", n)
	}
}

// loadSnapshot fills the state from the newest usable snapshot and returns
// its offset, or -1. Stale snapshots (above baseline, or below the log
// start, whose replay would miss deleted batches) and unreadable ones are
// removed. Expects loadMu.
func (ps *producerState) loadSnapshot(logStart int64) int64 {
	offsets := ps.listSnapshots()
	for i := len(offsets) - 1; i >= 0; i-- {
		off := offsets[i]
		if off > ps.baseline || off < logStart {
			ps.removeSnapshot(off)
			continue
		}
		producers, err := ps.readSnapshot(off)
		if err != nil {
			ps.logger.Warn("producer state snapshot ignored", "offset", off, "err", err)
			ps.removeSnapshot(off)
			continue
		}
		ps.mu.Lock()
		if len(producers) > 0 {
			ps.mu.entries = make(map[int64]*producerEntry, len(producers))
		}
		ps.txn.Lock()
		for _, p := range producers {
			ps.mu.entries[p.id] = &producerEntry{epoch: p.epoch, batches: p.batches,
				lastTimestamp: p.lastTimestamp, lastAppend: p.lastAppend,
				txnFirst: p.txnFirst, coordinatorEpoch: p.coordinatorEpoch}
			if p.txnFirst != noTxn {
				if ps.txn.ongoing == nil {
					ps.txn.ongoing = make(map[int64]int64)
				}
				ps.txn.ongoing[p.id] = p.txnFirst
			}
		}
		ps.txn.Unlock()
		ps.mu.Unlock()
		return off
	}
	return -1
}

func (ps *producerState) readSnapshot(off int64) ([]snapshotProducer, error) {
	f, err := ps.fs.OpenFile(filepath.Join(ps.dir, snapshotName(off)), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// The largest snapshot: every producer with every batch.
	const maxSize = 1 << 30
	if fi.Size() > maxSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptSnapshot, fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, err
	}
	at, producers, err := decodeSnapshot(data)
	if err == nil && at != off {
		err = fmt.Errorf("%w: holds offset %d", ErrCorruptSnapshot, at)
	}
	return producers, err
}

// replay records the idempotent batches in [from, to) and returns how many
// producers the state holds. A read error stops it early (logged): the
// state then misses the rest, as the lazy rebuild did.
func (ps *producerState) replay(log *storage.Log, from, to int64) int {
	var buf []byte
	for from < to {
		rr, err := log.Read(storage.ReadOptions{Offset: from, MaxBytes: 1 << 20, MinOneBatch: true, MaxOffset: to}, buf[:0])
		if start := log.LogStartOffset(); errors.Is(err, storage.ErrOffsetOutOfRange) && from < start {
			from = start // retention deleted the segment meanwhile
			continue
		}
		if err != nil {
			ps.logger.Warn("producer state replay stopped early", "offset", from, "err", err)
			break
		}
		buf = rr.Data
		next := ps.replayBatches(log, rr.Data, from)
		if next <= from {
			break
		}
		from = next
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.mu.entries)
}

// replayBatches records the producers' batches and transaction markers of
// data at or after from and returns the offset after the last batch seen.
func (ps *producerState) replayBatches(log *storage.Log, data []byte, from int64) int64 {
	next, now := from, time.Now().UnixMilli() // expiry counts from the load
	for len(data) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(data)
		if err != nil || h.Size() > int64(len(data)) {
			break
		}
		batch := data[:h.Size()]
		data = data[h.Size():]
		if h.LastOffset() < from {
			continue
		}
		next = h.LastOffset() + 1
		if h.ProducerID < 0 {
			continue
		}
		e := ps.entry(h.ProducerID)
		if h.IsTxnMarker() {
			ps.applyMarker(log, e, h, batch, now)
			continue
		}
		if h.IsControl() || e.epoch != noEpoch && h.ProducerEpoch < e.epoch {
			continue
		}
		if n := len(e.batches); n > 0 && h.BaseOffset <= e.batches[n-1].lastOffset {
			continue // already in the snapshot
		}
		ps.beginTxn(e, h.ProducerID, h, h.BaseOffset)
		e.record(h, h.BaseOffset, h.LastOffset(), now)
	}
	return next
}

// recordReplicated records the producers' batches and transaction markers
// a follower copied from its leader, as an append records its own.
// Expects appendMu held shared and the state loaded.
func (ps *producerState) recordReplicated(log *storage.Log, data []byte) {
	now := time.Now().UnixMilli()
	for len(data) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(data)
		if err != nil || h.Size() > int64(len(data)) {
			return // storage validated the batches; nothing is left to record
		}
		batch := data[:h.Size()]
		data = data[h.Size():]
		if h.ProducerID < 0 || h.IsControl() && !h.IsTxnMarker() {
			continue
		}
		e := ps.entry(h.ProducerID)
		e.mu.Lock()
		switch {
		case h.IsTxnMarker():
			ps.applyMarker(log, e, h, batch, now)
		case e.epoch == noEpoch || h.ProducerEpoch >= e.epoch:
			ps.beginTxn(e, h.ProducerID, h, h.BaseOffset)
			e.record(h, h.BaseOffset, h.LastOffset(), now)
		}
		e.mu.Unlock()
	}
}

// snapshot writes the state at the log end, loading it first if need be,
// then prunes old snapshots. The file is not fsynced (a close would cost one
// more fsync per partition): one lost or torn by a power failure fails its
// CRC, and an older snapshot or the log serves instead.
func (ps *producerState) snapshot(log *storage.Log) error {
	ps.snapMu.Lock()
	defer ps.snapMu.Unlock()
	ps.ready(log)
	ps.appendMu.Lock()
	end := log.LogEndOffset()
	data := encodeSnapshot(end, ps.copyEntries())
	ps.appendMu.Unlock()
	if end != ps.lastSnapshot {
		if err := ps.writeSnapshot(end, data); err != nil {
			return err
		}
		ps.lastSnapshot = end
	}
	ps.pruneLocked(log.LogStartOffset())
	return nil
}

// copyEntries copies every producer's entry. Expects appendMu.
func (ps *producerState) copyEntries() []snapshotProducer {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]snapshotProducer, 0, len(ps.mu.entries))
	for id, e := range ps.mu.entries {
		e.mu.Lock()
		out = append(out, snapshotProducer{id: id, epoch: e.epoch, lastTimestamp: e.lastTimestamp, lastAppend: e.lastAppend,
			batches:  append([]seqBatch(nil), e.batches...),
			txnFirst: e.txnFirst, coordinatorEpoch: e.coordinatorEpoch})
		e.mu.Unlock()
	}
	return out
}

func (ps *producerState) writeSnapshot(offset int64, data []byte) error {
	// Not fsynced, as Kafka leaves its snapshots to the page cache: a
	// snapshot is CRC-checked when read and rebuilt from the log when it
	// is missing or torn. The *.tmp of a crash is removed by storage.
	path := filepath.Join(ps.dir, snapshotName(offset))
	if err := storage.WriteFileAtomic(ps.fs, path, data, 0o644, storage.Atomic); err != nil {
		return fmt.Errorf("write producer snapshot %d: %w", offset, err)
	}
	return nil
}

// pruneLocked removes snapshots below the log start and all but the
// newest snapshotsKept. Expects snapMu.
func (ps *producerState) pruneLocked(logStart int64) {
	offsets := ps.listSnapshots()
	for i, off := range offsets {
		if off < logStart || i < len(offsets)-snapshotsKept {
			ps.removeSnapshot(off)
		}
	}
}

// listSnapshots returns the offsets of the snapshot files, ascending.
func (ps *producerState) listSnapshots() []int64 {
	names, err := ps.fs.ReadDir(ps.dir)
	if err != nil {
		ps.logger.Warn("list producer snapshots", "err", err)
		return nil
	}
	var offsets []int64
	for _, name := range names {
		if off, ok := parseSnapshotName(name); ok {
			offsets = append(offsets, off)
		}
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	return offsets
}

func (ps *producerState) removeSnapshot(off int64) {
	err := ps.fs.Remove(filepath.Join(ps.dir, snapshotName(off)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		ps.logger.Warn("remove producer snapshot", "offset", off, "err", err)
	}
}

// recover runs recoverLog (the log's crash recovery after a failure) with
// idempotent appends and snapshots held off, then drops the loaded state if
// the log was recovered, so the next use reloads it from the snapshots and
// the recovered log: a batch whose append reported an error may have been
// kept, and a retry of it must be answered as a duplicate.
func (ps *producerState) recover(recoverLog func() (bool, error), logEnd func() int64) (bool, error) {
	ps.snapMu.Lock()
	defer ps.snapMu.Unlock()
	ps.appendMu.Lock()
	defer ps.appendMu.Unlock()
	recovered, err := recoverLog()
	if !recovered {
		return false, err
	}
	ps.loadMu.Lock()
	defer ps.loadMu.Unlock()
	ps.mu.Lock()
	ps.mu.entries = nil
	ps.mu.Unlock()
	ps.txn.Lock()
	ps.txn.ongoing, ps.txn.completing = nil, nil
	ps.txn.Unlock()
	ps.baseline = logEnd()
	ps.lastSnapshot = -1
	ps.loaded.Store(false)
	return true, err
}

// expire drops the producers that appended nothing here for the
// expiration (producer.id.expiration.ms), as Kafka's periodic check does:
// their memory is bounded by time, and a later batch from one is a new
// producer's (any sequence accepted). Unlike Kafka, which compares the
// batches' max timestamps with its clock, the broker's own clock at the
// last append counts, so a producer with a skewed clock is neither
// expired at once nor kept forever. A state not loaded has nothing to
// expire in memory; its snapshot entries expire when it loads.
func (ps *producerState) expire(now time.Time) int {
	if !ps.loaded.Load() {
		return 0
	}
	ps.appendMu.Lock() // no append holds an entry that could be dropped
	defer ps.appendMu.Unlock()
	return ps.expireLocked(now.UnixMilli())
}

// expireLocked expects appendMu held exclusively, or a load in progress
// (loadMu, no entry handed out yet).
func (ps *producerState) expireLocked(now int64) int {
	limit := ps.expiration.Milliseconds()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	for id, e := range ps.mu.entries {
		e.mu.Lock()
		// An open transaction keeps its producer, as in Kafka: the LSO
		// and the coordinator's marker depend on it.
		expired := now-e.lastAppend >= limit && e.txnFirst == noTxn
		e.mu.Unlock()
		if expired {
			delete(ps.mu.entries, id)
			n++
		}
	}
	return n
}

// changedSince reports whether the state may differ from what the
// partition's snapshots held when it was opened: it was loaded (and so
// maybe appended to), or the log grew, which a snapshot should cover so
// the next load need not replay it.
func (ps *producerState) changedSince(logEnd int64) bool {
	if ps.loaded.Load() {
		return true
	}
	ps.loadMu.Lock()
	defer ps.loadMu.Unlock()
	return logEnd != ps.baseline
}
