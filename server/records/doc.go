// Package records owns the records inside Kafka's record batches (magic v2)
// for ferry: it encodes records into batches, decodes and validates batches
// that any Kafka client produced, compresses and decompresses batch
// payloads, and computes Kafka's default key partition.
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
//   - Kafka produce: the core checks a client's batches with
//     [CheckProduced] before appending them, so that a malformed batch is
//     refused rather than stored and served to every consumer. The
//     [Produced] it returns keeps them parsed and decompressed for the
//     other checks a topic may ask for (record rules, schema validation)
//     and for recompression: one parse and at most one decompression per
//     batch, however many look at it. [Validate] is the same check for a
//     single batch.
//   - Clients older than Kafka 0.11 speak the legacy message formats (magic
//     0 and 1, see legacy.go): [UpConvert] turns a produced message set into
//     one v2 batch before Validate, and [AppendLegacy] rewrites fetched
//     batches as a message set for Fetch v0–v3. The log only ever holds v2.
//
// The batch around the records (the 61-byte header, its CRC-32C, the
// framing of concatenated batches) is storage/recordbatch's, which draws the
// layout; this package reads and writes headers only through it, and owns
// what lies after the header.
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
