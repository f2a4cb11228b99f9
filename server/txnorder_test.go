package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
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

// heardMarker is one marker a listener was told of.
type heardMarker struct {
	producerID int64
	dataEpoch  int16
	known      bool
	commit     bool
}

// markerHeard records the markers the broker's listeners are told of.
type markerHeard struct {
	mu    sync.Mutex
	heard []heardMarker
}

func (m *markerHeard) TxnMarkerWritten(_ string, _ int32, producerID int64, dataEpoch int16, known, commit bool, _ int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heard = append(m.heard, heardMarker{producerID, dataEpoch, known, commit})
}

func (m *markerHeard) told() []heardMarker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.heard)
}

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
// nothing and is answered as written; the listeners hear it again with
// the epoch of the data it ends (a repeat they ignore), and the next
// transaction stays open.
func TestNextTransactionWaitsForThePreviousMarker(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	b.SetTxnVerifier(instantAdder{})
	heard := &markerHeard{}
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
	replica, err := b.partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the next transaction's batch waiting for the marker", 5*time.Second, func() bool { return replica.AwaitingTxnOrder(7) })
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
	ended := heardMarker{producerID: 7, dataEpoch: 0, known: true, commit: true}
	if end, told := p.LogEndOffset(), heard.told(); end != 3 || !slices.Equal(told, []heardMarker{ended, ended}) {
		t.Fatalf("after the resent marker: log end %d, listeners told %+v; want 3 and the epoch 0 commit twice", end, told)
	}
	if lso := p.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d, want 2: the next transaction is open", lso)
	}
	early := TxnMarker{ProducerID: 7, ProducerEpoch: 3, Commit: true, Topic: "t", Partition: 0, TxnEpoch: 2, HasTxnEpoch: true}
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{early}); !errors.Is(errs[0], ErrNotEnoughReplicas) {
		t.Fatalf("a marker ahead of the open transaction's: %v, want a retriable NOT_ENOUGH_REPLICAS", errs[0])
	}
}

// A marker whose acks=all wait failed after its append told nobody; the
// coordinator resends it after the producer's next transaction began on
// the partition (transaction.version 2 answers that add ahead of the
// markers). The resend appends nothing, and its own wait covering the
// first copy, it tells the listeners the decision with the epoch of the
// data it ends, so that a group coordinator decides that transaction's
// offset commits and not the next one's.
func TestResentMarkerTellsTheListenersItsDataEpoch(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	b.SetTxnVerifier(instantAdder{})
	heard := &markerHeard{}
	b.AddTxnMarkerListener(heard)
	ctx := context.Background()
	produce := func(epoch int16) {
		t.Helper()
		if _, err := b.produceBatch(ctx, BatchProduce{Topic: "t", Partition: 0, Batches: txnBatchAt(t, 7, epoch),
			Acks: AcksAll, TransactionalID: "tx", AddToTxn: true, Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("produce at epoch %d: %v", epoch, err)
		}
	}
	produce(0)
	marker := TxnMarker{ProducerID: 7, ProducerEpoch: 1, Commit: true, Topic: "t", Partition: 0, TxnEpoch: 0, HasTxnEpoch: true}
	// The first copy: appended, its wait failed, so WriteTxnMarkers told
	// nobody. appendTxnMarker is that append without the wait.
	if _, err := b.appendTxnMarker(marker); err != nil {
		t.Fatal(err)
	}
	produce(1)
	if told := heard.told(); len(told) != 0 {
		t.Fatalf("told %+v before the resend", told)
	}
	p, _ := b.Partition("t", 0)
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{marker}); errs[0] != nil {
		t.Fatalf("resent marker: %v", errs[0])
	}
	want := []heardMarker{{producerID: 7, dataEpoch: 0, known: true, commit: true}}
	if end, told := p.LogEndOffset(), heard.told(); end != 3 || !slices.Equal(told, want) {
		t.Fatalf("after the resend: log end %d, told %+v; want 3 (data, marker, data) and %+v", end, told, want)
	}
	if lso := p.LastStableOffset(); lso != 2 {
		t.Fatalf("LSO %d, want 2: the next transaction is open", lso)
	}
	// A marker that does not say its data epoch (transaction.version 1,
	// an operator's abort) is told as unknown.
	abort := TxnMarker{ProducerID: 7, ProducerEpoch: 1, Topic: "t", Partition: 0}
	if errs := b.WriteTxnMarkers(ctx, []TxnMarker{abort}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	want = append(want, heardMarker{producerID: 7})
	if told := heard.told(); !slices.Equal(told, want) {
		t.Fatalf("told %+v, want %+v", told, want)
	}
}
