package forward

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/txn"
)

// The coordinator's markers sent by broker id to franz-go's fake Kafka:
// written by the partition's leader, refused by a broker that does not
// lead it. (kfake answers AddPartitionsToTxn v4 batches as v3, so the
// verifier's request is tested in server/kafka.)
func TestRequestCarriesCoordinatorRequests(t *testing.T) {
	c, f := fakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	leader := leaders(t, c)[0]
	other := 1 - leader
	markers := []server.TxnMarker{{ProducerID: pid, ProducerEpoch: epoch, Topic: "t", Partition: 0}}
	resp, err := f.Request(ctx, other, txn.MarkersRequest(markers))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("markers at a follower: %v", kerr.ErrorForCode(code))
	}
	resp, err = f.Request(ctx, leader, txn.MarkersRequest(markers))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("markers at the leader: %v", kerr.ErrorForCode(code))
	}
	if _, err := f.Request(ctx, 7, txn.MarkersRequest(markers)); err == nil {
		t.Fatal("a request to a broker not in the cluster succeeded")
	}
}
