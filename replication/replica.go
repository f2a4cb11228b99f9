package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/replication/isr"
	"github.com/ferry-mq/ferry/storage"
)

// Replica is this broker's replica of one partition: its log, the
// partition's role (leader or follower, the ISR, the high watermark),
// its idempotent producers, and the replica's lifecycle (open, close,
// delete, configs, retention, flush, recovery). A single-node partition
// is one with one replica, this broker, which leads it; there is no
// other kind.
//
// Visibility: records below the high watermark are what consumers see.
// With one replica it follows the log end of each acknowledged append
// (after fsync, for synced appends); with followers it will be the
// minimum log end offset of the in-sync replicas (replication/isr).
type Replica struct {
	topic    string
	index    int32
	brokerID int32
	log      *storage.Log
	logger   *slog.Logger
	// role is who leads in which epoch, the replicas and the ISR, as the
	// controller last said (one replica, this broker, until it says).
	role atomic.Pointer[Role]
	// epochs is the leader-epoch cache and its checkpoint file.
	epochs *epochHistory
	// onISRChange receives the leader's ISR change proposals, to write
	// them to the cluster metadata; nil on a single node (no followers,
	// so none are made).
	onISRChange func(*Replica, *isr.Proposal)
	// session is the broker's ZooKeeper session for the self-fencing rule
	// (selffence.go); nil on a single node.
	session *SessionGuard
	now     func() time.Time
	// producers is the idempotent producer state of this partition.
	producers *producerState

	// waiters is told of every change of WaitState; nil in tests that
	// build a partition alone.
	waiters *delayed.Purgatory
	// reads counts log reads, so tests can prove a waiting fetch reads
	// nothing until data arrives.
	reads atomic.Int64

	hw atomic.Int64
	// leaderHW is the leader's high watermark in the last fetch answer a
	// follower took, for its lag (FollowerLag).
	leaderHW atomic.Int64

	mu struct {
		sync.Mutex
		// visibleBytes counts the bytes appended below the high watermark
		// since the partition opened; it moves with hw under mu.
		visibleBytes int64
		// unacknowledgedBytes (a follower) are appended above the high
		// watermark, to be counted visible once it reaches the log end.
		unacknowledgedBytes int64
		// appendedBytes counts every byte appended since the partition
		// opened (follower fetches wait on it).
		appendedBytes int64
		// leader decides the high watermark and the ISR while this broker
		// leads; nil while it follows.
		leader *isr.Leader
		// replication is the leader's settings (min.insync.replicas,
		// replica.lag.time.max.ms).
		replication isr.Config
		// fenced is the last answer of fencedLocked, to log changes;
		// fenceAnnounced whether Fenced told the waiting produces.
		fenced, fenceAnnounced bool
		// roleExpiries is how many times the ZooKeeper session had
		// expired when the leadership was last given (SetRole): one more
		// since fences the leader until the controller gives it again.
		roleExpiries int
	}
}

