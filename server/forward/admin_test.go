package forward

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/server"
)

// The controller's operations go to the broker named, and its answers come
// back as the core's errors with the broker's messages.
func TestAdminRequestsGoToTheNamedController(t *testing.T) {
	c, f := fakeCluster(t)
	var servedBy []int32
	c.ControlKey(int16(kmsg.ElectLeaders), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		servedBy = append(servedBy, c.CurrentNode())
		req := kreq.(*kmsg.ElectLeadersRequest)
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				pr := kmsg.NewElectLeadersResponseTopicPartition()
				pr.Partition = p
				if p == 1 {
					msg := "election not needed: t-1 is led by its preferred replica"
					pr.ErrorCode, pr.ErrorMessage = kerr.ElectionNotNeeded.Code, &msg
				}
				t.Partitions = append(t.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.AlterPartitionAssignments), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		resp := kreq.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tp0, tp1 := controller.TopicPartition{Topic: "t", Partition: 0}, controller.TopicPartition{Topic: "t", Partition: 1}
	for _, id := range []int32{1, 0} {
		res, err := f.Controller(id).ElectLeaders(ctx, controller.PreferredElection, []controller.TopicPartition{tp0, tp1})
		if err != nil || len(res) != 2 || res[tp0] != nil || !errors.Is(res[tp1], controller.ErrElectionNotNeeded) ||
			res[tp1].Error() != "election not needed: t-1 is led by its preferred replica" {
			t.Fatalf("ElectLeaders at %d: %v, %v", id, res, err)
		}
	}
	if len(servedBy) != 2 || servedBy[0] != 1 || servedBy[1] != 0 {
		t.Fatalf("served by %v, want [1 0]", servedBy)
	}
	if _, err := f.Controller(0).AlterReassignments(ctx, map[controller.TopicPartition][]int32{tp0: {1}}); !errors.Is(err, controller.ErrNotController) {
		t.Fatalf("AlterReassignments: %v, want NOT_CONTROLLER", err)
	}
	if _, err := f.Controller(7).Reassignments(ctx); !errors.Is(err, server.ErrControllerNotAvailable) {
		t.Fatalf("a broker not in the cluster: %v, want ErrControllerNotAvailable", err)
	}
}
