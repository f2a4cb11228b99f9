package replication

import (
	"bytes"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	in := []snapshotProducer{
		{id: 7, epoch: 2, lastTimestamp: 99, batches: []seqBatch{{0, 2, 10, 12}, {3, 3, 20, 20}}, txnFirst: noTxn, coordinatorEpoch: -1},
		{id: 3, epoch: -1, lastTimestamp: -1, batches: []seqBatch{{2147483647, 1, 0, 2}}, txnFirst: 1, coordinatorEpoch: 4},
		{id: 5, txnFirst: noTxn, coordinatorEpoch: -1},          // nothing to keep: left out
		{id: 9, epoch: 1, txnFirst: noTxn, coordinatorEpoch: 2}, // a marker's fencing state, no batches
	}
	data := encodeSnapshot(21, in)
	off, out, err := decodeSnapshot(data)
	if err != nil || off != 21 || len(out) != 3 || out[0].id != 3 || out[1].id != 7 || out[2].id != 9 {
		t.Fatalf("decode: %d %+v %v", off, out, err)
	}
	if out[1].batches[1] != (seqBatch{3, 3, 20, 20}) || out[0].epoch != -1 {
		t.Fatalf("decoded %+v", out)
	}
	if out[0].txnFirst != 1 || out[0].coordinatorEpoch != 4 || out[1].txnFirst != noTxn || out[2].coordinatorEpoch != 2 || len(out[2].batches) != 0 {
		t.Fatalf("transaction state decoded as %+v", out)
	}
	if name := snapshotName(21); name != "00000000000000000021.snapshot" {
		t.Fatalf("name %q", name)
	}
	for _, bad := range []string{"0000000000000000002.snapshot", "0000000000000000002x.snapshot",
		"99999999999999999999.snapshot", "00000000000000000021.snapshot.tmp"} {
		if _, ok := parseSnapshotName(bad); ok {
			t.Fatalf("%q parsed as a snapshot name", bad)
		}
	}
}

// FuzzDecodeSnapshot: any bytes decode without panicking or allocating
// beyond their size, and whatever decodes encodes back to the same bytes.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(0, nil))
	f.Add(encodeSnapshot(100, []snapshotProducer{
		{id: 1, epoch: 0, lastTimestamp: 5, batches: []seqBatch{{0, 4, 0, 4}, {5, 9, 50, 54}}, txnFirst: 50, coordinatorEpoch: -1},
		{id: 2, epoch: 3, batches: []seqBatch{{0, 0, 60, 60}}, txnFirst: noTxn, coordinatorEpoch: 1},
	}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSnapshotDecode(t, data)
		if len(data) >= 5 { // past the CRC, to reach the structure checks
			checkSnapshotDecode(t, fixCRC(append([]byte(nil), data...)))
		}
	})
}

func checkSnapshotDecode(t *testing.T, data []byte) {
	t.Helper()
	off, producers, err := decodeSnapshot(data)
	if err != nil {
		return
	}
	if cap(producers) > len(data) {
		t.Fatalf("%d producers allocated for %d bytes", cap(producers), len(data))
	}
	if again := encodeSnapshot(off, producers); !bytes.Equal(again, data) {
		t.Fatalf("re-encoded differs:\n%x\n%x", again, data)
	}
}