// Config is what opening a partition needs.
type Config struct {
	Topic    string
	Index    int32
	BrokerID int32
	// Dir is the partition's directory, <data-dir>/<topic>-<index>.
	Dir string
	Log storage.Config
	// FS is the file system the log and snapshots live on (nil: the OS).
	FS storage.FS
	// FileCache bounds the open files of all partitions together.
	FileCache *storage.FileCache
	// OnFlush observes each fsync of the log (metrics).
	OnFlush func(time.Duration)
	// ProducerIDExpiration is producer.id.expiration.ms.
	ProducerIDExpiration time.Duration
	// Waiters is the broker's purgatory, told of every change of the
	// partition's WaitState.
	Waiters *delayed.Purgatory
	// Replication holds min.insync.replicas and replica.lag.time.max.ms.
	Replication isr.Config
	// OnISRChange receives the leader's ISR change proposals (the cluster
	// writes them to ZooKeeper and reports back with ISRCommitted or
	// ISRConflict); nil on a single node.
	OnISRChange func(*Replica, *isr.Proposal)
	// AwaitRole opens the partition without a leader, for a cluster's
	// broker, which learns its role from the controller (SetRole). A
	// single node leads its partitions at once, in the latest epoch of
	// their history.
	AwaitRole bool
	// HighWatermark is the one replication-offset-checkpoint recorded for
	// this partition (0 when it recorded none). With AwaitRole it is where
	// the high watermark starts, clamped to the log, so a restarted
	// follower, or a leader before its followers report, does not start
	// at the log start. A partition that leads at once (a single node)
	// ignores it: with one replica every record in the log is committed.
	HighWatermark int64
	// Session is the broker's ZooKeeper session, for a leader cut off
	// from the cluster to stop acting as leader (selffence.go); nil on a
	// single node: never fenced.
	Session *SessionGuard
	// Now is the clock of the leader's decisions (lag times); nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Open opens (creating when missing) the partition's log and restores what
// it owns from its directory.
func Open(cfg Config) (*Replica, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("topic", cfg.Topic, "partition", cfg.Index)
	producers := newProducerState(cfg.FS, cfg.Dir, cfg.ProducerIDExpiration, logger)
	l, err := storage.Open(cfg.Dir, cfg.Log, storage.Options{
		FS:        cfg.FS,
		Logger:    logger,
		OnFlush:   cfg.OnFlush,
		OnRoll:    func(int64) { producers.rolled.Store(true) },
		FileCache: cfg.FileCache,
	})
	if err != nil {
		return nil, err
	}
	producers.baseline = l.LogEndOffset() // not shared yet
	epochs, err := loadEpochs(cfg.FS, cfg.Dir, l.LogStartOffset(), l.LogEndOffset())
	if err != nil {
		l.Close()
		return nil, err
	}
	p := &Replica{topic: cfg.Topic, index: cfg.Index, brokerID: cfg.BrokerID, log: l, logger: logger,
		producers: producers, waiters: cfg.Waiters, epochs: epochs, onISRChange: cfg.OnISRChange, session: cfg.Session, now: cfg.Now}
	if p.now == nil {
		p.now = time.Now
	}
	producers.highWatermark = &p.hw
	p.mu.replication = cfg.Replication
	self := []int32{cfg.BrokerID}
	if cfg.AwaitRole {
		// The log may hold records the cluster never committed: the high
		// watermark is the last one known, until the leader says more.
		p.hw.Store(recoveredHighWatermark(cfg.HighWatermark, l.LogStartOffset(), l.LogEndOffset()))
		p.role.Store(&Role{Leader: NoLeader, LeaderEpoch: max(epochs.latest.Load(), 0), Replicas: self})
		return p, nil
	}
	alone := Role{Leader: cfg.BrokerID, LeaderEpoch: max(epochs.latest.Load(), 0), Replicas: self, ISR: self}
	p.hw.Store(l.LogEndOffset())
	if err := p.lead(alone, p.now()); err != nil {
		l.Close()
		return nil, err
	}
	p.role.Store(&alone)
	return p, nil
}

// recoveredHighWatermark is where a replica's high watermark starts after a
// restart: the checkpointed one, within the log as recovered (retention may
// have moved its start past it, a crash cut unflushed records below it),
// as Kafka's Partition does when it creates its log.
func recoveredHighWatermark(checkpointed, logStart, logEnd int64) int64 {
	return min(max(checkpointed, logStart), logEnd)
}

func (p *Replica) Topic() string { return p.topic }
func (p *Replica) Index() int32  { return p.index }

// Append writes batches as the leader and returns once the log has them
// (fsynced when opts.Sync); the partition stamps its leader epoch.
// Errors are storage's.
func (p *Replica) Append(batches []byte, opts storage.AppendOptions) (storage.AppendResult, error) {
	r := p.role.Load()
	if err := p.checkLeading(r); err != nil {
		return storage.AppendResult{}, err
	}
	opts.LeaderEpoch = r.LeaderEpoch
	res, err := p.log.Append(batches, opts)
	if err != nil {
		return res, err
	}
	if err := p.epochs.assign(r.LeaderEpoch, res.BaseOffset); err != nil {
		p.logger.Error("leader epoch checkpoint", "err", err)
	}
	p.appendedAsLeader(res.LastOffset+1, int64(len(batches)))
	return res, nil
}

// appendedAsLeader tells the leader's state the log now ends at end
// (the append's own end, not the log end: a later unsynced append must not
// count before it is durable) and counts the append's bytes.
func (p *Replica) appendedAsLeader(end, appended int64) {
	p.mu.Lock()
	p.mu.appendedBytes += appended
	p.mu.unacknowledgedBytes += appended
	if l := p.mu.leader; l != nil && l.Appended(end, p.now()).HighWatermarkAdvanced {
		p.setHighWatermarkLocked(l.HighWatermark())
	}
	p.mu.Unlock()
	p.notifyWaiters()
}

// setHighWatermarkLocked moves the HW forward. Bytes are counted visible
// exactly once the high watermark has caught up with the appends; until
// then a waiting fetch sees at least one byte (delayed: a high watermark
// beyond its offset), never more than exist. Expects mu.
func (p *Replica) setHighWatermarkLocked(hw int64) {
	if hw <= p.hw.Load() {
		return
	}
	p.hw.Store(hw)
	if hw >= p.log.LogEndOffset() {
		p.mu.visibleBytes += p.mu.unacknowledgedBytes
		p.mu.unacknowledgedBytes = 0
	}
}

// notifyWaiters tells the purgatory the partition's state changed: its
// high watermark, visible bytes or log start.
func (p *Replica) notifyWaiters() {
	if p.waiters == nil {
		return
	}
	if k := p.key(); p.waiters.Watched(k) {
		p.waiters.Notify(k, p.WaitState())
	}
}

func (p *Replica) key() delayed.Key { return delayed.Key{Topic: p.topic, Partition: p.index} }

// WaitState is what waiting fetches and produces count from
// (replication/delayed): the high watermark and the bytes below it, read
// without I/O.
func (p *Replica) WaitState() delayed.State {
	p.mu.Lock()
	st := delayed.State{HighWatermark: p.hw.Load(), VisibleBytes: p.mu.visibleBytes, AppendedBytes: p.mu.appendedBytes}
	p.mu.Unlock()
	st.LogStartOffset = p.log.LogStartOffset()
	st.LogEndOffset = p.log.LogEndOffset()
	p.producers.ready(p.log)
	st.LastStableOffset = p.producers.lastStable(st.HighWatermark)
	return st
}

// Read returns whole batches; consumers pass MaxOffset = HighWatermark.
func (p *Replica) Read(opts storage.ReadOptions, dst []byte) (storage.ReadResult, error) {
	p.reads.Add(1)
	return p.log.Read(opts, dst)
}

// OffsetForTimestamp is the base offset of the first batch with
// maxTimestamp >= ts, or -1.
func (p *Replica) OffsetForTimestamp(ts int64) (int64, error) {
	return p.log.OffsetForTimestamp(ts)
}

func (p *Replica) LogStartOffset() int64 { return p.log.LogStartOffset() }
func (p *Replica) LogEndOffset() int64   { return p.log.LogEndOffset() }

// HighWatermark is the offset below which records are visible to
// consumers: acknowledged by every in-sync replica.
func (p *Replica) HighWatermark() int64 { return p.hw.Load() }

func (p *Replica) LeaderEpoch() int32   { return p.role.Load().LeaderEpoch }
func (p *Replica) Leader() int32        { return p.role.Load().Leader }
func (p *Replica) Replicas() []int32    { return p.role.Load().Replicas }
func (p *Replica) ISR() []int32         { return p.role.Load().ISR }
func (p *Replica) Size() int64          { return p.log.Size() }
func (p *Replica) SegmentCount() int    { return p.log.SegmentCount() }
func (p *Replica) FlushedOffset() int64 { return p.log.FlushedOffset() }
func (p *Replica) Dir() string          { return p.log.Dir() }

// Reads counts the log reads since the partition opened (a diagnostic).
func (p *Replica) Reads() int64 { return p.reads.Load() }

// Failure is the error that failed the partition's log (it refuses appends
// until recovered), or nil.
func (p *Replica) Failure() error { return p.log.Failure() }

// Recover reopens a failed log (storage.Log.Recover) and moves the high
// watermark to the recovered log end: recovery fsynced everything it kept,
// so it is all durable, as after a restart. The producer state is dropped
// with it, to be reloaded from the snapshots and the recovered log.
func (p *Replica) Recover() (recovered bool, err error) {
	return p.producers.recover(func() (bool, error) {
		recovered, err := p.log.Recover()
		if recovered {
			p.appendedAsLeader(p.log.LogEndOffset(), 0)
		}
		return recovered, err
	}, p.log.LogEndOffset)
}

// LogConfig is the log's config in effect (compaction settings included).
func (p *Replica) LogConfig() storage.Config { return p.log.Config() }

// Clean runs one cleaning pass over the log up to this replica's own high
// watermark (leader or follower alike: every replica cleans its own log);
// opts.UpperBound is set here. Later, with transactions, the bound is the
// last stable offset.
func (p *Replica) Clean(opts storage.CleanOptions) (storage.CleanResult, error) {
	opts.UpperBound = p.LastStableOffset()
	opts.KeepEmpty = p.keepLastBatches()
	return p.log.Clean(opts)
}

// CleanerState measures the log's clean and dirty parts under the bounds
// Clean uses.
func (p *Replica) CleanerState(minLag time.Duration, now time.Time) (storage.CleanerState, error) {
	return p.log.CleanerState(p.LastStableOffset(), minLag, now)
}

// SetConfig applies changed topic configs to the log.
func (p *Replica) SetConfig(cfg storage.Config) { p.log.SetConfig(cfg) }

// EnforceRetention expires idle producers and deletes the segments the
// retention configs let go, then snapshots the producer state at the new
// log start. Failures are logged: the next tick tries again.
func (p *Replica) EnforceRetention(now time.Time) {
	if n := p.producers.expire(now); n > 0 {
		p.logger.Info("idle producers expired", "producers", n)
	}
	n, err := p.log.EnforceRetention(now)
	switch {
	case err != nil && !errors.Is(err, storage.ErrClosed):
		p.logger.Error("retention failed", "err", err)
	case n > 0:
		if err := p.epochs.truncateFromStart(p.log.LogStartOffset()); err != nil {
			p.logger.Error("leader epoch checkpoint", "err", err)
		}
		p.notifyWaiters() // a fetch waiting below the new start answers out of range
		p.logger.Info("retention deleted segments", "segments", n, "log_start_offset", p.log.LogStartOffset())
		p.snapshotProducers("retention")
	}
}

// MaybeFlush fsyncs the log when its flush policy says so, and snapshots
// the producer state after a segment roll.
func (p *Replica) MaybeFlush(now time.Time) {
	if err := p.log.MaybeFlush(now); err != nil && !errors.Is(err, storage.ErrClosed) {
		p.logger.Error("flush failed", "err", err)
	}
	if p.producers.rolled.Swap(false) {
		p.snapshotProducers("roll")
	}
}

// AdvanceStartOffset deletes the records below offset (DeleteRecords);
// errors are storage's.
func (p *Replica) AdvanceStartOffset(offset int64) error {
	if err := p.log.AdvanceStartOffset(offset); err != nil {
		return err
	}
	if err := p.epochs.truncateFromStart(p.log.LogStartOffset()); err != nil {
		p.logger.Error("leader epoch checkpoint", "err", err)
	}
	p.snapshotProducers("delete records") // and drop those below the new start
	p.notifyWaiters()
	return nil
}

// snapshotProducers writes the producer state snapshot; a failure is
// logged, never fatal: the state stays in memory and a restart replays more.
func (p *Replica) snapshotProducers(why string) {
	if err := p.producers.snapshot(p.log); err != nil && !errors.Is(err, storage.ErrClosed) {
		p.logger.Warn("producer state snapshot failed", "at", why, "err", err)
	}
}

// Close closes the log and, if the producer state may have changed since
// the partition opened, writes a snapshot at the final log end, so the next
// start replays nothing. The state is loaded before the log closes (a load
// reads the log) and snapshotted after (no append can slip in). A failed
// log gets no snapshot: the next start recovers it and replays from an
// older one.
func (p *Replica) Close() error {
	ps := p.producers
	snap := p.Failure() == nil && ps.changedSince(p.log.LogEndOffset())
	if snap {
		ps.ready(p.log)
	}
	if err := p.log.Close(); err != nil {
		return err
	}
	if snap {
		if err := ps.snapshot(p.log); err != nil {
			p.logger.Warn("producer state snapshot at close failed", "err", err)
		}
	}
	return nil
}

// Delete closes the partition, answers the requests waiting on it, and
// renames its directory to dir+suffix for the caller to remove in the
// background (a restart finds and removes it if the process dies first).
// It returns the renamed directory.
func (p *Replica) Delete(suffix string) (string, error) {
	p.log.Close()
	if p.waiters != nil {
		p.waiters.Notify(p.key(), delayed.State{Gone: true})
	}
	dir := p.log.Dir()
	gone := dir + suffix
	if err := os.Rename(dir, gone); err != nil {
		return "", fmt.Errorf("rename %s: %w", dir, err)
	}
	return gone, nil
}
