package storage

// This file pins the API that server/ builds on. The implementation lives in
// the other files of this package; signatures here change only with the core.

import (
	"errors"
	"log/slog"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Sentinel errors. Callers match them with errors.Is.
var (
	// ErrCorrupt marks bytes on disk or on the wire that are not a valid
	// record batch (bad length, magic, CRC, offsets). Recovery truncates a
	// corrupt tail; Append rejects a corrupt batch and writes nothing.
	// It is the format's own error (storage/recordbatch).
	ErrCorrupt = recordbatch.ErrCorrupt
	// ErrOffsetOutOfRange: a read below the log start offset or above the
	// log end offset.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrClosed: the log was closed or deleted.
	ErrClosed = errors.New("log closed")
	// ErrInvalidOffsets: AppendOptions.KeepOffsets with batches whose offsets
	// do not continue the log (one starts below the end or its predecessor).
	ErrInvalidOffsets = errors.New("batch offsets do not continue the log")
	// ErrBatchTooLarge: a batch over Config.MaxBatchBytes.
	ErrBatchTooLarge = errors.New("record batch too large")
	// ErrFailed: an earlier write or fsync failed, so the log refuses
	// appends rather than risk acknowledging data that is not on disk.
	// Recover (or reopening the log) runs crash recovery and is the way out.
	ErrFailed = errors.New("log failed after a write or fsync error")
)

// Config holds one partition log's settings. The zero value is usable:
// Defaults fills every zero field with Kafka's default.
type Config struct {
	// SegmentBytes rolls the active segment once it would exceed this size
	// (log.segment.bytes / segment.bytes). Default 1 GiB.
	SegmentBytes int64
	// SegmentMaxAge rolls the active segment once its first batch is older
	// than this (log.roll.ms / segment.ms). Default 7 days.
	SegmentMaxAge time.Duration
	// IndexIntervalBytes is how many log bytes pass between two entries of
	// the sparse offset and time indexes (log.index.interval.bytes). Default 4096.
	IndexIntervalBytes int
	// RetentionTime deletes closed segments whose newest record is older
	// than this (log.retention.ms). Negative: keep forever. Default 7 days.
	RetentionTime time.Duration
	// RetentionBytes deletes the oldest closed segments while the log is
	// larger than this (log.retention.bytes). Negative: no limit. Default -1.
	RetentionBytes int64
	// FlushMessages fsyncs once this many records were appended since the
	// last fsync (log.flush.interval.messages). 0 or negative: never by count.
	FlushMessages int64
	// FlushInterval fsyncs from MaybeFlush once the oldest unflushed append
	// is older than this (log.flush.interval.ms). 0: never by time.
	FlushInterval time.Duration
	// MaxBatchBytes rejects a single batch larger than this
	// (message.max.bytes / max.message.bytes). 0: no limit.
	MaxBatchBytes int
	// Compaction holds the cleaner's settings for this log. Storage only
	// keeps them, with the rest of the log's config, for the broker's
	// cleaner to read (Config); they take no defaults here.
	Compaction Compaction
}

// Compaction is a log's compaction settings (the topic's cleanup.policy
// and compaction configs over the broker's log.cleaner.* defaults).
type Compaction struct {
	// Enabled: cleanup.policy holds compact.
	Enabled bool
	// MinCleanableRatio: the log is cleaned once its dirty part is more
	// than this share of its cleanable bytes (min.cleanable.dirty.ratio).
	MinCleanableRatio float64
	// MinLag: records newer than this are not cleaned (min.compaction.lag.ms).
	MinLag time.Duration
	// MaxLag: a log with a dirty record older than this is cleaned
	// whatever its ratio (max.compaction.lag.ms); 0: never forced.
	MaxLag time.Duration
	// DeleteRetention: how long tombstones stay after the pass that first
	// cleaned past them (delete.retention.ms).
	DeleteRetention time.Duration
}

// Options are the dependencies of a Log; the zero value uses the real disk,
// slog.Default and time.Now.
type Options struct {
	FS     FS
	Logger *slog.Logger
	Now    func() time.Time
	// OnFlush, when set, is called after every successful fsync of the log
	// with how long it took (the broker feeds a flush latency histogram;
	// storage knows nothing of metrics). It runs on the flushing goroutine
	// without locks held and must be quick.
	OnFlush func(time.Duration)
	// FileCache bounds the descriptors of this log's files, shared with
	// the other logs given the same cache. Nil: a process-wide cache of
	// DefaultMaxOpenFiles.
	FileCache *FileCache
	// OnRoll, when set, is called with the new active segment's base offset
	// each time the log rolls (the broker snapshots its producer state at
	// rolls). It runs under the log's write lock and must only note the
	// event: no I/O, no call back into the log.
	OnRoll func(base int64)
}

// AppendOptions say how Append treats the batches it is given.
type AppendOptions struct {
	// LeaderEpoch is written into every batch's partitionLeaderEpoch field.
	LeaderEpoch int32
	// LogAppendTime, when true, stamps every batch with the broker's time
	// (timestamp type bit set, maxTimestamp rewritten, CRC recomputed), as
	// Kafka does for message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// Sync makes Append return only after the appended bytes are fsynced.
	// Concurrent synced appends share fsyncs (group commit).
	Sync bool
	// KeepOffsets appends batches with the offsets they carry (a follower
	// copying its leader) instead of assigning new ones. The first batch
	// must start at or above LogEndOffset: a compacted leader's log has
	// gaps, where a whole batch was cleaned away.
	// The batches are then stored exactly as given: LeaderEpoch and
	// LogAppendTime are ignored, since a copy keeps the leader's epoch and
	// timestamps. Later batches must start above the previous one's last
	// offset (gaps are allowed, as after compaction).
	KeepOffsets bool
	// ChecksumVerified says the caller has just checked every batch's CRC
	// (the broker does, before decompressing a producer's batches), so
	// Append does not compute it a second time. Everything else is still
	// checked.
	ChecksumVerified bool
}

// AppendResult describes what Append wrote.
type AppendResult struct {
	BaseOffset    int64 // offset of the first record appended
	LastOffset    int64 // offset of the last record appended
	LogAppendTime int64 // ms since epoch when LogAppendTime was used, else -1
	MaxTimestamp  int64 // largest maxTimestamp among the appended batches
	Records       int64 // number of records appended
}

// ReadOptions bound a read.
type ReadOptions struct {
	// Offset is the first offset wanted. The batch that contains it is
	// returned whole (its base offset may be lower).
	Offset int64
	// MaxBytes bounds the total size of the returned batches.
	MaxBytes int
	// MinOneBatch returns the first batch even when it alone exceeds MaxBytes
	// (Kafka's KIP-74), so a consumer never stalls on a large batch.
	MinOneBatch bool
	// MaxOffset, when positive, is exclusive: no batch whose last offset is
	// >= MaxOffset is returned (the high watermark for consumers).
	MaxOffset int64
	// ChunksOnly finds the batches' byte ranges (ReadResult.Chunks)
	// without reading their bytes: Data stays dst. It reads one batch
	// header per batch instead, for a caller that sends the ranges from
	// the files (sendfile) rather than from memory.
	ChunksOnly bool
	// CopyBelow, with ChunksOnly, reads the bytes into Data after all (as
	// a read without ChunksOnly does, Chunks still saying where they lie)
	// when fewer than CopyBelow bytes can be returned: the read starts in
	// the log's last segment with less than that left in it. One pread
	// costs less than what a chunk costs its sender (an open, a header
	// check, a seek, a sendfile and a close), and a consumer at the log
	// end reads small ranges. The caller tells the two results apart by
	// whether Data grew.
	CopyBelow int
}
