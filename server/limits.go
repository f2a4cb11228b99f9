package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/storage"
)

// MaxAutoCreatePerRequest bounds how many unknown topics one Metadata
// request may auto-create. Topics beyond it answer
// UNKNOWN_TOPIC_OR_PARTITION, which clients retry: a producer of a few new
// topics gets them on its next refresh, a request naming 100k does not
// create 100k.
const MaxAutoCreatePerRequest = 16

// DefaultMaxPartitions is max.partitions when not configured. Partitions
// hold no file descriptors while idle (their files are opened through one
// bounded storage.FileCache), so descriptors no longer bound them; memory
// and startup time do, both a few KiB and a few tens of microseconds per
// idle partition (make test-long measures them).
const DefaultMaxPartitions = 100_000

// partitionLimit is the broker-wide bound on partitions: the configured
// max.partitions or DefaultMaxPartitions. Without it one client could
// create topics until memory or startup time gives out.
func partitionLimit(configured int) int {
	if configured > 0 {
		return configured
	}
	return DefaultMaxPartitions
}

// openFilesLimit is the budget of the broker's log file cache: the
// configured ferry.log.open.files.max, or a quarter of the process's
// file-descriptor soft limit, leaving half for Kafka connections
// (max.connections defaults to half) and a quarter for listeners,
// transient files and everything else.
func openFilesLimit(configured int) int {
	if configured > 0 {
		return configured
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return storage.DefaultMaxOpenFiles
	}
	return int(max(min(rl.Cur/4, 1<<20), 16))
}

// checkPartitionBudget refuses adding n partitions when the broker would
// exceed its partition limit. Callers hold adminMu.
func (b *Broker) checkPartitionBudget(n int32) error {
	have := 0
	b.mu.RLock()
	for _, t := range b.mu.topics {
		have += int(t.meta.Partitions)
	}
	b.mu.RUnlock()
	if have+int(n) > b.maxPartitions {
		return fmt.Errorf("%w: %d more partitions would make %d on this broker; max.partitions is %d",
			ErrPartitionLimit, n, have+int(n), b.maxPartitions)
	}
	return nil
}

// creatingMarker sits in a partition directory from before its log is
// created until the topic is recorded in the metadata, so a start after a
// crash in between can tell a half-created partition from data.
const creatingMarker = ".ferry-creating"

func markCreating(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, creatingMarker), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// createdPartitions clears the markers of partitions now recorded.
func (b *Broker) createdPartitions(name string, from, to int32) {
	for i := from; i < to; i++ {
		if err := os.Remove(filepath.Join(b.partitionDir(name, i), creatingMarker)); err != nil && !os.IsNotExist(err) {
			b.logger.Warn("clear create marker", "topic", name, "partition", i, "err", err)
		}
	}
}

// discardPartitions closes and removes the partitions of a failed create:
// a failed create leaves nothing on disk.
func (b *Broker) discardPartitions(name string, ps []*replication.Replica, from, to int32) {
	closePartitions(ps)
	for i := from; i < to; i++ {
		dir := b.partitionDir(name, i)
		if err := os.RemoveAll(dir); err != nil {
			b.logger.Error("remove partition of failed create", "dir", dir, "err", err)
		}
	}
}

// removeHalfCreated deletes partition directories that still carry the
// create marker but belong to no recorded partition (a crash or failure
// during a create), and clears the marker of recorded ones. Directories
// without a marker are never touched: they may be data.
func (b *Broker) removeHalfCreated() {
	entries, err := os.ReadDir(b.cfg.DataDir)
	if err != nil {
		return
	}
	recorded := map[string]bool{}
	for _, t := range b.mu.topics {
		for i := int32(0); i < t.meta.Partitions; i++ {
			recorded[t.meta.Name+"-"+strconv.Itoa(int(i))] = true
		}
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), deleteSuffix) {
			continue
		}
		dir := filepath.Join(b.cfg.DataDir, e.Name())
		marker := filepath.Join(dir, creatingMarker)
		if _, err := os.Stat(marker); err != nil {
			continue
		}
		if recorded[e.Name()] {
			os.Remove(marker)
			continue
		}
		b.logger.Warn("removing half-created partition", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			b.logger.Error("remove half-created partition", "dir", dir, "err", err)
		}
	}
}
