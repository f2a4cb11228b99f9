package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Producer state snapshots: <20-digit offset>.snapshot in the partition
// directory, next to the segments (Kafka's ProducerStateManager keeps the
// same files, in its own format). A snapshot at offset N holds the state
// after every idempotent batch below N, so a restart loads it and replays
// only the batches from N on. The format is ferry's own, version 2, all
// integers big endian:
//
//	 0  version         uint8   2
//	 1  crc             uint32  CRC-32C (Castagnoli, recordbatch.Checksum) of bytes 5 to the end
//	 5  offset          int64   N; equals the file name
//	13  producerCount   uint32
//	17  producers, sorted by id, each:
//	      producerId       int64
//	      producerEpoch    int16
//	      lastTimestamp    int64   maxTimestamp of its last batch
//	      lastAppend       int64   broker clock (ms) at its last append
//	      coordinatorEpoch int32   of its last transaction marker, -1: none
//	      txnFirstOffset   int64   its ongoing transaction's first offset,
//	                               below N; -1: none
//	      batchCount       uint8   0..5, oldest first; 0 only for a
//	                               producer with transaction state
//	      batches, each:
//	        firstSeq         int32
//	        lastSeq          int32
//	        baseOffset       int64   below N
//	        lastOffsetDelta  int32   lastOffset - baseOffset, >= 0
//
// A file that fails any check (short, other version, bad CRC, counts that
// do not fit the bytes present, offsets at or above N) is ignored and the
// state comes from an older snapshot or from the log. Version 1 (before
// transactions) is ignored so: the first load after an upgrade replays.

const (
	snapshotVersion    = 2
	snapshotSuffix     = ".snapshot"
	snapshotHeaderSize = 17
	snapshotEntrySize  = 39
	snapshotBatchSize  = 20
	// snapshotsKept is how many snapshots a partition keeps: the newest
	// and one older, in case the newest turns out unreadable.
	snapshotsKept = 2
)

// ErrCorruptSnapshot marks a producer state snapshot that fails its checks.
var ErrCorruptSnapshot = errors.New("corrupt producer state snapshot")

// snapshotName is the file name of the snapshot at offset.
func snapshotName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, snapshotSuffix)
}

// parseSnapshotName returns the offset a snapshot file name carries.
func parseSnapshotName(name string) (int64, bool) {
	if len(name) != 20+len(snapshotSuffix) || name[20:] != snapshotSuffix {
		return 0, false
	}
	var off int64
	for _, c := range name[:20] {
		if c < '0' || c > '9' || off > (math.MaxInt64-9)/10 {
			return 0, false
		}
		off = off*10 + int64(c-'0')
	}
	return off, true
}

// snapshotProducer is one producer's entry, copied out of its lock.
type snapshotProducer struct {
	id            int64
	epoch         int16
	lastTimestamp int64
	lastAppend    int64
	batches       []seqBatch
	// Transaction state (transactions.go).
	coordinatorEpoch int32
	txnFirst         int64
}

// snapshotted says whether the snapshot keeps p: a producer with nothing
// to check or no transaction state is as good as unknown.
func (p snapshotProducer) snapshotted() bool {
	return len(p.batches) > 0 || p.txnFirst != noTxn || p.coordinatorEpoch >= 0
}

