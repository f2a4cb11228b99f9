package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

// unreachableTxnCoordinator answers only when the asker gives up, as a
// peer request to a cut-off broker does when its context ends.
type unreachableTxnCoordinator struct{ asked, gaveUp chan struct{} }

func (v unreachableTxnCoordinator) VerifyTxnPartition(ctx context.Context, _ string, _ int64, _ int16, _ string, _ int32) int16 {
	close(v.asked)
	<-ctx.Done()
	close(v.gaveUp)
	return kerr.CoordinatorNotAvailable.Code
}

// A group coordinator waiting for the transaction coordinator's KIP-890
// answer to a TxnOffsetCommit stops waiting when it stops leading the
// group's __consumer_offsets partition, and answers NOT_COORDINATOR at
// once, so that the client takes its commit to the new coordinator
// before its transaction times out. Nothing is written.
func TestTxnOffsetCommitVerificationEndsWithLeadership(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1, AwaitRoles: true,
		AdvertisedKafkaAddr: "broker1.example:9092"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range []string{OffsetsTopic, "orders"} {
		if err := b.CreateTopic(server.TopicSpec{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(b, Config{Logger: testLogger(t), ManualTick: true, OffsetsTopicPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	setRole := func(leader, epoch int32) {
		t.Helper()
		role := server.PartitionRole{Topic: OffsetsTopic, Partition: 0,
			Role: replication.Role{Leader: leader, LeaderEpoch: epoch, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}}
		errs, err := b.ApplyLeaderAndIsr(1, []server.PartitionRole{role},
			[]server.BrokerAddress{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: 1}})
		if err != nil || errs[0] != nil {
			t.Fatalf("LeaderAndIsr leader %d epoch %d: %v %v", leader, epoch, err, errs)
		}
	}
	setRole(1, 1)
	harness.WaitFor(t, "the coordinator serves the group", 10*time.Second, func() bool { return c.serves("billing") == errNone })
	v := unreachableTxnCoordinator{asked: make(chan struct{}), gaveUp: make(chan struct{})}
	c.SetTxnVerifier(v)

	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, "tx", "billing", 7, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 42
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := make(chan int16, 1)
	go func() { answered <- c.HandleTxnOffsetCommit(ctx, req).Topics[0].Partitions[0].ErrorCode }()

	<-v.asked
	start := time.Now()
	setRole(2, 2)
	select {
	case code := <-answered:
		if code != errNotCoordinator {
			t.Fatalf("TxnOffsetCommit answered error %d, want NOT_COORDINATOR (%d)", code, errNotCoordinator)
		}
		t.Logf("answered NOT_COORDINATOR %v after the leadership moved", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the commit still waits for the transaction coordinator 10 s after the leadership moved")
	}
	<-v.gaveUp
	p, err := b.Partition(OffsetsTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.LogEndOffset(); end != 0 {
		t.Fatalf("__consumer_offsets ends at %d: the refused commit was written", end)
	}
}
