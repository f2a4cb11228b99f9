package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// A single node answers ElectLeaders itself: every partition's one replica
// leads already (ELECTION_NOT_NEEDED), an unknown partition is
// UNKNOWN_TOPIC_OR_PARTITION, an unknown election type INVALID_REQUEST.
func TestElectLeadersOnASingleNode(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "e", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	all := kmsg.NewPtrElectLeadersRequest() // null topics: every partition
	resp := do[*kmsg.ElectLeadersResponse](c, all, 2)
	codes := map[int32]int16{}
	for _, rt := range resp.Topics {
		if rt.Topic != "e" {
			continue
		}
		for _, p := range rt.Partitions {
			codes[p.Partition] = p.ErrorCode
		}
	}
	if resp.ErrorCode != 0 || len(codes) != 2 || codes[0] != kerr.ElectionNotNeeded.Code || codes[1] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("every partition: top %d, e: %v", resp.ErrorCode, codes)
	}

	some := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "e", []int32{1, 7}
	some.Topics = append(some.Topics, rt)
	resp = do[*kmsg.ElectLeadersResponse](c, some, 1)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code ||
		resp.Topics[0].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("e-1 and e-7: %+v", resp.Topics)
	}

	bad := kmsg.NewPtrElectLeadersRequest()
	bad.ElectionType = 5
	if resp := do[*kmsg.ElectLeadersResponse](c, bad, 1); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: error %d", resp.ErrorCode)
	}
}
