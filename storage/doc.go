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
//	  cleaner-offset-checkpoint         "0\n<offset>\n": the cleaner's first
//	                                    dirty offset (compacted logs)
//	  00000000000000001180.snapshot     producer state; written and read by
//	                                    replication/ (its producersnapshot.go)
//	  00000000000000001200.txnindex     aborted transactions whose abort
//	                                    marker is in that segment (Kafka's
//	                                    layout; txnindex.go), when any
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
// # Compaction
//
// Clean (cleaner.go) is one pass of Kafka's log cleaner over a log whose
// caller chose it; the broker owns the goroutines, the choice of the
// dirtiest log and the settings. A pass:
//
//  1. Bounds: the dirty range runs from the first dirty offset (the
//     cleaner checkpoint) to the first uncleanable offset, the base of
//     the first segment that is active, holds an offset at or above the
//     caller's bound (high watermark, later the last stable offset) or
//     the recovery point, or a record newer than min.compaction.lag.ms.
//  2. Map: an OffsetMap of fixed size (key MD5 → latest offset) is filled
//     from the dirty range's data batches, whole batches only, until it is
//     full; the pass cleans up to where it stopped, the rest waits.
//  3. Rewrite: the segments below that end, from the log's start, in
//     groups of consecutive segments whose sizes sum to at most
//     segment.bytes (so small segments merge), each group into one
//     segment named by its first base. Per batch a classification step
//     (CleanOptions.Classify: clean its records, keep it whole, drop it
//     whole) is where transactions plug in: by default Kafka's rules
//     (cleanertxn.go) drop aborted data and, a delete.retention.ms after a
//     pass found their transaction without data, markers (the marker's
//     record timestamp becomes its horizon). A record survives when it has
//     a key (keyless ones are dropped, as Kafka counts them invalid), no
//     later record of its key is in the map, and it is not a tombstone
//     whose delete horizon has passed. A batch is copied byte for byte
//     when all its records survive; otherwise server/records (through
//     RecordCodec, so storage imports nothing of server/) writes a copy
//     with the same baseOffset, lastOffsetDelta, producer fields and
//     codec, so offsets never change (gaps), the batch's last offset
//     survives for producer state, and readers from any offset land on
//     the next survivor. A batch left empty is dropped, unless
//     CleanOptions.KeepEmpty keeps it (replication keeps each live
//     producer's last batch, as Kafka does, so producer state rebuilt
//     from the log finds its epoch and sequence): then its header alone
//     stays, an uncompressed batch of no records, until a later pass finds
//     it no longer its producer's last.
//  4. Tombstones follow KIP-534: a batch below the pass's end that keeps
//     a tombstone and has no delete horizon gets one, now +
//     delete.retention.ms, in its baseTimestamp with attribute bit 6
//     (record timestamp deltas re-based, so timestamps do not change); a
//     later pass drops its tombstones once the horizon has passed.
//
// A group is replaced through Kafka's .cleaned/.swap protocol (swap.go):
//
//	<base>.log.cleaned           written, fsynced; open deletes it
//	<base>.log.<next>.swap       renamed, dir fsynced: the commit point
//	                             (next: the first offset it does not replace)
//	old .log/.index/.timeindex   removed for every base in [base, next)
//	<base>.log                   the swap renamed into place, dir fsynced
//
// Open deletes .cleaned files and completes every .swap it finds before
// listing segments, so a crash at any point leaves each group either old
// or cleaned, never both and never neither; groups are swapped from the
// log's start on, so a crash between groups leaves the log cleaned below
// some segment boundary and untouched above it. Kafka's swap name carries
// no range and recovery finds the replaced segments from the swap's
// offsets; ferry names the range because a group whose last segments
// were cleaned empty ends below their base offsets. The cleaned segment
// gets no index files: they are rebuilt on first use, like any missing
// index. A pass first fsyncs the log up to its bound and cleans only
// below the recovery point: a map built from records a crash could still
// lose would let it drop the older records they replace, and the rescan
// after a crash never meets a cleaned segment it must truncate.
// The pass copies without the write lock (appends, reads and retention go
// on); the swap takes it for its renames and checks that the group is
// still in the list as read, else drops the file. A failure after the
// commit point fails the log (ErrFailed): reopening completes the swap.
// The checkpoint is written after the last swap; a crash before it
// repeats the pass, which is idempotent. A truncation below it (a
// follower cut back to its leader) lowers it durably before touching a
// file, a pass that a truncation overlapped records none, and Open clamps
// it to the log end, so records appended again are mapped.
//
// Gaps: a follower copying a compacted leader appends with KeepOffsets
// batches that may start above its log end; reads from an offset inside
// a gap land on the next batch; a Chunk checks the base offset of the
// batch its read found, so one opened after a swap replaced its file is
// refused (ErrChunkChanged) rather than sending another batch.
// CleanerState measures the clean and dirty bytes for the broker's
// choice of the dirtiest log; Compaction in Config carries the topic's
// settings to it.
//
// # Testing twins
//
// All file access goes through FS. storage/errorfs wraps an FS to inject
// torn writes, ENOSPC, fsync errors or hooks at exact points, and counts the
// bytes read (the startup and read-cost tests use it). storage/memfs is an
// in-memory FS that can produce the image a crash would leave: a kill -9
// (every byte and name written), a crash (fsynced bytes, plus a random
// part of the rest) or a power loss (also each directory's entries as of
// its last fsync plus a prefix of the changes since), for crash tests and
// fuzzing. The cleaner's crash test takes all three at every file
// operation of a pass and of the recovery after it.
//
// # Concurrency
//
// All methods of Log are safe for concurrent use. There are no goroutines
// of its own: flushing by time is the caller's MaybeFlush ticker, retention
// the caller's EnforceRetention ticker, compaction the caller's Clean.
package storage
