// Package records owns Kafka's record batch format (magic v2) for ferry: it
// encodes records into batches, decodes and validates batches that any Kafka
// client produced, compresses and decompresses batch payloads, and computes
// Kafka's default key partition.
//
// Data flows through it in three ways:
//
//   - HTTP produce: the gateway feeds JSON records to a [Builder] (pooled and
//     reused, so a request allocates per batch, not per record) and appends
//     the batch from [Builder.AppendBatch] to the partition log byte for byte.
//     [PartitionForKey] picks the partition of keyed records exactly as the
//     Java client does, so HTTP and Kafka producers agree on placement.
//   - HTTP consume: the gateway hands the bytes a log read returned to
//     [Decode], which walks the concatenated batches, decompresses each one
//     under a size cap, skips control batches and records below the wanted
//     offset, and calls back once per record.
//   - Kafka produce: the binary listener calls [Validate] on each produced
//     batch before appending it, so that a malformed batch is refused rather
//     than stored and served to every consumer.
//   - Clients older than Kafka 0.11 speak the legacy message formats (magic
//     0 and 1, see legacy.go): [UpConvert] turns a produced message set into
//     one v2 batch before Validate, and [AppendLegacy] rewrites fetched
//     batches as a message set for Fetch v0–v3. The log only ever holds v2.
//
// The on-the-wire layout of one batch (big endian; length counts the bytes
// after the length field; the CRC is CRC-32C over bytes 21 to the end):
//
//	offset  size  field
//	 0      8     baseOffset
//	 8      4     batchLength
//	12      4     partitionLeaderEpoch
//	16      1     magic (2)
//	17      4     crc
//	21      2     attributes: bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records, compressed as a whole when the codec is not None
//
// Each record is: length varint, attributes int8, timestampDelta varlong,
// offsetDelta varint, key (varint length, -1 for null, then bytes), value
// (likewise), header count varint, and per header a varint-length key and a
// nullable value. Kafka's varints are zigzag encoded, which is exactly what
// encoding/binary's AppendVarint and Varint do.
//
// The record codec is written here rather than taken from kmsg.Record because
// the hot paths must not allocate per record (kmsg.Record needs a precomputed
// Length and its own []kmsg.Header per record) and because every length read
// from untrusted input must be checked before it sizes anything. The tests
// cross-check both directions against kmsg and against franz-go's batches.
//
// Everything here is pure computation over byte slices: no I/O, no goroutines.
// Codec state (gzip, lz4 and zstd readers and writers, decode buffers) lives in
// sync.Pools, so all functions are safe for concurrent use.
package records
