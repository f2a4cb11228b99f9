package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/replication/fetcher"
	"github.com/ferry-mq/ferry/storage"
)

// Broker is the single-node core. Create it with Open; every method is safe
// for concurrent use; Close stops the background loops and closes the logs
// cleanly so the next start does not rescan them.
type Broker struct {
	cfg    Config
	logger *slog.Logger

	// deleteChecks counts a cluster delete's checks that found the topic
	// still described here (deleteClusterTopic): a test waits for them
	// instead of for time.
	deleteChecks atomic.Int64

	// adminMu serialises topic changes (create, delete, add partitions,
	// configs) so the metadata file is written by one at a time; produce and
	// fetch never take it.
	adminMu sync.Mutex

	// metadata is where topics are recorded (Config.Metadata).
	metadata replication.Metadata

	// throttle is the replication throttle's rates (throttle.go).
	throttle replicationThrottle
	// dynamicLog is the log defaults with the dynamic broker configs
	// applied (log.retention.ms, …; dynamicconfigs.go); nil: cfg.Log.
	dynamicLog atomic.Pointer[storage.Config]
	// dynamicSources says which log defaults are dynamic, and at which
	// level, for describing topic configs' synonyms.
	dynamicSources atomic.Pointer[map[string]string]
	// dynamicCleaner and dynamicMinISR are the cleaner settings and
	// min.insync.replicas in force (nil, 0: cfg's).
	dynamicCleaner atomic.Pointer[CleanerConfig]
	dynamicMinISR  atomic.Int32
	// cleaner runs the log cleaner threads; set before Open returns.
	cleaner *logCleaner

	mu struct {
		sync.RWMutex
		topics map[string]*topic
		closed bool
	}

	// unkeyedCursor spreads unkeyed records: each request's unkeyed records
	// go to the next partition in turn, as one batch (like Kafka's sticky
	// partitioner, which sticks per batch).
	unkeyedCursor atomic.Uint32

	// idem owns idempotent producers' state and producer ids (idempotence.go).
	idem idempotence
	// txn is what the transaction coordinator plugged in (txnpartition.go).
	txn txnHooks

	// maxPartitions bounds the partitions this broker holds (partitionLimit).
	maxPartitions int
	// logFiles is the open-file cache all partition logs share.
	logFiles *storage.FileCache

	// waiters holds fetches waiting for data (fetchwait.go); partitions
	// notify it on every high-watermark move.
	waiters *delayed.Purgatory
	// fetchers copy the partitions this broker follows from their leaders.
	fetchers *fetcher.Manager
	// controllerEpoch is the newest controller epoch a LeaderAndIsr,
	// StopReplica or UpdateMetadata came from (older ones are refused).
	controllerEpoch atomic.Int32
	// cluster is the controller's last UpdateMetadata (clusterview.go).
	cluster clusterViewHolder
	// remote caches the topics this broker holds no replica of
	// (remotetopics.go).
	remote remoteTopics
	// leadership tells coordinators which partitions this broker leads.
	leadership leadershipWatchers
	// highWatermarks is the replication-offset-checkpoint (hwcheckpoint.go).
	highWatermarks *highWatermarks

	stop     chan struct{}
	wg       sync.WaitGroup
	toDelete chan string
}

// topic is an immutable snapshot: a change builds a new one and swaps it in
// under Broker.mu, so produce and fetch read it without locking.
type topic struct {
	meta       topicMeta
	settings   topicSettings
	partitions []*replication.Replica
}

