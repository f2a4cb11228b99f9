package server

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/storage"
)

// highWatermarks is the data dir's replication-offset-checkpoint, as
// Kafka's ReplicaManager keeps it: every local partition's high watermark,
// written every replica.high.watermark.checkpoint.interval.ms and at a
// clean shutdown, read once at start so a restarted replica resumes from
// the high watermark it last knew instead of its log start.
//
// A file that cannot be read or parsed does not stop the broker: it is
// logged and every partition starts at its log start, as if the file were
// missing. That is safe (a high watermark too low only delays
// visibility until the leader's answers raise it) and the next write
// replaces the file. Kafka instead takes the log dir offline, which for a
// broker with one data dir means not serving at all.
type highWatermarks struct {
	fs     storage.FS
	path   string
	logger *slog.Logger

	mu struct {
		sync.Mutex
		// recovered holds what the file said at start, for partitions not
		// opened yet; each entry is taken by the first open of its
		// partition, so a partition recreated later starts afresh.
		recovered map[TopicPartition]int64
		// written is the file's content as last read or written: an
		// unchanged state (an idle broker) is not rewritten.
		written []byte
	}
}

func loadHighWatermarks(fsys storage.FS, dataDir string, logger *slog.Logger) *highWatermarks {
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	h := &highWatermarks{fs: fsys, path: filepath.Join(dataDir, checkpoint.ReplicationOffsetFile), logger: logger}
	h.mu.recovered = map[TopicPartition]int64{}
	data, err := checkpoint.ReadFile(fsys, h.path)
	var entries []checkpoint.OffsetEntry
	if err == nil {
		entries, err = checkpoint.DecodeOffsets(data)
	}
	if err != nil {
		logger.Warn("high watermark checkpoint unreadable: partitions start at their log start until their leaders say more; the next checkpoint replaces it",
			"file", h.path, "err", err)
		return h
	}
	for _, e := range entries {
		h.mu.recovered[TopicPartition{Topic: e.Topic, Partition: e.Partition}] = e.Offset
	}
	h.mu.written = data
	return h
}

// take returns the recovered high watermark of a partition being opened
// (0, read as its log start, when the file did not list it) and forgets it.
func (h *highWatermarks) take(tp TopicPartition) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	hw := h.mu.recovered[tp]
	delete(h.mu.recovered, tp)
	return hw
}

// write replaces the file with the high watermarks of ps, unless they are
// what it already holds. Safe for concurrent use; the lock is the
// checkpoint's own, which no partition or connection waits on.
func (h *highWatermarks) write(ps []*replication.Replica) error {
	entries := make([]checkpoint.OffsetEntry, 0, len(ps))
	for _, p := range ps {
		entries = append(entries, checkpoint.OffsetEntry{Topic: p.Topic(), Partition: p.Index(), Offset: p.HighWatermark()})
	}
	// Sorted, so that the same state gives the same bytes.
	slices.SortFunc(entries, func(a, b checkpoint.OffsetEntry) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	data, err := checkpoint.EncodeOffsets(entries)
	if err != nil {
		return fmt.Errorf("high watermark checkpoint: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(data, h.mu.written) {
		return nil
	}
	if err := checkpoint.WriteFile(h.fs, h.path, data); err != nil {
		return fmt.Errorf("high watermark checkpoint: %w", err)
	}
	h.mu.written = data
	return nil
}

// checkpointHighWatermarks is the periodic write; a failure is logged and
// the next tick tries again.
func (b *Broker) checkpointHighWatermarks(time.Time) {
	if err := b.highWatermarks.write(b.openPartitions()); err != nil {
		b.logger.Warn("high watermark checkpoint not written", "err", err)
	}
}
