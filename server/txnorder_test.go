package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

// instantAdder is a transaction.version 2 coordinator that adds every
// partition at once, as one that answers a leader's add ahead of the
// previous transaction's markers.
type instantAdder struct{}

func (instantAdder) VerifyTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return 0
}
func (instantAdder) AddTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return 0
}

// markerCount counts the markers the broker's listeners hear.
type markerCount struct{ n int }

func (m *markerCount) TxnMarkerWritten(string, int32, int64, int16, bool, int64) { m.n++ }

func txnBatchAt(t *testing.T, id int64, epoch int16) []byte {
	t.Helper()
	var rb records.Builder
	rb.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	b, err := rb.AppendBatch(nil, records.BatchOptions{ProducerID: id, ProducerEpoch: epoch, Transactional: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The leader appends the producer's next transaction (a new epoch) only
// once the open one's marker is in: without it the produce is answered
// NOT_ENOUGH_REPLICAS after its timeout (retriable), with it the retry
// goes through. A resent marker of the closed transaction then appends
// nothing, tells no listener, and is answered as written; the next
// transaction stays open.
func TestNextTransactionWaitsForThePreviousMarker(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	b.SetTxnVerifier(instantAdder{})
	heard := &markerCount{}
	b.AddTxnMarkerListener(heard)
	ctx := context.Background()
	produce := func(epoch int16, timeout time.Duration) error {
		_, err := b.produceBatch(ctx, BatchProduce{Topic: "t", Partition: 0, Batches: txnBatchAt(t, 7, epoch),
			Acks: AcksAll, TransactionalID: "tx", AddToTxn: true, Timeout: timeout})
		return err
	}
	if err := produce(0, time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := produce(1, 50*time.Millisecond); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("next transaction before the marker: %v, want NOT_ENOUGH_REPLICAS", err)
	} else if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("answered after %v", waited)
	}
	p, _ := b.Partition("t", 0)
	if end := p.LogEndOffset(); end != 1 {
		t.Fatalf("log end %d after the refused batch, want 1", end)
	}
	marker := TxnMarker{ProducerID: 7, ProducerEpoch: 1, Commit: true, Topic: "t", Partition: 0, TxnEpoch: 0, HasTxnEpoch: true}
	waiting := make(chan error, 1)
	go func() { waiting <- produce(1, 10*time.Second) }()
	time.Sleep(20 * time.Millisecond)
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{marker}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := <-waiting; err != nil {
		t.Fatalf("next transaction after the marker: %v", err)
	}
	if end := p.LogEndOffset(); end != 3 { // data 0, marker 1, data 2
		t.Fatalf("log end %d, want 3", end)
	}
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{marker}); errs[0] != nil {
		t.Fatalf("resent marker: %v", errs[0])
	}
	if end := p.LogEndOffset(); end != 3 || heard.n != 1 {
		t.Fatalf("after the resent marker: log end %d, listeners told %d times; want 3 and 1", end, heard.n)
	}
	if lso := p.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d, want 2: the next transaction is open", lso)
	}
	early := TxnMarker{ProducerID: 7, ProducerEpoch: 3, Commit: true, Topic: "t", Partition: 0, TxnEpoch: 2, HasTxnEpoch: true}
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{early}); !errors.Is(errs[0], ErrNotEnoughReplicas) {
		t.Fatalf("a marker ahead of the open transaction's: %v, want a retriable NOT_ENOUGH_REPLICAS", errs[0])
	}
}
