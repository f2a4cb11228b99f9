package recordbatch_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// TestEndTxnMarkerRoundTrip: a marker is a valid control batch that
// franz-go's own codec reads as Kafka's EndTxnMarker, and parses back.
func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []recordbatch.EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: -1}} {
		b := recordbatch.AppendEndTxnMarker([]byte("prefix"), 42, 3, m, 1700)[len("prefix"):]
		h, err := recordbatch.Check(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsTxnMarker() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.RecordCount != 1 || h.LastOffsetDelta != 0 || h.BaseSequence != -1 {
			t.Fatalf("header %+v", h)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		recs := kb.Records
		var rec kmsg.Record
		if err := rec.ReadFrom(recs); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil {
			t.Fatal(err)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(rec.Value); err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyTypeAbort
		if m.Commit {
			wantType = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Type != wantType || val.CoordinatorEpoch != m.CoordinatorEpoch {
			t.Fatalf("kmsg reads key %+v value %+v for %+v", key, val, m)
		}
		got, err := recordbatch.ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, m)
		}
	}
}

func TestParseEndTxnMarkerRefuses(t *testing.T) {
	good := recordbatch.AppendEndTxnMarker(nil, 1, 0, recordbatch.EndTxnMarker{Commit: true}, 0)
	data := makeBatch(1, 0, 0)
	cases := map[string][]byte{
		"data batch": data,
		"truncated":  good[:len(good)-3],
		"short":      good[:10],
	}
	badType := append([]byte(nil), good...)
	badType[recordbatch.HeaderSize+1+3+1+2+1] = 9 // the key's type, low byte
	cases["unknown type"] = badType
	for name, b := range cases {
		if _, err := recordbatch.ParseEndTxnMarker(b); !errors.Is(err, recordbatch.ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}

// FuzzParseEndTxnMarker: never panics, and whatever it accepts it accepts
// again after a round trip through AppendEndTxnMarker.
func FuzzParseEndTxnMarker(f *testing.F) {
	f.Add(recordbatch.AppendEndTxnMarker(nil, 5, 1, recordbatch.EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, 10))
	f.Add(recordbatch.AppendEndTxnMarker(nil, 5, 1, recordbatch.EndTxnMarker{}, 10))
	f.Add(makeBatch(1, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := recordbatch.ParseEndTxnMarker(b)
		if err != nil {
			return
		}
		again, err := recordbatch.ParseEndTxnMarker(recordbatch.AppendEndTxnMarker(nil, 1, 1, m, 0))
		if err != nil || again != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, again, err)
		}
	})
}
