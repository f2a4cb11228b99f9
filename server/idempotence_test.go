package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

func idemBatch(t *testing.T, id int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	var b records.Builder
	for i := 0; i < n; i++ {
		b.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	}
	data, err := b.AppendBatch(nil, records.BatchOptions{ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func produceIdem(t *testing.T, b *Broker, batch []byte) (int64, error) {
	t.Helper()
	res, err := b.produceBatch(context.Background(), BatchProduce{Topic: "idem", Partition: 0, Batches: batch})
	return res.BaseOffset, err
}

// produceSeqs appends batches of n records from producer id, sequences
// from 0, to topic "idem" partition 0, and returns the batches sent.
func produceSeqs(t *testing.T, b *Broker, id int64, batches, n int) [][]byte {
	t.Helper()
	var sent [][]byte
	for i := range batches {
		batch := idemBatch(t, id, 0, int32(i*n), n)
		sent = append(sent, append([]byte(nil), batch...))
		if off, err := produceIdem(t, b, batch); err != nil || off != int64(i*n) {
			t.Fatalf("batch %d: offset %d err %v", i, off, err)
		}
	}
	return sent
}

func TestIdempotentRules(t *testing.T) {
	b := newTestBroker(t)
	id, epoch, err := b.InitProducerID(-1, -1)
	if err != nil || id < 1 || epoch != 0 {
		t.Fatalf("init: %d %d %v", id, epoch, err)
	}
	for _, step := range []struct {
		name   string
		epoch  int16
		seq    int32
		n      int
		offset int64
		err    error
	}{
		{"first", 0, 0, 3, 0, nil},
		{"retry", 0, 0, 3, 0, nil},
		{"next", 0, 3, 2, 3, nil},
		{"retry of an older batch", 0, 0, 3, 0, nil},
		{"gap", 0, 9, 1, 0, ErrOutOfOrderSequence},
		{"overlap", 0, 4, 1, 0, ErrOutOfOrderSequence},
		{"new epoch not at 0", 1, 5, 1, 0, ErrOutOfOrderSequence},
		{"new epoch", 1, 0, 1, 5, nil},
		{"old epoch", 0, 5, 1, 0, ErrInvalidProducerEpoch},
	} {
		off, err := produceIdem(t, b, idemBatch(t, id, step.epoch, step.seq, step.n))
		if !errors.Is(err, step.err) || err == nil && off != step.offset {
			t.Fatalf("%s: offset %d err %v, want offset %d err %v", step.name, off, err, step.offset, step.err)
		}
	}
	if p, _ := b.Partition("idem", 0); p.LogEndOffset() != 6 {
		t.Fatalf("log end %d, want 6", p.LogEndOffset())
	}
	if KafkaCode(ErrOutOfOrderSequence) != 45 || KafkaCode(ErrInvalidProducerEpoch) != 47 {
		t.Fatal("idempotence errors are not in the Kafka code table")
	}
}

func TestIdempotentStateRebuiltAfterReopen(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	for seq := int32(0); seq < 12; seq += 3 {
		if _, err := produceIdem(t, b, idemBatch(t, id, 0, seq, 3)); err != nil {
			t.Fatal(err)
		}
	}
	b = reopen(t, b)
	if off, err := produceIdem(t, b, idemBatch(t, id, 0, 9, 3)); err != nil || off != 9 {
		t.Fatalf("retry after reopen: offset %d err %v, want 9", off, err)
	}
	if _, err := produceIdem(t, b, idemBatch(t, id, 0, 13, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after reopen: %v", err)
	}
	states, err := b.Producers("idem", 0)
	if err != nil || len(states) != 1 || states[0].ProducerID != id || states[0].LastSequence != 11 {
		t.Fatalf("producers: %+v %v", states, err)
	}
	next, _, _ := b.InitProducerID(-1, -1)
	if next <= id {
		t.Fatalf("producer id %d after reopen, want above %d", next, id)
	}
}

func TestProducerEpochBump(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	if bid, epoch, err := b.InitProducerID(id, 0); err != nil || bid != id || epoch != 1 {
		t.Fatalf("bump: %d %d %v", bid, epoch, err)
	}
}

func TestIdempotentBatchesMustBeSingle(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	two := append(idemBatch(t, id, 0, 0, 1), idemBatch(t, id, 0, 1, 1)...)
	if _, err := produceIdem(t, b, two); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("two idempotent batches in one request: %v", err)
	}
}

func TestProducerStateOfDeletedTopicsIsDropped(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	if _, err := produceIdem(t, b, idemBatch(t, id, 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTopic("idem"); err != nil {
		t.Fatal(err)
	}
	// the topic comes back (auto-create): its producer state starts empty
	if off, err := produceIdem(t, b, idemBatch(t, id, 0, 5, 1)); err != nil || off != 0 {
		t.Fatalf("produce to the new topic: offset %d err %v", off, err)
	}
	states, err := b.Producers("idem", 0)
	if err != nil || len(states) != 1 || states[0].LastSequence != 5 {
		t.Fatalf("producers of the new topic: %+v %v, want only the batch at sequence 5", states, err)
	}
}
