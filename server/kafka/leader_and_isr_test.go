package kafka

import (
	"bytes"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

func clusterBroker(t *testing.T, id int32) *testServer {
	t.Helper()
	return newTestServerWith(t, func(c *server.Config) { c.BrokerID = id }, func(c *Config) { c.InterBroker = true })
}

// leaderAndIsr is what a controller in epoch ctlEpoch sends: partition 0
// of topic led by leader in epoch, ISR isr, replicas 1 and 2.
func leaderAndIsr(ctlEpoch int32, topic string, leader, epoch int32, isr []int32, leaders ...*testServer) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.ControllerID, req.ControllerEpoch = 9, ctlEpoch
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic = topic
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = 0, ctlEpoch, leader, epoch
	ps.ISR, ps.Replicas, ps.ZKVersion = isr, []int32{1, 2}, epoch
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	for _, l := range leaders {
		host, port, _ := net.SplitHostPort(l.addr)
		p, _ := strconv.Atoi(port)
		req.LiveLeaders = append(req.LiveLeaders, kmsg.LeaderAndISRRequestLiveLeader{BrokerID: l.broker.BrokerID(), Host: host, Port: int32(p)})
	}
	return req
}

func sendLeaderAndIsr(t *testing.T, to *testServer, req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	t.Helper()
	resp := do[*kmsg.LeaderAndISRResponse](to.dial(t), req, 4)
	return resp
}

func logBytes(t *testing.T, ts *testServer, topic string) []byte {
	t.Helper()
	p, err := ts.broker.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ts.broker.ReadBatches(topic, 0, 0, p.LogEndOffset(), 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Two brokers told their roles over the Kafka protocol, as the controller
// tells them: broker 2 follows broker 1, an acks=all produce to broker 1
// is answered once broker 2 has it, and after a leader change (epoch 2,
// broker 2 leads) broker 1 follows and copies what broker 2 takes.
func TestLeaderAndIsrRolesReplicate(t *testing.T) {
	b1, b2 := clusterBroker(t, 1), clusterBroker(t, 2)
	for _, b := range []*testServer{b1, b2} {
		createTopic(t, b, "rep", 1)
	}
	for _, b := range []*testServer{b1, b2} {
		resp := sendLeaderAndIsr(t, b, leaderAndIsr(1, "rep", 1, 1, []int32{1, 2}, b1))
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d: LeaderAndIsr answered %+v", b.broker.BrokerID(), resp)
		}
	}
	c1 := b1.dial(t)
	if p := produceOneAcks(c1, "rep", -1, "a"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=all on the leader: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	f2, _ := b2.broker.Partition("rep", 0)
	if f2.LogEndOffset() != 1 {
		t.Fatalf("acknowledged, but the follower has %d records", f2.LogEndOffset())
	}
	c2 := b2.dial(t)
	if p := produceOneAcks(c2, "rep", 1, "x"); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the follower: error %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}

	// The leader changes: broker 2 leads epoch 2, broker 1 follows it.
	for _, b := range []*testServer{b2, b1} {
		resp := sendLeaderAndIsr(t, b, leaderAndIsr(2, "rep", 2, 2, []int32{1, 2}, b2))
		if resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("broker %d, epoch 2: %+v", b.broker.BrokerID(), resp)
		}
	}
	if p := produceOneAcks(c2, "rep", -1, "b"); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("acks=all on the new leader: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	if !bytes.Equal(logBytes(t, b1, "rep"), logBytes(t, b2, "rep")) {
		t.Fatal("the two replicas' logs differ")
	}

	if leader, ok := b1.broker.FollowingFrom("rep", 0); !ok || leader != 2 {
		t.Fatalf("broker 1 copies from %d (%v), want 2", leader, ok)
	}
	stop := kmsg.NewPtrStopReplicaRequest()
	stop.ControllerEpoch = 2
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic, st.Partitions = "rep", []int32{0}
	stop.Topics = append(stop.Topics, st)
	if resp := do[*kmsg.StopReplicaResponse](b1.dial(t), stop, 2); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("StopReplica: %+v", resp)
	}
	if _, ok := b1.broker.FollowingFrom("rep", 0); ok {
		t.Fatal("broker 1 still copies the partition after StopReplica")
	}

	stale := sendLeaderAndIsr(t, b1, leaderAndIsr(1, "rep", 1, 3, []int32{1}, b1))
	if stale.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("a request from controller epoch 1 after epoch 2: error %d", stale.ErrorCode)
	}
	old := sendLeaderAndIsr(t, b1, leaderAndIsr(2, "rep", 1, 1, []int32{1}, b1))
	if old.ErrorCode != 0 || old.Partitions[0].ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("an older leader epoch for the partition: %+v", old)
	}
	unknown := sendLeaderAndIsr(t, b1, leaderAndIsr(2, "nope", 1, 1, []int32{1}, b1))
	if unknown.Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("a partition the broker does not hold: %+v", unknown)
	}
}

// A single node serves no inter-broker API: it does not advertise them,
// and a LeaderAndIsr closes the connection as any unserved API does.
func TestSingleNodeRefusesControllerRequests(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "solo", 1)
	req := leaderAndIsr(1, "solo", 7, 5, []int32{7})
	req.SetVersion(4)
	c.send(req)
	c.expectClosed()
	if p, _ := ts.broker.Partition("solo", 0); p.Leader() != 0 || p.LeaderEpoch() != 0 {
		t.Fatalf("the partition's role changed: leader %d epoch %d", p.Leader(), p.LeaderEpoch())
	}
}

