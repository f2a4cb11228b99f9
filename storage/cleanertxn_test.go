package storage_test

import (
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/memfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func txnKeyedBatch(t *testing.T, id int64, kvs ...kv) []byte {
	t.Helper()
	var b records.Builder
	for _, r := range kvs {
		b.Add(records.Record{Key: []byte(r.key), Value: []byte(r.value), Timestamp: 1000})
	}
	batch, err := b.AppendBatch(nil, records.BatchOptions{ProducerID: id})
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(batch)
	h.Attributes |= recordbatch.AttrTransactional
	h.Put(batch)
	return batch
}

// markerOffsets lists the offsets of the log's transaction markers.
func markerOffsets(t *testing.T, l *storage.Log) []int64 {
	t.Helper()
	res, err := l.Read(storage.ReadOptions{Offset: l.LogStartOffset(), MaxBytes: 64 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, h := range headers(t, res.Data) {
		if h.IsTxnMarker() {
			out = append(out, h.BaseOffset)
		}
	}
	return out
}

// The cleaner drops an aborted transaction's data at once (and never lets
// its keys hide older values), keeps markers while their transaction has
// data, then stamps a delete horizon on a marker without data and drops
// it once delete.retention.ms has passed.
func TestCleanerTransactions(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 300, IndexIntervalBytes: 128}
	l := openLog(t, "/data/c-0", cfg, memfs.New())
	defer l.Close()
	app := func(b []byte) int64 {
		t.Helper()
		res, err := l.Append(b, storage.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.BaseOffset
	}
	marker := func(id int64, commit bool) int64 {
		return app(recordbatch.AppendEndTxnMarker(nil, id, 0, recordbatch.EndTxnMarker{Commit: commit}, 1000))
	}
	app(keyedBatch(t, 1000, kv{key: "a", value: "a1"}))                                // 0
	app(txnKeyedBatch(t, 7, kv{key: "a", value: "aborted"}, kv{key: "b", value: "x"})) // 1-2
	abortAt := marker(7, false)                                                        // 3
	if err := l.AppendAbortedTxn(storage.AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: abortAt, LastStableOffset: abortAt + 1}); err != nil {
		t.Fatal(err)
	}
	app(txnKeyedBatch(t, 8, kv{key: "c", value: "c1"})) // 4
	commitAt := marker(8, true)                         // 5
	filler := func(key string) {
		for range 4 { // enough to roll past everything before
			app(keyedBatch(t, 1000, kv{key: key, value: "padding-padding-padding-padding"}))
		}
	}
	filler("f")
	now := time.UnixMilli(1_000_000)
	m := storage.NewOffsetMap(1 << 16)
	clean := func(at time.Time) {
		t.Helper()
		if _, err := l.Clean(cleanOpts(m, l.LogEndOffset(), at)); err != nil {
			t.Fatal(err)
		}
	}
	clean(now)
	got := map[string]string{}
	for _, r := range readRecords(t, l) {
		got[r.key] = r.value
	}
	if got["a"] != "a1" || got["b"] != "" || got["c"] != "c1" {
		t.Fatalf("after the first pass: %v; want a=a1 (the aborted a hides nothing), no b, c=c1", got)
	}
	// Both markers stay: this pass met their transactions' data.
	if ms := markerOffsets(t, l); len(ms) != 2 || ms[0] != abortAt || ms[1] != commitAt {
		t.Fatalf("markers after the first pass: %v", ms)
	}
	filler("g")
	clean(now.Add(time.Minute)) // the abort has no data left: a horizon, not yet passed
	if ms := markerOffsets(t, l); len(ms) != 2 {
		t.Fatalf("markers after the second pass: %v", ms)
	}
	filler("h")
	clean(now.Add(2 * time.Hour)) // past delete.retention.ms (1h)
	if ms := markerOffsets(t, l); len(ms) != 1 || ms[0] != commitAt {
		t.Fatalf("markers after the horizon: %v; want only the commit at %d, whose data remains", ms, commitAt)
	}
}
