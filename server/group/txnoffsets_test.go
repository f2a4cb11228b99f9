package group

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// controlBatch is Kafka's EndTxnMarker control batch for producer pid, as
// franz-go's kmsg encodes it.
func controlBatch(t *testing.T, base, pid int64, commit bool) []byte {
	t.Helper()
	var typ int16
	if commit {
		typ = 1
	}
	key := binary.BigEndian.AppendUint16(nil, 0)
	key = binary.BigEndian.AppendUint16(key, uint16(typ))
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, 5) // coordinator epoch
	rec := kmsg.Record{Key: key, Value: value}
	recBytes := rec.AppendTo(nil)
	b := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x20 | 0x10,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: -1, NumRecords: 1, Records: recBytes}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func txnCommitBatch(t *testing.T, base, pid int64, grp string, offset int64) []byte {
	t.Helper()
	var bld records.Builder
	bld.Add(records.Record{Key: offsetKey(grp, topicPartition{"in", 0}),
		Value: offsetValue(offsetEntry{offset: offset, leaderEpoch: -1, commitTime: 1}), Timestamp: 1})
	data, err := bld.AppendBatch(nil, records.BatchOptions{ProducerID: pid, BaseSequence: -1, Transactional: true})
	if err != nil {
		t.Fatal(err)
	}
	recordbatch.SetBaseOffset(data, base)
	return data
}

func TestControlCommitReadsEndTxnMarkers(t *testing.T) {
	for _, commit := range []bool{true, false} {
		got, ok := controlCommit(controlBatch(t, 0, 7, commit))
		if !ok || got != commit {
			t.Fatalf("commit %v read as %v %v", commit, got, ok)
		}
	}
	cb := controlBatch(t, 0, 7, true)
	for n := 0; n < len(cb); n++ {
		controlCommit(cb[:n]) // truncated: no panic
	}
	if _, ok := controlCommit(txnCommitBatch(t, 0, 7, "g", 1)); ok {
		t.Fatal("a data batch read as a marker")
	}
}

// The replay of a __consumer_offsets log: transactional commits wait for
// their producer's marker; a commit applies them, an abort drops them;
// what has no marker yet stays pending.
func TestTxnReplayFollowsMarkers(t *testing.T) {
	table := map[string]map[topicPartition]offsetEntry{}
	var r txnReplay
	log := [][]byte{
		txnCommitBatch(t, 0, 1, "committed", 10),
		txnCommitBatch(t, 1, 2, "aborted", 20),
		txnCommitBatch(t, 2, 3, "open", 30),
		controlBatch(t, 3, 1, true),
		controlBatch(t, 4, 2, false),
	}
	for _, b := range log {
		h := recordbatch.ReadHeader(b)
		done, err := r.batch(h, b, 0, 0, table)
		if err != nil || !done {
			t.Fatalf("batch at %d: %v %v", h.BaseOffset, done, err)
		}
	}
	if e := table["committed"][topicPartition{"in", 0}]; e.offset != 10 {
		t.Fatalf("committed: %+v", table["committed"])
	}
	if len(table["aborted"]) != 0 || len(table["open"]) != 0 {
		t.Fatalf("table %+v", table)
	}
	pending := r.pending()
	if len(pending) != 1 || pending["open"][3][topicPartition{"in", 0}].offset != 30 {
		t.Fatalf("pending %+v", pending)
	}
}

func FuzzControlCommit(f *testing.F) {
	f.Add(controlBatch(&testing.T{}, 0, 7, true))
	f.Add(make([]byte, recordbatch.HeaderSize+1))
	f.Fuzz(func(t *testing.T, batch []byte) {
		controlCommit(batch) // must not panic on any input
	})
}

// A plain commit written after a transactional one of the same partition
// wins, though the transaction's marker comes later (Kafka's order).
func TestTxnCommitYieldsToLaterPlainCommit(t *testing.T) {
	var bld records.Builder
	bld.Add(records.Record{Key: offsetKey("g", topicPartition{"in", 0}),
		Value: offsetValue(offsetEntry{offset: 20, leaderEpoch: -1, commitTime: 1}), Timestamp: 1})
	plain, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recordbatch.SetBaseOffset(plain, 1)
	table := map[string]map[topicPartition]offsetEntry{}
	var r txnReplay
	for _, b := range [][]byte{txnCommitBatch(t, 0, 1, "g", 10), plain, controlBatch(t, 2, 1, true)} {
		h := recordbatch.ReadHeader(b)
		done, err := r.batch(h, b, 0, 0, table)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			if err := records.Decode(b, 0, 0, func(rec records.Record) bool { applyOffsetRecord(table, rec); return true }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := table["g"][topicPartition{"in", 0}].offset; got != 20 {
		t.Fatalf("replayed offset %d, want the later plain commit's 20", got)
	}
	live := map[topicPartition]offsetEntry{{"in", 0}: {offset: 20, logOffset: 1}}
	materialize(live, topicPartition{"in", 0}, offsetEntry{offset: 10, logOffset: 0})
	materialize(live, topicPartition{"in", 1}, offsetEntry{offset: 5, logOffset: 3})
	if live[topicPartition{"in", 0}].offset != 20 || live[topicPartition{"in", 1}].offset != 5 {
		t.Fatalf("live %+v", live)
	}
}
