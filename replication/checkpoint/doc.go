// Package checkpoint reads and writes Kafka's checkpoint files: the small
// text files a broker keeps beside its logs, in the format of Kafka's
// CheckpointFile, so an operator who knows Kafka can read them with cat.
//
//	0            the format version, always 0
//	2            the number of entries that follow
//	0 0          one entry per line, fields separated by a space
//	3 1500
//
// Two kinds of entry exist:
//
//   - leader-epoch-checkpoint, one per partition directory:
//     "<epoch> <startOffset>", the partition's leader-epoch cache
//     (replication/epoch);
//   - replication-offset-checkpoint (each partition's high watermark) and
//     recovery-point-offset-checkpoint, one per data directory:
//     "<topic> <partition> <offset>".
//
// The codec is pure: Encode* build the bytes, Decode* parse bytes read from
// disk, which are untrusted. A decoder allocates for the lines actually
// present, never for the count a file claims, and every defect (unknown
// version, a count that does not match the lines, a field that is not a
// non-negative number, a bad topic name, a repeated partition) is an error
// wrapping ErrMalformed that names the line. As in Kafka, an empty file
// reads as no entries.
//
// WriteFile replaces a file atomically and durably (a temporary file,
// fsync, rename, fsync of the directory) through storage.FS, so tests can
// inject faults with storage/errorfs; ReadFile reads one bounded in size.
package checkpoint
