package server

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/test/harness"
)

// bestKnown's rule, scripted: the view describes every partition, except
// one this broker leads in the view's epoch or a newer one (its own ISR
// is fresher); a partition the view does not describe yet comes from the
// replica here, if any.
func TestBestKnownPrefersTheLeadersOwnISR(t *testing.T) {
	const self = 1
	view := PartitionView{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Offline: []int32{}}
	shrunk := &replication.Role{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}
	for _, c := range []struct {
		name   string
		local  *replication.Role
		pv     PartitionView
		inView bool
		want   []int32 // ISR
		leader int32
		ok     bool
	}{
		{"led here in the view's epoch: its own ISR", shrunk, view, true, []int32{1, 2}, 1, true},
		{"led here in a newer epoch than the view's", &replication.Role{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, view, true, []int32{1}, 1, true},
		{"a stale leader here: the view's newer epoch wins", shrunk, PartitionView{Leader: 2, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}}, true, []int32{2, 3}, 2, true},
		{"followed here: the view", &replication.Role{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{2}}, PartitionView{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, true, []int32{1, 2}, 2, true},
		{"held elsewhere: the view", nil, view, true, []int32{1, 2, 3}, 1, true},
		{"not described yet, held here", shrunk, PartitionView{}, false, []int32{1, 2}, 1, true},
		{"not described, not held", nil, PartitionView{}, false, nil, 0, false},
	} {
		got, ok := bestKnown(self, c.local, c.pv, c.inView)
		if ok != c.ok || !slices.Equal(got.ISR, c.want) || got.Leader != c.leader {
			t.Errorf("%s: %+v, %v; want leader %d, ISR %v, %v", c.name, got, ok, c.leader, c.want, c.ok)
		}
	}
}

// With the controller's view, DescribeTopic and ClusterState describe the
// cluster: a partition another broker leads in a newer epoch has that
// broker's ISR and offline replicas, with this replica's offsets; the
// counts cover the view's partitions held elsewhere; KnownTopics lists
// them.
func TestDescribeTopicFromTheClusterView(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b, "t", 1, "a", "b")
	before := b.ClusterState()
	if before.ControllerID != 0 || before.Brokers != nil || before.Partitions != 2 || before.UnderReplicated != 0 || before.Offline != 0 {
		t.Fatalf("single node: %+v", before)
	}
	brokers := []ClusterBroker{{ID: 2, Host: "h2", Port: 9092, Rack: "r2"}, {ID: 0, Host: "h0", Port: 9092}, {ID: 1, Host: "h1", Port: 9092}}
	if err := b.ApplyUpdateMetadata(2, 1, brokers, map[TopicPartition]PartitionView{
		{Topic: "t", Partition: 0}:         {Leader: 0, LeaderEpoch: 0, Replicas: []int32{0}, ISR: []int32{0}},
		{Topic: "t", Partition: 1}:         {Leader: 2, LeaderEpoch: 3, Replicas: []int32{2, 0, 1}, ISR: []int32{2, 0}, Offline: []int32{1}},
		{Topic: "elsewhere", Partition: 0}: {Leader: -1, LeaderEpoch: 2, Replicas: []int32{1}, ISR: []int32{1}, Offline: []int32{1}},
	}); err != nil {
		t.Fatal(err)
	}
	info, err := b.DescribeTopic("t")
	if err != nil || len(info.Partitions) != 2 {
		t.Fatalf("describe: %+v, %v", info, err)
	}
	p1 := info.Partitions[1]
	if p1.Leader != 2 || p1.LeaderEpoch != 3 || !slices.Equal(p1.ISR, []int32{2, 0}) || !slices.Equal(p1.OfflineReplicas, []int32{1}) ||
		!p1.UnderReplicated || !p1.Local || p1.HighWatermark != 2 {
		t.Fatalf("partition 1: %+v", p1)
	}
	if p0 := info.Partitions[0]; p0.Leader != 0 || p0.UnderReplicated || p0.OfflineReplicas == nil {
		t.Fatalf("partition 0: %+v", p0)
	}
	st := b.ClusterState()
	if st.ControllerID != 2 || len(st.Brokers) != 3 || st.Brokers[0].ID != 0 || st.Brokers[2].Rack != "r2" ||
		st.Partitions != 3 || st.UnderReplicated != 1 || st.Offline != 1 {
		t.Fatalf("cluster state: %+v", st)
	}
	if n := b.LeaderlessPartitions(); n != 1 {
		t.Fatalf("%d leaderless partitions, want 1", n)
	}
	if names := b.KnownTopics(); !slices.Equal(names, []string{"elsewhere", "t"}) {
		t.Fatalf("known topics %v", names)
	}
	// Its name and configs are the cluster metadata's, which this single
	// node's does not have.
	if _, err := b.DescribeTopic("elsewhere"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("describe a topic the metadata does not have: %v", err)
	}
}

// A partition held here is written with all its offsets, 0 included; one
// held elsewhere without any (they are another broker's).
func TestPartitionInfoJSONLeavesOutOffsetsHeldElsewhere(t *testing.T) {
	local, err := json.Marshal(PartitionInfo{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}, OfflineReplicas: []int32{}, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"log_start_offset":0`, `"high_watermark":0`, `"log_end_offset":0`, `"size_bytes":0`, `"segments":0`, `"local":true`} {
		if !strings.Contains(string(local), key) {
			t.Errorf("local partition %s lacks %s", local, key)
		}
	}
	remote, err := json.Marshal(PartitionInfo{Leader: 2, Replicas: []int32{2}, ISR: []int32{2}, OfflineReplicas: []int32{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(remote), "offset") || strings.Contains(string(remote), "size_bytes") || !strings.Contains(string(remote), `"local":false`) {
		t.Errorf("partition held elsewhere: %s", remote)
	}
}

// On a cluster, DeleteTopic returns only once this broker's Metadata no
// longer describes the topic: the controller's view and this broker's
// table have both let go. A controller may send its UpdateMetadata
// before its StopReplica (one CI run: the DELETE answered while the
// replica here was still being deleted, and Metadata still listed it).
func TestClusterDeleteWaitsForTheReplicasHere(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.BrokerID, c.AwaitRoles = 1, true })
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	setTestRole(t, b, 1, 1)
	brokers := []ClusterBroker{{ID: 1}, {ID: 2}, {ID: 3}}
	if err := b.ApplyUpdateMetadata(1, 1, brokers, map[TopicPartition]PartitionView{
		{Topic: "t", Partition: 0}: {Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}}}); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- b.DeleteTopic("t") }()
	// The controller's UpdateMetadata first (the partition's leader as
	// Kafka's LeaderDuringDelete): the view lets go, the replica here is
	// still held.
	if err := b.ApplyUpdateMetadata(1, 1, brokers, map[TopicPartition]PartitionView{
		{Topic: "t", Partition: 0}: {Leader: leaderDuringDelete}}); err != nil {
		t.Fatal(err)
	}
	// Two of the delete's checks after the view let go: a wait on the
	// view alone would have returned at the first; the right wait
	// returns only after the StopReplica below.
	checked := b.deleteChecks.Load()
	harness.WaitFor(t, "two of the delete's checks after the view let go", 10*time.Second, func() bool {
		return b.deleteChecks.Load() >= checked+2 || len(deleted) > 0
	})
	select {
	case err := <-deleted:
		t.Fatalf("DeleteTopic returned (%v) while this broker still held the replica, which Metadata describes", err)
	default:
	}
	if errs, err := b.StopReplicas(1, "t", []int32{0}, true); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if _, err := b.PartitionCountInCluster("t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("after the delete: %v, want the topic unknown", err)
	}
}
