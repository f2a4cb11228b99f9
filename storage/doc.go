// Package storage is ferry's partition log: one partition's record batches,
// stored byte for byte as producers sent them, in segment files with sparse
// offset and time indexes, recovered after a crash, trimmed by retention.
// It knows nothing of topics, networks or Kafka requests; the server core
// owns a *Log per partition and gives it the partition's directory.
//
// # On-disk format
//
// A partition directory, as Apache Kafka lays it out:
//
//	<dir>/
//	  00000000000000000000.log        segment: batches with offsets [0, 1200)
//	  00000000000000000000.index      its sparse offset index
//	  00000000000000000000.timeindex  its sparse time index
//	  00000000000000001200.log        the active segment (appends go here)
//	  00000000000000001200.index
//	  00000000000000001200.timeindex
//	  recovery-point-offset-checkpoint  "0\n<offset>\n": all below is fsynced
//	  log-start-offset-checkpoint       "0\n<offset>\n": first readable offset
//	  .clean-shutdown                   only between Close and the next Open
//	  00000000000000001180.snapshot     producer state; written and read by
//	                                    replication/ (its producersnapshot.go)
//
// A segment is named by its base offset (20 digits) and holds whole record
// batches, magic v2, back to back, as received except for the fields the
// broker assigns: baseOffset and partitionLeaderEpoch (outside the CRC), and
// for LogAppendTime topics the timestamp type bit and maxTimestamp (with the
// CRC recomputed). The batch layout, its CRC and every header parse live in
// storage/recordbatch, whose package doc draws it; to storage the records
// after the 61-byte header are opaque.
//
// The two index files hold entry i of the same sparse index, one entry per
// IndexIntervalBytes of log (the first batch of a segment has none, as at
// position 0 a scan starts anyway):
//
//	.index      relOffset uint32 | position uint32         (8 bytes, big endian)
//	.timeindex  timestamp int64  | relOffset uint32        (12 bytes)
//
// relOffset is the base offset of the batch at position, minus the segment's
// base. timestamp is the largest maxTimestamp of all batches before that
// batch, so timestamps never decrease and a binary search finds where a scan
// for "first batch with maxTimestamp >= ts" must start. The active segment's
// entries also live in memory; a sealed segment's are read on first use and
// kept in a process-wide cache of bounded size (256 MiB of entries), which
// drops the least recently used and rereads them from the files when needed.
//
// The entry sizes are Kafka's, the meaning differs slightly: Kafka's offset
// entry names the batch's last offset and its time entries are (max
// timestamp so far, its offset) at their own pace. Index files written by
// Kafka therefore fail ferry's checks (the entry must name the batch found
// at its position; both files must agree) and are rebuilt from the segment,
// which is slower but correct; segment files are interchangeable.
//
// # Reads
//
// A read takes the segment list and the log end under a short lock, then
// works without it: binary search for the segment, binary search in its
// index, a forward scan of batch headers (about one index interval), and one
// pread of up to MaxBytes, trimmed to whole batches. A segment deleted by
// retention meanwhile stays open until the last reader releases it.
//
// A ChunksOnly read returns, instead of the bytes, the ranges of segment
// files that hold them (Chunk, chunk.go), for the Kafka listener's
// zero-copy fetch: a chunk opens its file through the FS, checks that a
// batch still starts there, and writes itself to a connection (sendfile on
// the real disk) or copies itself, so no caller opens a segment by path.
//
// # Open files
//
// No file is held open for its own sake. Segment, index and recovery
// checkpoint files of every log are opened through a FileCache (one per
// broker, given in Options; pebble's table cache is the model): a handle is
// opened on first use, held with a reference count for the length of one
// read, append, fsync or scan, and when no one holds it it joins an LRU of
// idle handles, from which the least recently used is closed once the
// cache is over its budget. So a partition neither written nor read holds
// no descriptor, the active segment included (its next append reopens its
// .log; the index files are touched once per IndexIntervalBytes), and a
// node needs at most the budget whatever its partition count; the budget
// is passed only while every open handle is in use. Opening a log opens no
// segment file (sizes come from stat), and a clean open reads only the
// active segment's index and tail. A deleted segment's .log is pinned
// open until its last reader is done, since an unlinked file cannot be
// reopened. Files outside the cache are open only within one call
// (reading an index or checkpoint, fsyncing the directory), except an
// opened Chunk's, which its caller holds until the chunk is sent and
// closed (the Kafka listener caps them per connection).
//
// A handle with written but not yet fsynced bytes may be closed by the
// cache; the fsync that follows reopens the file. Linux (4.16 on) reports
// to a new descriptor a writeback error that no descriptor has seen, so
// the group commit still learns of it, unless the kernel dropped the
// file's inode from memory in between (possible once its pages are no
// longer dirty): a narrow gap kept so that idle partitions hold nothing.
//
// # Durability and recovery
//
// Appends serialise on the log's write lock and write(2) under it; fsync
// never runs under it. Sync appends share fsyncs (group commit): a waiter
// that finds no fsync in flight fsyncs up to the current end, covering every
// appender that wrote before it started. After each fsync the recovery point
// checkpoint is rewritten in place, without its own fsync: it may lag, never
// lead. A write or fsync error fails the log (ErrFailed): appends are
// refused from then on, since after a failed fsync the page cache can no
// longer be trusted to hold what was acknowledged.
//
// Open follows these rules:
//
//   - .clean-shutdown present (Close fsynced data and indexes): trust the
//     index files; read only the active segment's index and its tail from
//     the last entry. The marker is deleted (and the directory fsynced) by
//     the first change to the log, append, roll, retention or truncation,
//     so a later crash looks unclean, while a partition that stays idle
//     costs no write at open and none at Close.
//   - Otherwise rescan from the recovery point only: in the segment holding
//     it, index entries below it are trusted (the last one is checked against
//     the batch it names); from there on every batch is checked (length,
//     magic, CRC, offsets increasing) and the file is truncated at the first
//     bad one, with every later segment deleted. Indexes of rescanned
//     segments are rebuilt; everything is fsynced before Open returns.
//   - Segments below are never read at startup. An index file that is
//     missing, short, or invalid is rebuilt from its segment when first used:
//     its longest valid prefix is kept and the scan resumes from there.
//   - Segments wholly below log-start-offset-checkpoint are deleted (a crash
//     between persisting a new start offset and deleting the files).
//
// Every length and offset read from disk is bounds-checked; corrupt bytes
// end a scan or a read with an ErrCorrupt-wrapped error, never a panic.
//
// # Testing twins
//
// All file access goes through FS. storage/errorfs wraps an FS to inject
// torn writes, ENOSPC, fsync errors or hooks at exact points, and counts the
// bytes read (the startup and read-cost tests use it). storage/memfs is an
// in-memory FS that can produce the image a power loss would leave (only
// fsynced bytes, plus a random part of the rest), for crash tests and fuzzing.
//
// # Concurrency
//
// All methods of Log are safe for concurrent use. There are no goroutines
// of its own: flushing by time is the caller's MaybeFlush ticker, retention
// the caller's EnforceRetention ticker.
package storage