// Open loads the topic table from cfg.DataDir, opens every partition's log
// and starts the background loops.
func Open(cfg Config, logger *slog.Logger) (*Broker, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	metadata := cfg.Metadata
	if metadata == nil {
		local, err := replication.OpenLocalMetadata(cfg.DataDir, cfg.BrokerID)
		if err != nil {
			return nil, err
		}
		metadata = local
	}
	// A cluster's broker must not adopt another broker's logs; a single
	// node may be renumbered.
	if err := replication.CheckDataDir(cfg.DataDir, cfg.BrokerID, metadata.ClusterID(), cfg.Metadata != nil); err != nil {
		return nil, err
	}
	recorded, err := metadata.Topics()
	if err != nil {
		return nil, fmt.Errorf("read topic metadata: %w", err)
	}
	var tms []topicMeta
	for _, t := range recorded {
		tms = append(tms, topicMetaOf(t))
	}
	b := &Broker{
		metadata: metadata,
		cfg:      cfg,
		logger:   logger.With("component", "broker"),
		stop:     make(chan struct{}),
		toDelete: make(chan string, 1024),

		maxPartitions: partitionLimit(cfg.MaxPartitions),
		logFiles:      storage.NewFileCache(openFilesLimit(cfg.MaxOpenLogFiles)),
		waiters:       delayed.New(nil),
	}
	b.highWatermarks = loadHighWatermarks(cfg.LogFS, cfg.DataDir, b.logger)
	b.fetchers = newFetcherManager(cfg, b)
	b.mu.topics = make(map[string]*topic, len(tms))
	ts, err := b.openTopics(tms, false)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		b.mu.topics[t.meta.Name] = t
	}
	b.removeHalfCreated()
	b.queueLeftoverDeletes()
	b.registerMetrics()
	b.startLoops()
	b.logger.Info("broker open", "data_dir", cfg.DataDir, "topics", len(tms))
	return b, nil
}

