package recordbatch

import "encoding/binary"

// Put writes h as the header of batch, whose records are already in place
// after it: every field as h gives it, except Length, taken from
// len(batch), and the CRC, computed last since it covers the rest of the
// header. The caller keeps len(batch)-LogOverhead within an int32.
func (h Header) Put(batch []byte) {
	be := binary.BigEndian
	be.PutUint64(batch[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(batch[offLength:], uint32(len(batch)-LogOverhead))
	be.PutUint32(batch[offLeaderEpoch:], uint32(h.LeaderEpoch))
	batch[offMagic] = byte(h.Magic)
	be.PutUint16(batch[offAttributes:], uint16(h.Attributes))
	be.PutUint32(batch[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(batch[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(batch[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(batch[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(batch[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(batch[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(batch[offRecordCount:], uint32(h.RecordCount))
	be.PutUint32(batch[offCRC:], Checksum(batch[offAttributes:]))
}

// The fields the log assigns lie outside the CRC's range, so setting them
// leaves the CRC valid.

// SetBaseOffset rewrites the baseOffset of the batch at the start of b.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetLeaderEpoch rewrites the partitionLeaderEpoch of the batch at the
// start of b.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps the whole batch b with the broker's time, as
// Kafka does for LogAppendTime topics; attributes and maxTimestamp are
// inside the CRC, so it is recomputed.
func SetLogAppendTime(b []byte, ms int64) {
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrLogAppendTime)
	be.PutUint64(b[offMaxTimestamp:], uint64(ms))
	be.PutUint32(b[offCRC:], Checksum(b[offAttributes:]))
}

// SetDeleteHorizon stamps the batch b with a KIP-534 delete horizon (ms),
// as the cleaner does for a transaction marker it may remove once the
// horizon passes: the attribute bit and baseTimestamp, with the CRC
// recomputed.
func SetDeleteHorizon(b []byte, ms int64) {
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|AttrDeleteHorizon)
	be.PutUint64(b[offBaseTimestamp:], uint64(ms))
	be.PutUint32(b[offCRC:], Checksum(b[offAttributes:]))
}
