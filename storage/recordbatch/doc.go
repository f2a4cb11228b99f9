// Package recordbatch is the one home of Kafka's record batch format (magic
// v2) in ferry: its layout, its CRC-32C, parsing and checking a header,
// writing one, splitting concatenated batches, and the header fields the
// broker rewrites. Everything that reads or writes a batch header goes
// through it: storage (append, recovery, reads, the sendfile check),
// server/records (the record codec inside a batch: building, decoding,
// validating and recompressing), the core (idempotence, produce limits)
// and replication (follower appends, producer state). It imports nothing
// of ferry, so every layer may use it without a cycle.
//
// One batch, big endian; batchLength counts the bytes after its own field;
// the CRC is CRC-32C (Castagnoli) over bytes 21 to the end of the batch:
//
//	offset  size  field
//	 0      8     baseOffset            assigned by the log (outside the CRC)
//	 8      4     batchLength
//	12      4     partitionLeaderEpoch  set by the log (outside the CRC)
//	16      1     magic (2)
//	17      4     crc
//	21      2     attributes: bits 0-2 codec, 3 LogAppendTime,
//	                          4 transactional, 5 control,
//	                          6 delete horizon (KIP-534)
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp          rewritten, with the CRC, for LogAppendTime
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records, compressed as a whole when the codec is not none
//
// The records themselves (varint framing, keys, values, headers) and the
// codecs are server/records' business; this package sees them as bytes.
//
// Everything here is pure computation over byte slices: no I/O, no
// allocation on success, safe for concurrent use.
package recordbatch
