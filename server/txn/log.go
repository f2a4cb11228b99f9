package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/ownership"
)

// StateTopic is the internal topic holding every transactional id's
// metadata, in Kafka's record formats: key version 0 (the transactional
// id), value version 0 (or 1, flexible, when read), a null value
// (tombstone) for an expired id.
const StateTopic = "__transaction_state"

// StatePartition is the partition of __transaction_state holding id's
// metadata among n, as Kafka chooses it (ownership.JavaHashPartition).
func StatePartition(id string, n int32) int32 { return ownership.JavaHashPartition(id, n) }

// errBadRecord: a __transaction_state record this version cannot read.
var errBadRecord = errors.New("txn: unreadable __transaction_state record")

// stateKey encodes the key of id's records.
func stateKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

// stateValue encodes t as value version 0, as Kafka 3.x writes it, or 1
// (Kafka 4's, with tagged fields) for the work of a transaction.version 2
// end (ClientTransactionVersion, PreviousProducerId, NextProducerId), so
// a coordinator loading it completes a rotation of the producer id and
// recognises the end's retry; nil (a tombstone) for a Dead id.
func stateValue(t *Txn) []byte {
	if t.State == Dead {
		return nil
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = t.ProducerID, t.ProducerEpoch, t.TimeoutMs
	if t.NextProducerID >= 0 || t.ClientTransactionVersion >= 2 || t.Pending != nil || len(t.Carried) > 0 {
		v.Version, v.PreviousProducerID, v.NextProducerID = 1, t.PrevProducerID, t.NextProducerID
		v.ClientTransactionVersion = t.ClientTransactionVersion
	}
	if t.Pending != nil {
		v.UnknownTags.Set(pendingMarkersTag, encodePendingMarkers(t.Pending))
	}
	if len(t.Carried) > 0 {
		v.UnknownTags.Set(carriedTag, appendPartitions(nil, t.Carried))
	}
	v.State = kmsg.TransactionState(t.State)
	v.LastUpdateTimestamp, v.StartTimestamp = t.UpdateMs, t.StartMs
	for i := 0; i < len(t.Partitions); {
		topic := kmsg.TxnMetadataValueTopic{Topic: t.Partitions[i].Topic}
		for ; i < len(t.Partitions) && t.Partitions[i].Topic == topic.Topic; i++ {
			topic.Partitions = append(topic.Partitions, t.Partitions[i].Partition)
		}
		v.Topics = append(v.Topics, topic)
	}
	return v.AppendTo(nil)
}

// decodeKey reads a record key: the transactional id, or errBadRecord
// for a key of another version.
func decodeKey(key []byte) (string, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", fmt.Errorf("%w: key: %v", errBadRecord, err)
	}
	if k.Version != 0 {
		return "", fmt.Errorf("%w: key version %d", errBadRecord, k.Version)
	}
	return k.TransactionalID, nil
}

// decodeValue reads a value version 0 or 1 into the metadata of id.
func decodeValue(id string, value []byte) (Txn, error) {
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return Txn{}, fmt.Errorf("%w: value of %q: %v", errBadRecord, id, err)
	}
	if v.Version > 1 || v.State < 0 || State(v.State) > PrepareEpochFence || v.TimeoutMillis < 0 {
		return Txn{}, fmt.Errorf("%w: value of %q: version %d, state %d", errBadRecord, id, v.Version, v.State)
	}
	t := Txn{ID: id, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch, PrevProducerID: noID, LastProducerEpoch: noEpoch, NextProducerID: noID,
		TimeoutMs: v.TimeoutMillis, State: State(v.State), StartMs: v.StartTimestamp, UpdateMs: v.LastUpdateTimestamp}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		t.PrevProducerID = v.PreviousProducerID
	}
	if v.Version >= 1 && v.NextProducerID >= 0 && (t.State == PrepareCommit || t.State == PrepareAbort) {
		t.NextProducerID = v.NextProducerID
	}
	if v.Version >= 1 && v.ClientTransactionVersion >= 2 {
		t.ClientTransactionVersion = 2
		t.LastProducerEpoch = epochBeforeEnd(&t)
	}
	for _, topic := range v.Topics {
		for _, p := range topic.Partitions {
			t.Partitions = append(t.Partitions, TopicPartition{Topic: topic.Topic, Partition: p})
		}
	}
	slices.SortFunc(t.Partitions, comparePartitions)
	t.Partitions = slices.Compact(t.Partitions)
	var pendingErr, carriedErr error
	v.UnknownTags.Each(func(tag uint32, b []byte) {
		switch {
		case v.Version < 1:
		case tag == pendingMarkersTag:
			t.Pending, pendingErr = decodePendingMarkers(b)
		case tag == carriedTag:
			t.Carried, carriedErr = readAllPartitions(b)
		}
	})
	if pendingErr != nil {
		return Txn{}, fmt.Errorf("%w: value of %q: pending markers: %v", errBadRecord, id, pendingErr)
	}
	if carriedErr != nil {
		return Txn{}, fmt.Errorf("%w: value of %q: carried partitions: %v", errBadRecord, id, carriedErr)
	}
	return t, nil
}

