package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// An instance record reads back as written, a tombstone removes it, and
// the offset loader and the instance loader each skip the other's
// records.
func TestInstanceRecordsRoundTrip(t *testing.T) {
	table := map[instanceKey]instanceDescriptor{}
	key := instanceRecordKey("orders", "c1")
	applyInstanceRecord(table, records.Record{Key: key, Value: []byte(`{"format":"json","auto_offset_reset":"earliest","auto_commit":true,"topics":["a","b"]}`)})
	d, ok := table[instanceKey{"orders", "c1"}]
	if !ok || d.Format != "json" || d.AutoOffsetReset != "earliest" || !d.AutoCommit || len(d.Topics) != 2 {
		t.Fatalf("loaded %+v %v", d, ok)
	}
	offsets := map[string]map[topicPartition]offsetEntry{}
	applyOffsetRecord(offsets, records.Record{Key: key, Value: []byte(`{}`)})
	if len(offsets) != 0 {
		t.Fatalf("the offset loader took an instance record: %v", offsets)
	}
	commit := kmsg.OffsetCommitKey{Version: 1, Group: "orders", Topic: "t", Partition: 0}
	applyInstanceRecord(table, records.Record{Key: commit.AppendTo(nil), Value: []byte(`{"format":"binary"}`)})
	applyInstanceRecord(table, records.Record{Key: key})
	if len(table) != 0 {
		t.Fatalf("after a tombstone and an offset commit: %v", table)
	}
}

func FuzzParseInstanceKey(f *testing.F) {
	f.Add(instanceRecordKey("g", "i"))
	f.Add([]byte{0x7e, 0x01, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, key []byte) {
		k, ok := parseInstanceKey(key)
		if ok && string(instanceRecordKey(k.group, k.id)) != string(key) {
			t.Fatalf("%x parsed as %+v, which encodes differently", key, k)
		}
	})
}
