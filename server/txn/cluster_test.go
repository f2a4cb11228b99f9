package txn

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// recordingPeer answers WriteTxnMarkers (every partition written) and
// AddPartitionsToTxn verifyOnly (every partition in the transaction), and
// records which broker got what.
type recordingPeer struct {
	got map[int32][]kmsg.Request
}

func (p *recordingPeer) Request(_ context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	if p.got == nil {
		p.got = map[int32][]kmsg.Request{}
	}
	p.got[broker] = append(p.got[broker], req)
	switch r := req.(type) {
	case *kmsg.WriteTxnMarkersRequest:
		return (&peer{codes: map[int32]int16{0: 0, 1: 0, 2: 0}}).Request(context.Background(), broker, r)
	case *kmsg.AddPartitionsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, tx := range r.Transactions {
			rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtx.TransactionalID = tx.TransactionalID
			for _, t := range tx.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, part := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition = part
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtx.Topics = append(rtx.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtx)
		}
		return resp, nil
	}
	return nil, errors.New("unexpected request")
}

// clusterBroker is broker 1 of a three-broker cluster whose controller
// said: orders-0 is led here, orders-1 by broker 2, orders-2 by none, and
// __transaction_state's one partition by broker 3.
func clusterBroker(t *testing.T) *server.Broker {
	t.Helper()
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1, AwaitRoles: true,
		AdvertisedKafkaAddr: "broker1.example:9092"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	view := map[server.TopicPartition]server.PartitionView{
		{Topic: "orders", Partition: 0}:   {Leader: 1, Replicas: []int32{1}},
		{Topic: "orders", Partition: 1}:   {Leader: 2, Replicas: []int32{2}},
		{Topic: "orders", Partition: 2}:   {Leader: -1, Replicas: []int32{3}},
		{Topic: StateTopic, Partition: 0}: {Leader: 3, Replicas: []int32{3}},
	}
	brokers := []server.ClusterBroker{{ID: 1, Host: "h1", Port: 1}, {ID: 2, Host: "h2", Port: 2}, {ID: 3, Host: "h3", Port: 3}}
	if err := b.ApplyUpdateMetadata(3, 1, brokers, view); err != nil {
		t.Fatal(err)
	}
	return b
}

// Markers go to each partition's leader: this broker's own through its
// local writer, the others' as one WriteTxnMarkers per broker.
func TestClusterMarkersRouteToLeaders(t *testing.T) {
	b := clusterBroker(t)
	local := &markerLog{}
	peers := &recordingPeer{}
	m := &ClusterMarkers{Broker: b, Local: local, Peers: peers}
	errs := m.WriteTxnMarkers(context.Background(), []server.TxnMarker{
		{ProducerID: 5, Commit: true, Topic: "orders", Partition: 0},
		{ProducerID: 5, Commit: true, Topic: "orders", Partition: 1},
		{ProducerID: 6, Commit: false, Topic: "orders", Partition: 1},
		{ProducerID: 5, Commit: true, Topic: "orders", Partition: 2},
		{ProducerID: 5, Commit: true, Topic: "deleted", Partition: 0},
	})
	if errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	if errs[3] == nil || errors.Is(errs[3], ErrPartitionGone) {
		t.Fatalf("a leaderless partition: %v, want a retriable error", errs[3])
	}
	if !errors.Is(errs[4], ErrPartitionGone) {
		t.Fatalf("a deleted topic: %v", errs[4])
	}
	if got, _ := local.snapshot(); len(got) != 1 || got[0].Partition != 0 {
		t.Fatalf("local markers %+v", got)
	}
	if len(peers.got[2]) != 1 || len(peers.got) != 1 {
		t.Fatalf("remote requests %+v", peers.got)
	}
	if req := peers.got[2][0].(*kmsg.WriteTxnMarkersRequest); len(req.Markers) != 2 {
		t.Fatalf("one request per broker, one entry per producer: %+v", req.Markers)
	}
}

// A leader asks the id's coordinator, broker 3, with AddPartitionsToTxn
// v4 verifyOnly.
func TestVerifierAsksTheRemoteCoordinator(t *testing.T) {
	b := clusterBroker(t)
	c, err := New(b, Config{Logger: testLogger(t), Markers: &markerLog{}, ManualTick: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peers := &recordingPeer{}
	v := &Verifier{Coordinator: c, Peers: peers}
	if code := v.VerifyTxnPartition(context.Background(), "tx", 5, 0, "orders", 1); code != 0 {
		t.Fatalf("verify: %v", kerr.ErrorForCode(code))
	}
	reqs := peers.got[3]
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", peers.got)
	}
	tx := reqs[0].(*kmsg.AddPartitionsToTxnRequest).Transactions[0]
	if !tx.VerifyOnly || tx.TransactionalID != "tx" || tx.ProducerID != 5 || tx.Topics[0].Partitions[0] != 1 {
		t.Fatalf("request %+v", tx)
	}
	if code := (&Verifier{Coordinator: c}).VerifyTxnPartition(context.Background(), "tx", 5, 0, "orders", 1); code != kerr.NotCoordinator.Code {
		t.Fatalf("without peers: %v", kerr.ErrorForCode(code))
	}
}
