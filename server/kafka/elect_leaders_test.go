package kafka

import (
	"context"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
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

// notController is a controller driver on a broker that is not the
// controller.
type notController struct{}

func (notController) ElectLeaders(context.Context, controller.ElectionType, []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	return nil, controller.ErrNotController
}

func (notController) AlterReassignments(context.Context, map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	return nil, controller.ErrNotController
}

func (notController) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	return nil, controller.ErrNotController
}

// forbiddenPeers fail the test when asked: the Kafka listener answers
// what this broker can, never forwarding.
type forbiddenPeers struct{ t *testing.T }

func (p forbiddenPeers) Controller(id int32) server.ControllerAdmin {
	p.t.Errorf("the Kafka listener forwarded to broker %d", id)
	return notController{}
}

func (p forbiddenPeers) LogDirSizes(context.Context, int32, []controller.TopicPartition) (map[controller.TopicPartition]int64, error) {
	p.t.Error("the Kafka listener asked a peer for log dir sizes")
	return nil, nil
}

// On a broker that is not the controller, ElectLeaders and the
// reassignment APIs answer NOT_CONTROLLER, as Kafka's ZooKeeper-era
// brokers do, for the client to find the controller in Metadata; the
// core's Admin, which the HTTP gateway uses to forward, is used here at
// this broker only.
func TestAdminRequestsToANonControllerAnswerNotController(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.ApplyUpdateMetadata(2, 1, []server.ClusterBroker{{ID: 1}, {ID: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	adm := server.NewAdmin(b, server.AdminConfig{Controller: notController{}, Peers: forbiddenPeers{t}})
	ts := newTestServer(t, func(c *Config) { c.Admin = adm })
	c := ts.dial(t)
	if resp := do[*kmsg.ElectLeadersResponse](c, kmsg.NewPtrElectLeadersRequest(), 2); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("ElectLeaders: error %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
	if resp := do[*kmsg.ListPartitionReassignmentsResponse](c, kmsg.NewPtrListPartitionReassignmentsRequest(), 0); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("ListPartitionReassignments: error %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition())
	alter.Topics = append(alter.Topics, rt)
	if resp := do[*kmsg.AlterPartitionAssignmentsResponse](c, alter, 0); resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("AlterPartitionReassignments: error %d, want NOT_CONTROLLER", resp.ErrorCode)
	}
}
