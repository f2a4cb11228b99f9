package txn

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestStateRecordRoundTrip(t *testing.T) {
	tx := Txn{ID: "tx-1", ProducerID: 42, ProducerEpoch: 3, PrevProducerID: noID, LastProducerEpoch: noEpoch, TimeoutMs: 60000,
		State: Ongoing, Partitions: []TopicPartition{tpC, tpA, tpB}, StartMs: 1000, UpdateMs: 2000, NextProducerID: noID}
	table := map[string]Txn{}
	applyRecord(table, stateKey(tx.ID), stateValue(&tx))
	if !reflect.DeepEqual(table["tx-1"], tx) {
		t.Fatalf("read back %+v\nwrote %+v", table["tx-1"], tx)
	}
	// Kafka's own encoding reads the same: the key and value are its formats.
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(stateValue(&tx)); err != nil || v.ProducerID != 42 || len(v.Topics) != 2 || v.Topics[1].Topic != "orders" ||
		!reflect.DeepEqual(v.Topics[1].Partitions, []int32{0, 1}) {
		t.Fatalf("kmsg reads %+v, %v", v, err)
	}
	// A transaction.version 2 end rotating the producer id keeps the
	// id it answered through a coordinator's load.
	rotating := tx
	rotating.State, rotating.ProducerEpoch, rotating.PrevProducerID, rotating.NextProducerID = PrepareCommit, 32767, 40, 43
	applyRecord(table, stateKey(tx.ID), stateValue(&rotating))
	if !reflect.DeepEqual(table["tx-1"], rotating) {
		t.Fatalf("read back %+v\nwrote %+v", table["tx-1"], rotating)
	}
	dead := tx
	dead.State = Dead
	if stateValue(&dead) != nil {
		t.Fatal("a dead id is not a tombstone")
	}
	applyRecord(table, stateKey(tx.ID), nil)
	if _, ok := table["tx-1"]; ok {
		t.Fatal("the tombstone did not remove the id")
	}
}

func TestStateRecordFlexibleValue(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 1, 5, 2, 1000, kmsg.TransactionState(CompleteCommit)
	v.PreviousProducerID = 4
	table := map[string]Txn{}
	applyRecord(table, stateKey("x"), v.AppendTo(nil))
	if got := table["x"]; got.ProducerID != 5 || got.State != CompleteCommit || got.PrevProducerID != 4 {
		t.Fatalf("v1 value read as %+v", got)
	}
}

func TestUnreadableRecordsSkipped(t *testing.T) {
	table := map[string]Txn{"keep": {ID: "keep"}}
	for _, c := range []struct{ key, value []byte }{
		{nil, []byte{0}},
		{[]byte{0, 1, 0, 1, 'k'}, []byte{0, 0}}, // key version 1
		{stateKey("keep"), []byte{0, 0, 1}},     // truncated value
		{stateKey("keep"), func() []byte { v := kmsg.NewTxnMetadataValue(); v.State = 99; return v.AppendTo(nil) }()},
	} {
		applyRecord(table, c.key, c.value)
	}
	if _, ok := table["keep"]; !ok || len(table) != 1 {
		t.Fatalf("table %v", table)
	}
}

func FuzzStateRecord(f *testing.F) {
	tx := Txn{ID: "t", ProducerID: 1, State: Ongoing, Partitions: []TopicPartition{tpA}}
	f.Add(stateKey("t"), stateValue(&tx))
	f.Add([]byte{0, 0}, []byte{0, 1, 0xff})
	ahead := Txn{ID: "t", ProducerID: 1, ProducerEpoch: 2, State: Ongoing, Partitions: []TopicPartition{tpB}, ClientTransactionVersion: 2,
		Pending: &PendingMarkers{ProducerID: 1, ProducerEpoch: 2, TxnEpoch: 1, Commit: true, Partitions: []TopicPartition{tpA}}}
	f.Add(stateKey("t"), stateValue(&ahead))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		table := map[string]Txn{}
		applyRecord(table, key, value)
		for _, got := range table {
			if got.State < Empty || got.State > PrepareEpochFence {
				t.Fatalf("state %d accepted", got.State)
			}
			if pm := got.Pending; pm != nil && (pm.ProducerID < 0 || pm.ProducerEpoch < 0 || pm.TxnEpoch < 0 ||
				slices.ContainsFunc(pm.Partitions, func(tp TopicPartition) bool { return tp.Topic == "" || tp.Partition < 0 })) {
				t.Fatalf("pending markers %+v accepted", pm)
			}
		}
	})
}
