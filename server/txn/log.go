package txn

import (
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
	if t.NextProducerID >= 0 || t.ClientTransactionVersion >= 2 {
		v.Version, v.PreviousProducerID, v.NextProducerID = 1, t.PrevProducerID, t.NextProducerID
		v.ClientTransactionVersion = t.ClientTransactionVersion
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
	return t, nil
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
