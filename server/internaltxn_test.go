package server

import (
	"context"
	"testing"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// The group coordinator's TxnOffsetCommit batch is its producer's, in
// Kafka's form: producer id and epoch, no sequence, transactional; other
// writers cannot ask for it.
func TestInternalTransactionalProduce(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "__consumer_offsets", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	req := &ProduceRequest{Topic: "__consumer_offsets", Internal: true, Sync: true,
		Transaction: &ProduceTransaction{ProducerID: 42, ProducerEpoch: 3},
		Records:     []ProduceRecord{{Partition: 0, Record: records.Record{Key: []byte("k"), Value: []byte("v")}}}}
	if _, err := b.Produce(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	data, err := b.ReadBatches("__consumer_offsets", 0, 0, 1, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(data)
	if h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 || h.Attributes&recordbatch.AttrTransactional == 0 {
		t.Fatalf("batch header %+v", h)
	}
	if err := b.CreateTopic(TopicSpec{Name: "plain", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	req.Topic, req.Internal = "plain", false
	if _, err := b.Produce(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	data, _ = b.ReadBatches("plain", 0, 0, 1, 1<<20, nil)
	if h := recordbatch.ReadHeader(data); h.ProducerID != -1 || h.Attributes&recordbatch.AttrTransactional != 0 {
		t.Fatalf("a non-internal request wrote a transactional batch: %+v", h)
	}
}