// openTopic opens (or, when fresh, creates anew) the logs of a topic.
func (b *Broker) openTopic(tm topicMeta, fresh bool) (*topic, error) {
	ts, err := b.openTopics([]topicMeta{tm}, fresh)
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// openTopics opens the logs of all partitions of tms side by side
// (inParallel); on error it closes (when fresh, removes) what it opened.
func (b *Broker) openTopics(tms []topicMeta, fresh bool) ([]*topic, error) {
	type job struct{ t, p int }
	var jobs []job
	ts := make([]*topic, len(tms))
	for i, tm := range tms {
		ts[i] = &topic{meta: tm, settings: b.resolveSettings(tm.Configs), partitions: make([]*replication.Replica, tm.Partitions)}
		for p := 0; p < int(tm.Partitions); p++ {
			if b.holdsReplica(tm, int32(p)) {
				jobs = append(jobs, job{i, p})
			}
		}
	}
	errs := make([]error, len(jobs))
	inParallel(len(jobs), func(k int) {
		j := jobs[k]
		t := ts[j.t]
		t.partitions[j.p], errs[k] = b.openPartition(t.meta.Name, int32(j.p), t.settings, fresh)
	})
	i := slices.IndexFunc(errs, func(err error) bool { return err != nil })
	if i < 0 {
		return ts, nil
	}
	for _, t := range ts {
		opened := slices.DeleteFunc(t.partitions, func(p *replication.Replica) bool { return p == nil })
		if fresh {
			b.discardPartitions(t.meta.Name, opened, 0, t.meta.Partitions)
		} else {
			closePartitions(opened)
		}
	}
	return nil, errs[i] // the first is enough: the others are alike
}

func (b *Broker) openPartition(name string, index int32, s topicSettings, fresh bool) (*replication.Replica, error) {
	dir := b.partitionDir(name, index)
	recoveredHW := b.highWatermarks.take(TopicPartition{Topic: name, Partition: index})
	if fresh {
		recoveredHW = 0 // an older partition's, of a topic deleted since
		// A directory left by a crash between creating logs and recording the
		// topic must not leak old records into a new topic of the same name.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%w: clear %s: %v", ErrStorage, dir, err)
		}
		if err := markCreating(dir); err != nil {
			return nil, fmt.Errorf("%w: create %s: %v", ErrStorage, dir, err)
		}
	}
	p, err := replication.Open(replication.Config{
		Topic:                name,
		Index:                index,
		BrokerID:             b.cfg.BrokerID,
		Dir:                  dir,
		Log:                  s.log,
		FS:                   b.cfg.LogFS,
		FileCache:            b.logFiles,
		OnFlush:              b.flushObserver(),
		ProducerIDExpiration: b.cfg.ProducerIDExpiration,
		Waiters:              b.waiters,
		Replication:          s.replication(b.cfg.ReplicaLagTimeMax),
		AwaitRole:            b.cfg.AwaitRoles,
		HighWatermark:        recoveredHW,
		OnISRChange:          b.proposeISR,
		Session:              b.cfg.ZooKeeperSession,
		Logger:               b.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: open %s-%d: %v", ErrStorage, name, index, err)
	}
	b.cfg.Metrics.LeaderElected() // this node leads every partition it opens
	return p, nil
}

func (b *Broker) partitionDir(name string, index int32) string {
	return filepath.Join(b.cfg.DataDir, name+"-"+strconv.Itoa(int(index)))
}

func closePartitions(ps []*replication.Replica) {
	for _, p := range ps {
		if p != nil {
			p.Close()
		}
	}
}

// lookup returns the current snapshot of a topic.
func (b *Broker) lookup(name string) (*topic, error) {
	b.mu.RLock()
	t, ok := b.mu.topics[name]
	closed := b.mu.closed
	b.mu.RUnlock()
	if closed {
		return nil, ErrShuttingDown
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	return t, nil
}

// Partition returns one partition of a topic, as the listeners see it.
func (b *Broker) Partition(topicName string, index int32) (Partition, error) {
	p, err := b.partition(topicName, index)
	if err != nil {
		return nil, err // not a nil *replication.Partition in an interface
	}
	return p, nil
}

// partition returns the partition itself, for the core's own use.
func (b *Broker) partition(topicName string, index int32) (*replication.Replica, error) {
	t, err := b.lookup(topicName)
	if err != nil {
		return nil, b.heldElsewhere(topicName, index, err)
	}
	return t.partition(index)
}

// heldElsewhere turns a lookup's unknown topic into NOT_LEADER_OR_FOLLOWER
// when the cluster knows the partition and only this broker holds none of
// it (its replica moved away, or never was here), as Kafka answers: the
// client refreshes its metadata instead of giving up on the topic.
func (b *Broker) heldElsewhere(topicName string, index int32, err error) error {
	if !errors.Is(err, ErrUnknownTopic) {
		return err
	}
	view, ok := b.Cluster()
	if !ok {
		return err
	}
	if _, known := view.Partition(topicName, index); !known {
		return err
	}
	return fmt.Errorf("%w: this broker holds no replica of %s-%d", ErrNotLeader, topicName, index)
}

func (t *topic) partition(index int32) (*replication.Replica, error) {
	if index < 0 || int(index) >= len(t.partitions) {
		return nil, fmt.Errorf("%w: %s has no partition %d (it has %d)",
			ErrUnknownPartition, t.meta.Name, index, len(t.partitions))
	}
	if p := t.partitions[index]; p != nil {
		return p, nil
	}
	// A cluster's broker holds only the partitions assigned to it; the
	// client learns from Metadata where the others are.
	return nil, fmt.Errorf("%w: this broker holds no replica of %s-%d", ErrNotLeader, t.meta.Name, index)
}

// holdsReplica says whether this broker is assigned a replica of tm's
// partition p (on a single node: every partition).
func (b *Broker) holdsReplica(tm topicMeta, p int32) bool {
	return int(p) >= len(tm.replicas) || slices.Contains(tm.replicas[p], b.cfg.BrokerID)
}

// BrokerID is this node's id.
func (b *Broker) BrokerID() int32 { return b.cfg.BrokerID }

// ClusterID is the id the cluster metadata holds (on one node: written
// into the data dir at first start).
func (b *Broker) ClusterID() string { return b.metadata.ClusterID() }

// Config returns the broker's effective configuration.
func (b *Broker) Config() Config { return b.cfg }

func (b *Broker) startLoops() {
	b.wg.Add(6)
	go b.every(b.cfg.ReplicaLagTimeMax/2, b.tickLeaders)
	go b.every(b.cfg.HighWatermarkCheckpointInterval, b.checkpointHighWatermarks)
	go b.every(b.cfg.RetentionCheckInterval, b.enforceRetention)
	go b.every(b.cfg.FlushCheckInterval, b.flushDue)
	go b.every(b.cfg.FailedLogProbeInterval, b.probeFailedLogs)
	go b.deleter()
	b.cleaner = newLogCleaner(b)
	b.cleaner.start()
	if b.cfg.ZooKeeperSession != nil {
		b.wg.Add(1)
		go b.every(fenceCheckInterval, b.CheckFences)
	}
}

// fenceCheckInterval is how often leaders are checked for self-fencing
// while the ZooKeeper session is cut: the fence starts at most this late.
const fenceCheckInterval = 200 * time.Millisecond

// CheckFences lets every leader fence itself now if it must
// (replication/fence), so produces waiting for acks=all on a fenced
// leader answer at once; nothing to do while the session is connected.
func (b *Broker) CheckFences(now time.Time) {
	if !b.cfg.ZooKeeperSession.Cut(now) {
		return
	}
	b.eachPartition(func(p *replication.Replica) { p.Fenced() })
}

func (b *Broker) every(interval time.Duration, fn func(time.Time)) {
	defer b.wg.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-tick.C:
			fn(now)
		}
	}
}