// carriedTag is ferry's tagged field of a value version 1 holding
// Txn.Carried: appendPartitions' bytes.
const carriedTag uint32 = 0x6666

// pendingMarkersTag is ferry's tagged field of a value version 1 holding
// Txn.Pending; far from Kafka's tags (0–2), which Kafka's readers skip
// when unknown.
const pendingMarkersTag uint32 = 0x6665

// encodePendingMarkers is pendingMarkersTag's value: producer id (8
// bytes), markers' epoch, data epoch (2 each), commit (1), coordinator
// epoch (4), partition count (4), then per partition the topic's length
// (2), the topic and the partition (4); big-endian.
func encodePendingMarkers(pm *PendingMarkers) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(pm.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(pm.ProducerEpoch))
	b = binary.BigEndian.AppendUint16(b, uint16(pm.TxnEpoch))
	commit := byte(0)
	if pm.Commit {
		commit = 1
	}
	b = append(b, commit)
	b = binary.BigEndian.AppendUint32(b, uint32(pm.CoordinatorEpoch))
	return appendPartitions(b, pm.Partitions)
}

// appendPartitions appends a partition list: its count (4 bytes), then
// per partition the topic's length (2), the topic and the partition (4);
// big-endian.
func appendPartitions(b []byte, tps []TopicPartition) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(tps)))
	for _, tp := range tps {
		b = binary.BigEndian.AppendUint16(b, uint16(len(tp.Topic)))
		b = append(b, tp.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
	}
	return b
}

// decodePendingMarkers reads encodePendingMarkers' bytes; every count
// and length is bounded by the bytes there.
func decodePendingMarkers(b []byte) (*PendingMarkers, error) {
	const head = 8 + 2 + 2 + 1 + 4
	if len(b) < head {
		return nil, errors.New("short")
	}
	pm := &PendingMarkers{
		ProducerID:       int64(binary.BigEndian.Uint64(b)),
		ProducerEpoch:    int16(binary.BigEndian.Uint16(b[8:])),
		TxnEpoch:         int16(binary.BigEndian.Uint16(b[10:])),
		Commit:           b[12] == 1,
		CoordinatorEpoch: int32(binary.BigEndian.Uint32(b[13:])),
	}
	if b[12] > 1 || pm.ProducerID < 0 || pm.ProducerEpoch < 0 || pm.TxnEpoch < 0 {
		return nil, errors.New("invalid producer, epoch or outcome")
	}
	partitions, err := readAllPartitions(b[head:])
	if err != nil {
		return nil, err
	}
	pm.Partitions = partitions
	return pm, nil
}

// readAllPartitions reads appendPartitions' bytes, all of b, sorted and
// without duplicates; every count and length is bounded by the bytes
// there.
func readAllPartitions(b []byte) ([]TopicPartition, error) {
	if len(b) < 4 {
		return nil, errors.New("short partition count")
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b))/6 { // each partition takes 6 bytes at least
		return nil, fmt.Errorf("%d partitions in %d bytes", n, len(b))
	}
	tps := make([]TopicPartition, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, errors.New("short partition")
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l+4 {
			return nil, errors.New("short partition")
		}
		tp := TopicPartition{Topic: string(b[2 : 2+l]), Partition: int32(binary.BigEndian.Uint32(b[2+l:]))}
		if tp.Topic == "" || tp.Partition < 0 {
			return nil, errors.New("invalid partition")
		}
		tps = append(tps, tp)
		b = b[2+l+4:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes left over", len(b))
	}
	slices.SortFunc(tps, comparePartitions)
	return slices.Compact(tps), nil
}

// epochBeforeEnd is the epoch a producer sent the version-2 end that left
// t (loaded from the log) with: what Txn.EndTxnV2 held in memory as
// LastProducerEpoch, which the log does not carry (Kafka's neither). The
// end bumped the epoch by one, or, when it ran out, moved to MaxInt16
// with a next producer id and then, completed, to that id at epoch 0.
func epochBeforeEnd(t *Txn) int16 {
	switch t.State {
	case PrepareCommit, PrepareAbort:
		if t.NextProducerID >= 0 {
			return math.MaxInt16 - 1
		}
	case CompleteCommit, CompleteAbort:
		if t.ProducerEpoch == 0 && t.PrevProducerID >= 0 {
			return math.MaxInt16 - 1
		}
	default:
		return noEpoch // the producer has moved on since that end
	}
	if t.ProducerEpoch <= 0 {
		return noEpoch
	}
	return t.ProducerEpoch - 1
}

// applyRecord applies one record of the log to table: the last value per
// id wins, a tombstone removes the id. Unreadable records are skipped
// (a later version's), as Kafka skips unknown key versions.
func applyRecord(table map[string]Txn, key, value []byte) {
	id, err := decodeKey(key)
	if err != nil {
		return
	}
	if value == nil {
		delete(table, id)
		return
	}
	t, err := decodeValue(id, value)
	if err != nil {
		return
	}
	table[id] = t
}