// encodeSnapshot writes the state at offset; producers without batches or
// transaction state are left out.
func encodeSnapshot(offset int64, producers []snapshotProducer) []byte {
	sort.Slice(producers, func(i, j int) bool { return producers[i].id < producers[j].id })
	size, count := snapshotHeaderSize, 0
	for _, p := range producers {
		if p.snapshotted() {
			size += snapshotEntrySize + len(p.batches)*snapshotBatchSize
			count++
		}
	}
	b := make([]byte, snapshotHeaderSize, size)
	b[0] = snapshotVersion
	binary.BigEndian.PutUint64(b[5:], uint64(offset))
	binary.BigEndian.PutUint32(b[13:], uint32(count))
	for _, p := range producers {
		if !p.snapshotted() {
			continue
		}
		b = binary.BigEndian.AppendUint64(b, uint64(p.id))
		b = binary.BigEndian.AppendUint16(b, uint16(p.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.lastTimestamp))
		b = binary.BigEndian.AppendUint64(b, uint64(p.lastAppend))
		b = binary.BigEndian.AppendUint32(b, uint32(p.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.txnFirst))
		b = append(b, byte(len(p.batches)))
		for _, sb := range p.batches {
			b = binary.BigEndian.AppendUint32(b, uint32(sb.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(sb.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(sb.baseOffset))
			b = binary.BigEndian.AppendUint32(b, uint32(sb.lastOffset-sb.baseOffset))
		}
	}
	binary.BigEndian.PutUint32(b[1:], recordbatch.Checksum(b[5:]))
	return b
}

// decodeSnapshot checks a snapshot and returns its offset and producers.
// Every count is bounded by the bytes present before anything is allocated.
func decodeSnapshot(b []byte) (int64, []snapshotProducer, error) {
	if len(b) < snapshotHeaderSize {
		return 0, nil, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrCorruptSnapshot, len(b), snapshotHeaderSize)
	}
	if b[0] != snapshotVersion {
		return 0, nil, fmt.Errorf("%w: version %d, want %d", ErrCorruptSnapshot, b[0], snapshotVersion)
	}
	if crc := binary.BigEndian.Uint32(b[1:]); crc != recordbatch.Checksum(b[5:]) {
		return 0, nil, fmt.Errorf("%w: CRC mismatch", ErrCorruptSnapshot)
	}
	offset := int64(binary.BigEndian.Uint64(b[5:]))
	count := binary.BigEndian.Uint32(b[13:])
	if offset < 0 || uint64(count) > uint64(len(b)-snapshotHeaderSize)/snapshotEntrySize {
		return 0, nil, fmt.Errorf("%w: offset %d, %d producers in %d bytes", ErrCorruptSnapshot, offset, count, len(b))
	}
	producers := make([]snapshotProducer, 0, count)
	rest := b[snapshotHeaderSize:]
	for i := uint32(0); i < count; i++ {
		p, n, err := decodeSnapshotProducer(rest, offset)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: producer %d: %v", ErrCorruptSnapshot, i, err)
		}
		if i > 0 && p.id <= producers[i-1].id {
			return 0, nil, fmt.Errorf("%w: producer ids out of order", ErrCorruptSnapshot)
		}
		producers = append(producers, p)
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes after the last producer", ErrCorruptSnapshot, len(rest))
	}
	return offset, producers, nil
}

func decodeSnapshotProducer(b []byte, offset int64) (snapshotProducer, int, error) {
	if len(b) < snapshotEntrySize {
		return snapshotProducer{}, 0, errors.New("truncated")
	}
	p := snapshotProducer{
		id:            int64(binary.BigEndian.Uint64(b)),
		epoch:         int16(binary.BigEndian.Uint16(b[8:])),
		lastTimestamp: int64(binary.BigEndian.Uint64(b[10:])),
		lastAppend:    int64(binary.BigEndian.Uint64(b[18:])),
		// Transaction state.
		coordinatorEpoch: int32(binary.BigEndian.Uint32(b[26:])),
		txnFirst:         int64(binary.BigEndian.Uint64(b[30:])),
	}
	n := int(b[38])
	size := snapshotEntrySize + n*snapshotBatchSize
	switch {
	case p.id < 0:
		return p, 0, fmt.Errorf("producer id %d", p.id)
	case n > producerBatchesKept:
		return p, 0, fmt.Errorf("%d batches", n)
	case p.txnFirst < noTxn || p.txnFirst >= offset || p.coordinatorEpoch < -1:
		return p, 0, fmt.Errorf("transaction from %d, coordinator epoch %d", p.txnFirst, p.coordinatorEpoch)
	case n == 0 && p.txnFirst == noTxn && p.coordinatorEpoch < 0:
		return p, 0, errors.New("no batches and no transaction state")
	case len(b) < size:
		return p, 0, errors.New("truncated")
	}
	if n == 0 {
		return p, size, nil
	}
	p.batches = make([]seqBatch, n)
	for i := range p.batches {
		e := b[snapshotEntrySize+i*snapshotBatchSize:]
		sb := seqBatch{
			firstSeq:   int32(binary.BigEndian.Uint32(e)),
			lastSeq:    int32(binary.BigEndian.Uint32(e[4:])),
			baseOffset: int64(binary.BigEndian.Uint64(e[8:])),
		}
		delta := int32(binary.BigEndian.Uint32(e[16:]))
		if sb.baseOffset < 0 || delta < 0 || sb.baseOffset >= offset-int64(delta) {
			return p, 0, fmt.Errorf("batch at %d+%d in a snapshot at %d", sb.baseOffset, delta, offset)
		}
		sb.lastOffset = sb.baseOffset + int64(delta)
		p.batches[i] = sb
	}
	return p, size, nil
}