// eachPartition calls fn for every partition of the current topics.
func (b *Broker) eachPartition(fn func(*replication.Replica)) {
	for _, p := range b.openPartitions() {
		fn(p)
	}
}

// openPartitions is every partition of the current topics this broker
// holds a replica of.
func (b *Broker) openPartitions() []*replication.Replica {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var ps []*replication.Replica
	for _, t := range b.mu.topics {
		for _, p := range t.partitions {
			if p != nil {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

func (b *Broker) enforceRetention(now time.Time) {
	b.eachPartition(func(p *replication.Replica) { p.EnforceRetention(now) })
}

func (b *Broker) flushDue(now time.Time) {
	b.eachPartition(func(p *replication.Replica) { p.MaybeFlush(now) })
}

// deleteSuffix marks a partition directory whose topic was deleted; the
// deleter removes it, and a restart finishes what a crash interrupted.
const deleteSuffix = "-delete"

func (b *Broker) deleter() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			return
		case dir := <-b.toDelete:
			if err := os.RemoveAll(dir); err != nil {
				b.logger.Error("remove deleted partition", "dir", dir, "err", err)
			}
		}
	}
}

func (b *Broker) queueLeftoverDeletes() {
	entries, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), deleteSuffix) {
			select {
			case b.toDelete <- filepath.Join(b.cfg.DataDir, e.Name()):
			default:
			}
		}
	}
}

// Close stops the loops and closes every log cleanly (flush, clean-shutdown
// marker). In-flight requests get ErrShuttingDown or storage.ErrClosed.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return nil
	}
	b.mu.closed = true
	b.mu.Unlock()
	b.waiters.Close()  // waiting fetches answer now with what they have
	b.fetchers.Close() // no follower append after the logs close
	close(b.stop)
	b.wg.Wait()
	return b.closeLogs()
}

// closeLogs closes every partition, then checkpoints their high
// watermarks: with the fetchers and loops stopped and the logs closed,
// none moves any more, so the file holds the final ones.
func (b *Broker) closeLogs() error {
	ps := b.openPartitions()
	errs := make([]error, len(ps), len(ps)+1)
	inParallel(len(ps), func(i int) {
		if err := ps[i].Close(); err != nil {
			errs[i] = fmt.Errorf("close %s-%d: %w", ps[i].Topic(), ps[i].Index(), err)
		}
	})
	if err := b.highWatermarks.write(ps); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// logIOWorkers is how many partitions open or close at once: each close
// waits on a few fsyncs and each open on a few small reads, which a disk
// serves side by side, so startup and shutdown of many partitions take a
// fraction of doing them one by one.
const logIOWorkers = 16

// inParallel runs fn(0..n-1) on up to logIOWorkers goroutines and returns
// when all are done.
func inParallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(n, logIOWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// LocalReplicas lists the partitions this broker holds a replica of, for
// DescribeLogDirs (sizes, where each log ends).
func (b *Broker) LocalReplicas() []Partition {
	ps := b.openPartitions()
	out := make([]Partition, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}
