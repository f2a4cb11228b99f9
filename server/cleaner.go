package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/throttle"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

// logCleaner runs Kafka's log cleaner threads: each picks the dirtiest
// compacted log it may (chooseDirtiest), runs one storage pass over it up
// to the replica's own high watermark, and backs off when none needs
// cleaning. Every replica, leader or follower, cleans its own log.
type logCleaner struct {
	b   *Broker
	cfg CleanerConfig

	// want is how many threads should run (log.cleaner.threads, which a
	// dynamic broker config changes): thread i ends once i >= want.
	want atomic.Int32

	mu struct {
		sync.Mutex
		busy    map[*replication.Replica]bool
		bucket  throttle.Bucket // log.cleaner.io.max.bytes.per.second, all threads
		running int             // threads started and not yet ended
	}
}

func newLogCleaner(b *Broker) *logCleaner {
	c := &logCleaner{b: b, cfg: b.cfg.Cleaner}
	c.want.Store(int32(c.cfg.Threads))
	c.mu.busy = map[*replication.Replica]bool{}
	if c.cfg.throttled() {
		rate := c.cfg.IOMaxBytesPerSecond
		c.mu.bucket = throttle.NewBucket(rate, rate, throttle.Unbounded, rate, time.Now())
	}
	return c
}

// start launches the threads, tracked by the broker's wait group.
func (c *logCleaner) start() { c.setThreads(int(c.want.Load())) }

// setThreads makes n threads run: more start now, extra ones end after
// their current pass. A disabled cleaner stays off.
func (c *logCleaner) setThreads(n int) {
	if c.cfg.Disabled || n < 1 {
		return
	}
	c.want.Store(int32(n))
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.mu.running < n; c.mu.running++ {
		c.b.wg.Add(1)
		go c.run(c.mu.running)
	}
}

// retire ends thread i if the wanted count dropped to i or below; only
// the highest-numbered thread retires, so the numbers stay dense.
func (c *logCleaner) retire(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < int(c.want.Load()) || i != c.mu.running-1 {
		return false
	}
	c.mu.running--
	return true
}

// run is cleaner thread i; its offset map, its share of
// log.cleaner.dedupe.buffer.size, is allocated on its first pass.
func (c *logCleaner) run(i int) {
	defer c.b.wg.Done()
	var m *storage.OffsetMap
	for {
		if c.retire(i) {
			return
		}
		p, cfg := c.grab(time.Now())
		if p == nil {
			select {
			case <-c.b.stop:
				return
			case <-time.After(c.b.cleanerDefaults().Backoff):
			}
			continue
		}
		if m == nil {
			m = storage.NewOffsetMap(int(c.cfg.DedupeBufferSize / int64(max(c.want.Load(), 1))))
		}
		c.clean(p, cfg, m)
		c.release(p)
		select {
		case <-c.b.stop:
			return
		default:
		}
	}
}

// grab chooses the dirtiest free compacted log and marks it busy.
func (c *logCleaner) grab(now time.Time) (*replication.Replica, storage.Compaction) {
	var ps []*replication.Replica
	var cands []cleanCandidate
	for _, p := range c.b.openPartitions() {
		cfg := p.LogConfig().Compaction
		if !cfg.Enabled {
			continue
		}
		st, err := p.CleanerState(cfg.MinLag, now)
		if err != nil {
			continue
		}
		ps = append(ps, p)
		cands = append(cands, cleanCandidate{state: st, cfg: cfg})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range ps {
		cands[i].busy = c.mu.busy[p]
	}
	i := chooseDirtiest(cands, now)
	if i < 0 {
		return nil, storage.Compaction{}
	}
	c.mu.busy[ps[i]] = true
	return ps[i], cands[i].cfg
}

func (c *logCleaner) release(p *replication.Replica) {
	c.mu.Lock()
	delete(c.mu.busy, p)
	c.mu.Unlock()
}

// clean runs one pass; failures are logged and the log is tried again on
// a later round.
func (c *logCleaner) clean(p *replication.Replica, cfg storage.Compaction, m *storage.OffsetMap) {
	start := time.Now()
	opts := storage.CleanOptions{
		Codec:            records.Cleaner{MaxDecompressed: c.b.cfg.MaxDecompressedBytes},
		Map:              m,
		MinCompactionLag: cfg.MinLag,
		DeleteRetention:  cfg.DeleteRetention,
		Stop:             c.b.stop,
	}
	if c.cfg.throttled() {
		opts.Throttle = c.throttle
	}
	res, err := p.Clean(opts)
	logger := c.b.logger.With("topic", p.Topic(), "partition", p.Index())
	switch {
	case err != nil && !errors.Is(err, storage.ErrClosed) && !errors.Is(err, storage.ErrCleanStopped):
		logger.Error("log cleaning failed", "err", err)
	case res.CleanedTo > 0:
		logger.Info("log cleaned", "first_dirty", res.FirstDirty, "cleaned_to", res.CleanedTo,
			"segments_in", res.SegmentsIn, "segments_out", res.SegmentsOut,
			"bytes_read", res.BytesRead, "bytes_written", res.BytesWritten,
			"records_removed", res.RecordsRemoved, "took", time.Since(start))
	}
}

// throttle takes n bytes from the shared bucket and waits while it owes.
func (c *logCleaner) throttle(n int) {
	c.mu.Lock()
	now := time.Now()
	c.mu.bucket.Refill(now)
	c.mu.bucket.Take(float64(n))
	wait := c.mu.bucket.Until(0, time.Second)
	c.mu.Unlock()
	if wait <= 0 {
		return
	}
	select {
	case <-c.b.stop:
	case <-time.After(wait):
	}
}
