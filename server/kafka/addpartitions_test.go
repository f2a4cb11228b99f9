package kafka

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// roleOf is a LeaderAndIsr partition state: the first replica leads, all
// are in the ISR.
func roleOf(partition int32, replicas []int32) kmsg.LeaderAndISRRequestTopicPartition {
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = partition, 1, replicas[0], 0
	ps.ISR, ps.Replicas = replicas, replicas
	return ps
}

// leaderAndIsrFor is controller epoch 1's LeaderAndIsr for some
// partitions of topic, the leaders' addresses among leaders.
func leaderAndIsrFor(topic string, parts []kmsg.LeaderAndISRRequestTopicPartition, leaders ...*testServer) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID, req.ControllerEpoch = 9, 1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.PartitionStates = topic, parts
	req.TopicStates = append(req.TopicStates, ts)
	for _, l := range leaders {
		host, port, _ := net.SplitHostPort(l.addr)
		p, _ := strconv.Atoi(port)
		req.LiveLeaders = append(req.LiveLeaders, kmsg.LeaderAndISRRequestLiveLeader{BrokerID: l.broker.BrokerID(), Host: host, Port: int32(p)})
	}
	return req
}

// readAssignment is the topic znode's assignment, read with a client of
// the test's own.
func readAssignment(t *testing.T, chroot, topic string) map[int32][]int32 {
	t.Helper()
	zkc, err := zookeeper.Open(zks.Require(t).Addr()+chroot, 6*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer zkc.Close()
	go func() {
		for range zkc.Events() {
		}
	}()
	a, err := zkc.Topic(topic)
	if err != nil {
		t.Fatal(err)
	}
	return a.Partitions
}

// Partitions added through one broker reach the others by LeaderAndIsr
// alone: broker 2, whose table has only the partition it was created with,
// and broker 3, which joined later and never heard of the topic, open the
// new replicas the request names (re-reading the topic from ZooKeeper, the
// table grown, never indexed past its end), and the partitions replicate.
// A partition the metadata does not have either is refused, not opened.
func TestLeaderAndIsrForAPartitionBeyondTheTable(t *testing.T) {
	chroot := uniqueChroot(t)
	b1, b2 := zkBroker(t, 1, chroot), zkBroker(t, 2, chroot)
	if err := b1.broker.CreateTopic(server.TopicSpec{Name: "grow", Partitions: 1, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	first := readAssignment(t, chroot, "grow")[0]
	for _, b := range []*testServer{b1, b2} {
		resp := sendLeaderAndIsr(t, b, leaderAndIsrFor("grow", []kmsg.LeaderAndISRRequestTopicPartition{roleOf(0, first)}, b1, b2))
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d, partition 0: %+v", b.broker.BrokerID(), resp)
		}
	}
	b3 := zkBroker(t, 3, chroot)
	if err := b1.broker.CreatePartitions("grow", 4); err != nil {
		t.Fatalf("add partitions: %v", err)
	}
	assigned := readAssignment(t, chroot, "grow")
	if len(assigned) != 4 || !slices.Equal(assigned[0], first) {
		t.Fatalf("assignment after adding partitions: %v (partition 0 was %v)", assigned, first)
	}
	if n, err := b2.broker.PartitionCount("grow"); err != nil || n != 1 {
		t.Fatalf("broker 2 knows %d partitions (%v) before the controller speaks; the test needs 1", n, err)
	}
	brokers := []*testServer{b1, b2, b3}
	for _, b := range brokers {
		var parts []kmsg.LeaderAndISRRequestTopicPartition
		for p := int32(1); p < 4; p++ {
			if slices.Contains(assigned[p], b.broker.BrokerID()) {
				parts = append(parts, roleOf(p, assigned[p]))
			}
		}
		resp := sendLeaderAndIsr(t, b, leaderAndIsrFor("grow", parts, brokers...))
		for _, p := range resp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("broker %d, partition %d: error %d", b.broker.BrokerID(), p.Partition, p.ErrorCode)
			}
		}
		if n, err := b.broker.PartitionCount("grow"); err != nil || n != 4 {
			t.Fatalf("broker %d knows %d partitions of grow (%v), want 4", b.broker.BrokerID(), n, err)
		}
	}
	for p := int32(1); p < 4; p++ {
		leader := brokers[assigned[p][0]-1]
		c := leader.dial(t)
		resp := do[*kmsg.ProduceResponse](c, produceReq("grow", p, -1, batch(t, records.BatchOptions{}, "v"+strconv.Itoa(int(p)))), 9)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("acks=all to new partition %d on its leader %d: error %d", p, assigned[p][0], code)
		}
		follower := brokers[assigned[p][1]-1]
		fp, err := follower.broker.Partition("grow", p)
		if err != nil || fp.LogEndOffset() != 1 {
			t.Fatalf("partition %d's follower %d: %v", p, assigned[p][1], err)
		}
	}

	beyond := sendLeaderAndIsr(t, b2, leaderAndIsrFor("grow", []kmsg.LeaderAndISRRequestTopicPartition{roleOf(7, []int32{2, 1})}, b2))
	if code := beyond.Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("a partition the metadata does not have: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	if _, err := b2.broker.Partition("grow", 7); !errors.Is(err, server.ErrUnknownPartition) {
		t.Fatalf("partition 7 on broker 2: %v", err)
	}
}

// A manual assignment of new partitions is checked as Kafka checks it (one
// replica list per new partition, the topic's replication factor, distinct
// live brokers) and written as given; validate-only writes nothing.
func TestCreatePartitionsWithAManualAssignment(t *testing.T) {
	chroot := uniqueChroot(t)
	b1, _ := zkBroker(t, 1, chroot), zkBroker(t, 2, chroot)
	if err := b1.broker.CreateTopic(server.TopicSpec{Name: "manual", Partitions: 1, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	c := b1.dial(t)
	send := func(count int32, validateOnly bool, replicas ...[]int32) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "manual", count
		for _, rs := range replicas {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: rs})
		}
		req.Topics, req.ValidateOnly = append(req.Topics, rt), validateOnly
		return do[*kmsg.CreatePartitionsResponse](c, req, 3).Topics[0]
	}
	for _, bad := range []struct {
		what     string
		count    int32
		replicas [][]int32
	}{
		{"one replica for a topic of two", 2, [][]int32{{1}}},
		{"a broker twice", 2, [][]int32{{1, 1}}},
		{"a broker that is not live", 2, [][]int32{{1, 9}}},
		{"one list for two new partitions", 3, [][]int32{{1, 2}}},
	} {
		if r := send(bad.count, false, bad.replicas...); r.ErrorCode != kerr.InvalidReplicaAssignment.Code || r.ErrorMessage == nil {
			t.Errorf("%s: error %d %v, want INVALID_REPLICA_ASSIGNMENT with a message", bad.what, r.ErrorCode, r.ErrorMessage)
		}
	}
	if r := send(3, true, []int32{2, 1}, []int32{1, 2}); r.ErrorCode != 0 {
		t.Fatalf("validate-only: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if got := readAssignment(t, chroot, "manual"); len(got) != 1 {
		t.Fatalf("validate-only or refused requests wrote %v", got)
	}
	if r := send(3, false, []int32{2, 1}, []int32{1, 2}); r.ErrorCode != 0 {
		t.Fatalf("a valid assignment: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	got := readAssignment(t, chroot, "manual")
	if len(got) != 3 || !slices.Equal(got[1], []int32{2, 1}) || !slices.Equal(got[2], []int32{1, 2}) {
		t.Fatalf("written assignment %v, want partitions 1 [2 1] and 2 [1 2]", got)
	}
}
