package server

import (
	"context"
	"encoding/binary"
)

// The seams between the transaction coordinator (server/txn) and the
// partitions it writes to. The coordinator decides; the partitions'
// leaders append its commit and abort markers. Both sides meet here, so a
// coordinator on one broker and a partition leader on another talk through
// Kafka's own WriteTxnMarkers and AddPartitionsToTxn requests, and on one
// node through these calls directly.

// TxnMarker asks the leader of Topic/Partition to end one producer's
// transaction there: a control batch (Kafka's EndTxnMarker) with the
// producer's id and epoch, written as acks=all.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Topic            string
	Partition        int32
	// TxnEpoch, when HasTxnEpoch, is the producer epoch of the data the
	// marker ends. Kafka's coordinators and tools do not say it, nor
	// does a transaction.version 1 end; a version 2 coordinator does, so
	// that a resent marker of a transaction the partition closed already
	// (the next transaction, whose epoch is this marker's, may have begun
	// there) is answered as written and appends nothing.
	TxnEpoch    int16
	HasTxnEpoch bool
	// Probe asks, instead of a marker, whether the producer has a
	// transaction open on the partition (replication.Replica.ProbeTxn):
	// nothing is appended; the answer is nil when none is open (and any
	// verification granted to its batches is revoked), ErrTxnOpen when
	// one is. Between brokers the tagged field TxnProbeTag.
	Probe bool
}

// DataEpoch is the producer epoch of the data m ends, when m says it
// (HasTxnEpoch with an epoch); known false otherwise: the marker ends
// whatever transaction its producer has open.
func (m TxnMarker) DataEpoch() (epoch int16, known bool) {
	if m.HasTxnEpoch && m.TxnEpoch >= 0 {
		return m.TxnEpoch, true
	}
	return 0, false
}

// TxnVerifier answers KIP-890 part 1's question before a leader appends a
// transactional batch: is this partition in the producer's ongoing
// transaction? It returns 0 when it is, else the coordinator's Kafka
// error code (INVALID_TXN_STATE, PRODUCER_FENCED, NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, ...), which the produce is answered with,
// PRODUCER_FENCED as INVALID_PRODUCER_EPOCH; so a late, delayed produce
// cannot land in a later transaction.
type TxnVerifier interface {
	VerifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) (errorCode int16)
}

// TxnPartitionAdder is KIP-890 part 2's (transaction.version 2) answer
// to the same question: a produce v12+ or TxnOffsetCommit v5+ of a
// partition not yet in the producer's transaction adds it there (the
// client sends no AddPartitionsToTxn or AddOffsetsToTxn), written at the
// coordinator before the batch is appended. Same codes as TxnVerifier.
type TxnPartitionAdder interface {
	AddTxnPartition(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) (errorCode int16)
}

// TxnMarkerListener learns of every marker this broker's leader replicas
// made durable: the group coordinator materializes or drops a producer's
// transactional offset commits on __consumer_offsets when its marker
// lands there.
//
// dataEpoch, when dataEpochKnown, is the producer epoch of the data the
// marker ends (TxnMarker.DataEpoch, a transaction.version 2 end): the
// producer's next transaction, of a later epoch, may have begun on the
// partition before this marker was told (its markers are written ahead
// of it, server/txn's doc), so a listener decides only what that
// epoch wrote. Unknown (transaction.version 1, Kafka's tools, an
// operator's abort): the marker ends all the producer has open there, no
// transaction runs ahead of it.
//
// The same decision may be told more than once: a resent marker whose
// transaction the partition had closed already appends nothing and is
// told again once its acks=all wait succeeds (its first copy's wait may
// have failed untold); offset is then the log end at the resend, not
// the first copy's. Listeners must take a repeat as a no-op. Within a
// partition markers are told in log order, except such a repeat, which
// may come after the next transaction's data.
type TxnMarkerListener interface {
	TxnMarkerWritten(topic string, partition int32, producerID int64, dataEpoch int16, dataEpochKnown, commit bool, offset int64)
}

// TxnEpochTag is the tagged field (WriteTxnMarkers v1+, on each marker
// entry) in which a ferry coordinator tells another ferry broker the
// TxnEpoch of its markers. The number is far from Kafka's own tags;
// Kafka brokers skip tags they do not know.
const TxnEpochTag uint32 = 0x6665

// TxnProbeTag is the tagged field (WriteTxnMarkers v1+, on each marker
// entry, empty) by which a ferry coordinator makes an entry a probe
// (TxnMarker.Probe). A broker that does not know it (Kafka's, or a ferry
// broker older than the tag) reads an abort marker: the coordinator sends
// probes with producer and coordinator epochs of -1, which such a broker
// refuses as older than the producer's last marker there.
const TxnProbeTag uint32 = 0x6667

// EncodeTxnEpochTag is TxnEpochTag's value: the epoch, big-endian.
func EncodeTxnEpochTag(epoch int16) []byte {
	return binary.BigEndian.AppendUint16(nil, uint16(epoch))
}

// DecodeTxnEpochTag reads TxnEpochTag's value; false when it is not two
// bytes or not an epoch.
func DecodeTxnEpochTag(v []byte) (int16, bool) {
	if len(v) != 2 {
		return 0, false
	}
	epoch := int16(binary.BigEndian.Uint16(v))
	return epoch, epoch >= 0
}