// UpdateMetadata replaces the live brokers and updates the partitions it
// names; an older controller epoch is refused.
func TestUpdateMetadataKeepsTheClusterView(t *testing.T) {
	b := clusterBroker(t, 1)
	if _, ok := b.broker.Cluster(); ok {
		t.Fatal("a cluster view before any UpdateMetadata")
	}
	um := func(epoch int32, topic string, leader int32, brokers ...int32) *kmsg.UpdateMetadataRequest {
		req := kmsg.NewPtrUpdateMetadataRequest()
		req.ControllerID, req.ControllerEpoch = 3, epoch
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = topic
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas, ps.OfflineReplicas = leader, 4, []int32{leader}, []int32{1, 2}, []int32{2}
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
		for _, id := range brokers {
			lb := kmsg.NewUpdateMetadataRequestLiveBroker()
			lb.ID = id
			lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Host: "127.0.0.1", Port: 9000 + id, ListenerName: "PLAINTEXT"}}
			req.LiveBrokers = append(req.LiveBrokers, lb)
		}
		return req
	}
	c := b.dial(t)
	for _, req := range []*kmsg.UpdateMetadataRequest{um(2, "a", 1, 1, 2), um(2, "b", 2, 1)} {
		if resp := do[*kmsg.UpdateMetadataResponse](c, req, 7); resp.ErrorCode != 0 {
			t.Fatalf("UpdateMetadata: error %d", resp.ErrorCode)
		}
	}
	v, ok := b.broker.Cluster()
	if !ok || v.ControllerID != 3 || len(v.Brokers) != 1 || v.Brokers[0].Port != 9001 || len(v.Partitions) != 2 {
		t.Fatalf("view %+v", v)
	}
	if pv := v.Partitions[server.TopicPartition{Topic: "b"}]; pv.Leader != 2 || pv.LeaderEpoch != 4 || len(pv.Offline) != 1 {
		t.Fatalf("partition b-0: %+v", pv)
	}
	if resp := do[*kmsg.UpdateMetadataResponse](c, um(1, "c", 1, 1), 7); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("an older controller: error %d", resp.ErrorCode)
	}
}

// A cluster's broker answers Metadata from the controller's view: every
// live broker, the controller, and each partition as the controller
// described it; a partition without a leader is LEADER_NOT_AVAILABLE.
func TestMetadataAnswersFromTheClusterView(t *testing.T) {
	b := clusterBroker(t, 1)
	createTopic(t, b, "seen", 2)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID, req.ControllerEpoch = 2, 1
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic = "seen"
	for p, leader := range []int32{2, -1} {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition, ps.Leader, ps.LeaderEpoch = int32(p), leader, 3
		ps.ISR, ps.Replicas, ps.OfflineReplicas = []int32{2}, []int32{1, 2}, []int32{1}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	for _, id := range []int32{2, 1} {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Host: "127.0.0.1", Port: 9000 + id, ListenerName: "PLAINTEXT"}}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	c := b.dial(t)
	if resp := do[*kmsg.UpdateMetadataResponse](c, req, 7); resp.ErrorCode != 0 {
		t.Fatalf("UpdateMetadata: %d", resp.ErrorCode)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	topic := "seen"
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	md := do[*kmsg.MetadataResponse](c, mreq, 12)
	if len(md.Brokers) != 2 || md.Brokers[0].NodeID != 1 || md.Brokers[1].Port != 9002 || md.ControllerID != 2 {
		t.Fatalf("brokers %+v controller %d", md.Brokers, md.ControllerID)
	}
	p0, p1 := md.Topics[0].Partitions[0], md.Topics[0].Partitions[1]
	if p0.ErrorCode != 0 || p0.Leader != 2 || p0.LeaderEpoch != 3 || len(p0.OfflineReplicas) != 1 || len(p0.Replicas) != 2 {
		t.Fatalf("partition 0: %+v", p0)
	}
	if p1.ErrorCode != kerr.LeaderNotAvailable.Code || p1.Leader != -1 {
		t.Fatalf("partition 1 without a leader: %+v", p1)
	}
}

// A broker that holds only some partitions of a topic, before the
// controller has described the others (it just restarted, or a replica
// moved away), still lists every partition: clients such as franz-go
// refuse a topic whose partitions are not numbered 0..n-1 without gaps.
func TestMetadataListsPartitionsHeldElsewhere(t *testing.T) {
	b := clusterBroker(t, 1)
	createTopic(t, b, "gap", 3)
	stop := kmsg.NewPtrStopReplicaRequest()
	stop.ControllerEpoch, stop.DeletePartitions = 1, true
	st := kmsg.NewStopReplicaRequestTopic()
	st.Topic, st.Partitions = "gap", []int32{1}
	stop.Topics = append(stop.Topics, st)
	c := b.dial(t)
	if resp := do[*kmsg.StopReplicaResponse](c, stop, 2); resp.ErrorCode != 0 || resp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("StopReplica: %+v", resp)
	}
	if _, err := b.broker.Partition("gap", 1); err == nil {
		t.Fatal("partition 1 is still held after StopReplica with delete")
	}
	mreq := kmsg.NewPtrMetadataRequest()
	topic := "gap"
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	md := do[*kmsg.MetadataResponse](c, mreq, 12)
	parts := md.Topics[0].Partitions
	if md.Topics[0].ErrorCode != 0 || len(parts) != 3 {
		t.Fatalf("topic error %d, %d partitions listed, want 3", md.Topics[0].ErrorCode, len(parts))
	}
	for i, p := range parts {
		if p.Partition != int32(i) {
			t.Fatalf("partition %d listed as %d", i, p.Partition)
		}
	}
	if p := parts[1]; p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1 {
		t.Fatalf("partition 1, held elsewhere: %+v", p)
	}
	if p := parts[2]; p.ErrorCode != 0 || p.Leader != 1 {
		t.Fatalf("partition 2, held here: %+v", p)
	}
}
