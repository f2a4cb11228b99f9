package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/replication"
)

// blockedVerifier is a coordinator that cannot be reached: it answers
// only when the produce gives up asking, as a peer request to a cut-off
// broker does when its context ends.
type blockedVerifier struct{ asked, gaveUp chan struct{} }

func (v blockedVerifier) VerifyTxnPartition(ctx context.Context, _ string, _ int64, _ int16, _ string, _ int32) int16 {
	close(v.asked)
	<-ctx.Done()
	close(v.gaveUp)
	return kerr.CoordinatorNotAvailable.Code
}

// A leader waiting for the coordinator's KIP-890 answer stops waiting when
// it stops leading the partition, and the produce answers
// NOT_LEADER_OR_FOLLOWER at once, whether the leader fenced itself (cut
// from ZooKeeper and its followers) or the controller moved the
// partition. Under the partition nemeses the wait ran to the request's
// timeout instead, past the transaction's, and the coordinator aborted
// the transaction the client was about to take to the new leader.
func TestTxnVerificationEndsWhenLeadershipEnds(t *testing.T) {
	cases := []struct {
		name string
		end  func(t *testing.T, b *Broker, guard *replication.SessionGuard)
	}{
		{"the leader fences itself", func(t *testing.T, b *Broker, guard *replication.SessionGuard) {
			guard.Disconnected(time.Now())
			guard.Expired() // and no follower fetches: the broker's fence check fences it
		}},
		{"the controller moves the partition", func(t *testing.T, b *Broker, guard *replication.SessionGuard) {
			setTestRole(t, b, 2, 2)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			guard := replication.NewSessionGuard(50 * time.Millisecond)
			b := newTestBroker(t, func(cfg *Config) { cfg.BrokerID, cfg.AwaitRoles, cfg.ZooKeeperSession = 1, true, guard })
			if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
				t.Fatal(err)
			}
			setTestRole(t, b, 1, 1)
			v := blockedVerifier{asked: make(chan struct{}), gaveUp: make(chan struct{})}
			b.SetTxnVerifier(v)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				_, err := b.AppendBatch(ctx, BatchProduce{Topic: "t", Partition: 0, Batches: batchAt(t, 0, 7, true, 1),
					Acks: AcksAll, TransactionalID: "tx"})
				answered <- err
			}()
			<-v.asked
			start := time.Now()
			c.end(t, b, guard)
			select {
			case err := <-answered:
				if !errors.Is(err, ErrNotLeader) {
					t.Fatalf("produce answered %v, want NOT_LEADER_OR_FOLLOWER", err)
				}
				t.Logf("answered %v after the leadership ended: %v", time.Since(start).Round(time.Millisecond), err)
			case <-time.After(10 * time.Second):
				t.Fatal("the produce still waits for the coordinator 10 s after the leadership ended")
			}
			<-v.gaveUp
			p, err := b.Partition("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			if end := p.LogEndOffset(); end != 0 {
				t.Fatalf("log end %d: the refused batch was written", end)
			}
		})
	}
}

// setTestRole makes leader lead t-0 at epoch, with three replicas in sync.
func setTestRole(t *testing.T, b *Broker, leader, epoch int32) {
	t.Helper()
	role := PartitionRole{Topic: "t", Partition: 0,
		Role: replication.Role{Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}}
	addrs := []BrokerAddress{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: 1}, {ID: 3, Host: "127.0.0.1", Port: 1}}
	errs, err := b.ApplyLeaderAndIsr(1, []PartitionRole{role}, addrs)
	if err != nil || errs[0] != nil {
		t.Fatalf("LeaderAndIsr leader %d epoch %d: %v %v", leader, epoch, err, errs)
	}
}

// answeringVerifier is a coordinator that answers every check, and every
// addition, with code.
type answeringVerifier struct{ code int16 }

func (v answeringVerifier) VerifyTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return v.code
}

func (v answeringVerifier) AddTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return v.code
}

