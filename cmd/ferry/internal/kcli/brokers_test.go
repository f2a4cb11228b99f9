package kcli

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func metadataOf(brokers []int32, parts map[int32][]int32) kadm.Metadata {
	md := kadm.Metadata{Topics: kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{}}}}
	for _, id := range brokers {
		md.Brokers = append(md.Brokers, kadm.BrokerDetail{NodeID: id, Host: "h", Port: 9092})
	}
	for p, rs := range parts {
		md.Topics["t"].Partitions[p] = kadm.PartitionDetail{Topic: "t", Partition: p, Leader: rs[0], Replicas: rs}
	}
	return md
}

// Draining moves only the drained broker's replicas, each to the least
// loaded broker the partition does not use, and refuses when there is
// nowhere to go.
func TestDrain(t *testing.T) {
	md := metadataOf([]int32{1, 2, 3, 4}, map[int32][]int32{0: {1, 2}, 1: {2, 1}, 2: {1, 3}, 3: {3, 4}})
	plan, err := Drain(md, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32][]int32{}
	for _, p := range plan.Partitions {
		got[p.Partition] = p.Replicas
	}
	// Broker 4 holds 1 replica, 3 holds 2, 2 holds 2: 4 first, then the
	// least loaded again.
	if len(got) != 3 || !slices.Equal(got[0], []int32{4, 2}) || got[1][0] != 2 || slices.Contains(got[1], 1) || slices.Contains(got[2], 1) {
		t.Fatalf("plan %v", got)
	}
	if _, err := Drain(metadataOf([]int32{1, 2}, map[int32][]int32{0: {1, 2}}), 1); err == nil || !strings.Contains(err.Error(), "nowhere to move") {
		t.Fatalf("a two-broker RF2 drain: %v", err)
	}
}
