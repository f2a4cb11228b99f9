package replication

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/replication/epoch"
	"github.com/ferry-mq/ferry/storage"
)

// epochHistory is the partition's leader-epoch cache and its
// leader-epoch-checkpoint file (KIP-101), written whenever it changes,
// which is once per leader epoch, not per append.
type epochHistory struct {
	mu    sync.Mutex
	cache *epoch.Cache
	fs    storage.FS
	path  string
	// latest mirrors cache.LatestEpoch() so appends in the current epoch
	// (all but the first) skip the lock; written under mu.
	latest atomic.Int32
}

// loadEpochs reads the checkpoint and drops entries the log no longer
// holds (a crash after the cache was written but before the log was; a
// retention that ran before the checkpoint caught up).
func loadEpochs(fsys storage.FS, dir string, logStart, logEnd int64) (*epochHistory, error) {
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	h := &epochHistory{fs: fsys, path: filepath.Join(dir, checkpoint.LeaderEpochFile)}
	entries, err := checkpoint.ReadEpochs(fsys, h.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("leader epochs: %w", err)
	}
	h.cache = epoch.NewCache(entries)
	changed := h.cache.TruncateFromEnd(logEnd)
	changed = h.cache.TruncateFromStart(logStart) || changed
	if h.cache.Len() == 0 {
		// No history: a new partition, or a data dir from before the
		// history was kept, where a single node wrote every batch in epoch
		// 0. Epoch 0 from the log start, in memory only: a single node's
		// partitions never write the file, and a replica copying a later
		// epoch replaces the entry (Assign drops what the new one overlaps).
		h.cache.Assign(0, logStart)
	}
	h.latest.Store(h.cache.LatestEpoch())
	if changed {
		return h, h.writeLocked()
	}
	return h, nil
}

// assign records that epoch starts at offset (a leader's first append in
// its epoch, becoming leader, a follower copying a batch of a new epoch).
func (h *epochHistory) assign(e int32, offset int64) error {
	if h.latest.Load() == e {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.cache.Assign(e, offset) {
		return nil
	}
	h.latest.Store(h.cache.LatestEpoch())
	return h.writeLocked()
}

// truncateFromEnd and truncateFromStart follow the log's cuts.
func (h *epochHistory) truncateFromEnd(end int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.cache.TruncateFromEnd(end) {
		return nil
	}
	h.latest.Store(h.cache.LatestEpoch())
	return h.writeLocked()
}

func (h *epochHistory) truncateFromStart(start int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.cache.TruncateFromStart(start) {
		return nil
	}
	return h.writeLocked()
}

// answer is what the leader says to OffsetForLeaderEpoch.
func (h *epochHistory) answer(current int32, req epoch.Request, logEnd int64) (epoch.EndOffset, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return epoch.LeaderAnswer(h.cache, current, req, logEnd)
}

func (h *epochHistory) entries() []epoch.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache.Entries()
}

func (h *epochHistory) writeLocked() error {
	if err := checkpoint.WriteEpochs(h.fs, h.path, h.cache.Entries()); err != nil {
		return fmt.Errorf("write %s: %w", h.path, err)
	}
	return nil
}