// A produce refused by its coordinator's KIP-890 answer carries the code
// Kafka's ReplicaManager gives the producer: the coordinator being away,
// loading, unreachable or (before transaction.version 2) busy is
// NOT_ENOUGH_REPLICAS, which every client retries, and PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH; nothing is written either way.
func TestTxnVerificationAnswersTheProducerKafkasCode(t *testing.T) {
	cases := []struct {
		answered int16
		add      bool // transaction.version 2: the leader adds
		want     int16
	}{
		{kerr.CoordinatorNotAvailable.Code, false, KafkaNotEnoughReplicas},
		{kerr.NotCoordinator.Code, false, KafkaNotEnoughReplicas},
		{kerr.CoordinatorLoadInProgress.Code, false, KafkaNotEnoughReplicas},
		{kerr.NetworkException.Code, false, KafkaNotEnoughReplicas},
		{kerr.ConcurrentTransactions.Code, false, KafkaNotEnoughReplicas},
		{kerr.ConcurrentTransactions.Code, true, kerr.ConcurrentTransactions.Code},
		{kerr.CoordinatorNotAvailable.Code, true, KafkaNotEnoughReplicas},
		{kerr.ProducerFenced.Code, false, KafkaInvalidProducerEpoch},
		{kerr.ProducerFenced.Code, true, KafkaInvalidProducerEpoch},
		{kerr.InvalidTxnState.Code, false, KafkaInvalidTxnState},
	}
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		b.SetTxnVerifier(answeringVerifier{c.answered})
		_, err := b.AppendBatch(context.Background(), BatchProduce{Topic: "t", Partition: 0, Batches: batchAt(t, 0, 7, true, 1),
			Acks: AcksAll, TransactionalID: "tx", AddToTxn: c.add})
		if got := KafkaCode(err); got != c.want {
			t.Errorf("coordinator answered %v (add %v): produce answered %v (%v), want %v",
				kerr.ErrorForCode(c.answered), c.add, kerr.ErrorForCode(got), err, kerr.ErrorForCode(c.want))
		}
	}
	p, err := b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.LogEndOffset(); end != 0 {
		t.Fatalf("log end %d: a refused batch was written", end)
	}
}

// probedWhileAnswering is a coordinator deposed while it answers a
// leader's add: before its yes arrives, its successor's probe reaches
// the leader (the producer's next transaction not begun here), as when a
// coordinator's answer is delayed past its successor's load and the
// transaction's timeout.
type probedWhileAnswering struct {
	b     *Broker
	probe bool
}

func (v probedWhileAnswering) VerifyTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return KafkaNone
}

func (v probedWhileAnswering) AddTxnPartition(ctx context.Context, _ string, id int64, _ int16, topic string, partition int32) int16 {
	if v.probe {
		errs := v.b.WriteTxnMarkers(ctx, []TxnMarker{{ProducerID: id, ProducerEpoch: -1, CoordinatorEpoch: -1,
			Topic: topic, Partition: partition, Probe: true}})
		if errs[0] != nil {
			panic(errs[0])
		}
	}
	return KafkaNone
}

// A leader's add answered yes while a probe found nothing open here is
// refused (INVALID_TXN_STATE, abortable) and writes nothing: the probing
// coordinator settles the producer as having no transaction here and
// would never end one its deposed predecessor let begin, which would hang
// the partition's last stable offset. The same add with no probe goes in.
func TestTxnAddAnsweredAcrossAProbeIsRefused(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.SetTxnVerifier(probedWhileAnswering{b: b, probe: true})
	_, err = b.AppendBatch(context.Background(), BatchProduce{Topic: "t", Partition: 0, Batches: batchAt(t, 0, 7, true, 1),
		Acks: AcksAll, TransactionalID: "tx", AddToTxn: true})
	if got := KafkaCode(err); got != KafkaInvalidTxnState {
		t.Fatalf("add answered across a probe: produce answered %v (%v), want INVALID_TXN_STATE", kerr.ErrorForCode(got), err)
	}
	if end := p.LogEndOffset(); end != 0 {
		t.Fatalf("log end %d: the refused batch was written", end)
	}

	b.SetTxnVerifier(probedWhileAnswering{b: b})
	if _, err := b.AppendBatch(context.Background(), BatchProduce{Topic: "t", Partition: 0, Batches: batchAt(t, 0, 7, true, 1),
		Acks: AcksAll, TransactionalID: "tx", AddToTxn: true}); err != nil {
		t.Fatalf("the add again, no probe: %v", err)
	}
	if end := p.LogEndOffset(); end != 1 {
		t.Fatalf("log end %d after the add with no probe, want 1", end)
	}
}
