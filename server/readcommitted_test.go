package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// batchAt builds a batch of n records at base from producer id
// (transactional when txn).
func batchAt(t testing.TB, base, id int64, txn bool, n int) []byte {
	t.Helper()
	var rb records.Builder
	for range n {
		rb.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	}
	opts := records.BatchOptions{}
	if id > 0 {
		opts.ProducerID = id
	}
	b, err := rb.AppendBatch(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(b)
	if txn {
		h.Attributes |= recordbatch.AttrTransactional
	}
	h.BaseOffset = base
	h.Put(b)
	return b
}

func markerAt(base, id int64, commit bool) []byte {
	b := recordbatch.AppendEndTxnMarker(nil, id, 0, recordbatch.EndTxnMarker{Commit: commit}, 0)
	recordbatch.SetBaseOffset(b, base)
	return b
}

// DropAborted keeps plain and committed batches, drops an aborted
// transaction's batches up to its marker (not the same producer's next
// transaction) and every marker.
func TestDropAborted(t *testing.T) {
	plain := batchAt(t, 0, 0, false, 1)
	abortedA := batchAt(t, 1, 7, true, 2)
	committed := batchAt(t, 3, 8, true, 1)
	abortedB := batchAt(t, 4, 7, true, 1)
	next := batchAt(t, 7, 7, true, 1) // producer 7's next transaction
	data := bytes.Join([][]byte{plain, abortedA, committed, abortedB, markerAt(5, 7, false), markerAt(6, 8, true), next}, nil)
	end := BatchesEnd(data)
	got := DropAborted(data, []AbortedTxn{{ProducerID: 7, FirstOffset: 1}})
	want := bytes.Join([][]byte{plain, committed, next}, nil)
	if !bytes.Equal(got, want) || end != 8 {
		t.Fatalf("kept %d bytes, want %d (end %d)", len(got), len(want), end)
	}
}

// FuzzDropAborted: any bytes and aborted list: no panic, the result is
// never longer than the input and is whole batches.
func FuzzDropAborted(f *testing.F) {
	var b records.Builder
	b.Add(records.Record{Value: []byte("v")})
	one, _ := b.AppendBatch(nil, records.BatchOptions{ProducerID: 3})
	f.Add(append(one, markerAt(1, 3, false)...), int64(3), int64(0))
	f.Add([]byte{1, 2, 3}, int64(-1), int64(5))
	f.Fuzz(func(t *testing.T, data []byte, id, first int64) {
		in := bytes.Clone(data)
		out := DropAborted(in, []AbortedTxn{{ProducerID: id, FirstOffset: first}})
		if len(out) > len(data) {
			t.Fatalf("%d bytes out of %d", len(out), len(data))
		}
		if _, err := recordbatch.Validate(out); err != nil && len(out) > 0 {
			if _, err2 := recordbatch.Validate(data); err2 == nil {
				t.Fatalf("valid input, invalid output: %v", err)
			}
		}
		BatchesEnd(data)
	})
}
