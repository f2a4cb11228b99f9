package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

// A cluster's broker serves a group only while it leads the group's
// __consumer_offsets partition: the controller's roles (LeaderAndIsr)
// make it load the partition's commits, resign them, and load them again.
func TestCoordinatorFollowsLeadershipOfItsPartition(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1, AwaitRoles: true,
		AdvertisedKafkaAddr: "broker1.example:9092"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(server.TopicSpec{Name: OffsetsTopic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := New(b, Config{Logger: testLogger(t), ManualTick: true, OffsetsTopicPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	commit := func(offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "billing", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.HandleOffsetCommit(ctx, req).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() (int16, int64) {
		code, topics := c.fetchOffsets("billing", []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}, false)
		if code != errNone {
			return code, -1
		}
		return code, topics[0].Partitions[0].Offset
	}
	setRole := func(leader, epoch int32) {
		t.Helper()
		role := server.PartitionRole{Topic: OffsetsTopic, Partition: 0,
			Role: replication.Role{Leader: leader, LeaderEpoch: epoch, ISR: []int32{1}, Replicas: []int32{1, 2}}}
		errs, err := b.ApplyLeaderAndIsr(1, []server.PartitionRole{role},
			[]server.BrokerAddress{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: 1}})
		if err != nil || errs[0] != nil {
			t.Fatalf("LeaderAndIsr leader %d epoch %d: %v %v", leader, epoch, err, errs)
		}
	}
	waitServing := func() {
		t.Helper()
		harness.WaitFor(t, "the coordinator serves the group", 10*time.Second, func() bool { return c.serves("billing") == errNone })
	}

	if code := commit(1); code != errNotCoordinator {
		t.Fatalf("commit before any role: error %d, want NOT_COORDINATOR", code)
	}
	setRole(1, 1)
	waitServing()
	if code := commit(42); code != errNone {
		t.Fatalf("commit as the leader: error %d", code)
	}

	setRole(2, 2) // leadership moves away: the group is dropped
	if code, _ := fetch(); code != errNotCoordinator {
		t.Fatalf("fetch after resigning: error %d, want NOT_COORDINATOR", code)
	}
	if code := commit(43); code != errNotCoordinator {
		t.Fatalf("commit after resigning: error %d, want NOT_COORDINATOR", code)
	}
	if n := len(c.List()); n != 0 {
		t.Fatalf("%d groups listed after resigning their partition", n)
	}

	setRole(1, 3) // and back: the commit is loaded from the log
	waitServing()
	if code, off := fetch(); code != errNone || off != 42 {
		t.Fatalf("fetch after leading again: error %d offset %d, want the committed 42", code, off)
	}
}

// On a cluster FindCoordinator names the leader of the group's partition
// from the controller's view, and a partition without a leader gets
// COORDINATOR_NOT_AVAILABLE.
func TestFindCoordinatorNamesThePartitionLeader(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1, AwaitRoles: true,
		AdvertisedKafkaAddr: "broker1.example:9092"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(server.TopicSpec{Name: OffsetsTopic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := New(b, Config{Logger: testLogger(t), ManualTick: true, OffsetsTopicPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	find := func(key string) *kmsg.FindCoordinatorResponse {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 3, key
		return c.HandleFindCoordinator(context.Background(), req)
	}
	if resp := find("billing"); resp.ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("before the controller's view: error %d, want COORDINATOR_NOT_AVAILABLE", resp.ErrorCode)
	}
	p := OffsetsPartition("billing", 2)
	brokers := []server.ClusterBroker{{ID: 1, Host: "broker1.example", Port: 9092}, {ID: 7, Host: "broker7.example", Port: 9097}}
	views := map[server.TopicPartition]server.PartitionView{
		{Topic: OffsetsTopic, Partition: p}:     {Leader: 7, ISR: []int32{7}, Replicas: []int32{7}},
		{Topic: OffsetsTopic, Partition: 1 - p}: {Leader: -1, Replicas: []int32{1}},
	}
	if err := b.ApplyUpdateMetadata(1, 1, brokers, views); err != nil {
		t.Fatal(err)
	}
	resp := find("billing")
	if resp.ErrorCode != errNone || resp.NodeID != 7 || resp.Host != "broker7.example" || resp.Port != 9097 {
		t.Fatalf("coordinator of billing: error %d node %d %s:%d, want broker 7", resp.ErrorCode, resp.NodeID, resp.Host, resp.Port)
	}
	for key := range 100 { // a group on the leaderless partition
		name := "g" + string(rune('a'+key%26)) + string(rune('a'+key/26))
		if OffsetsPartition(name, 2) != 1-p {
			continue
		}
		if resp := find(name); resp.ErrorCode != errCoordinatorNotAvailable || resp.ErrorMessage == nil {
			t.Fatalf("group %s on a leaderless partition: error %d, want COORDINATOR_NOT_AVAILABLE with a message", name, resp.ErrorCode)
		}
		return
	}
	t.Fatal("no test group fell on the leaderless partition")
}
