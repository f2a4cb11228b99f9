package throttle

import (
	"slices"
	"testing"
)

// Moving t-0 from 1,2 to 2,3 throttles 1 and 2 as leaders, 3 as a
// follower, and sets the rates on brokers 1, 2 and 3.
func TestPlanMoves(t *testing.T) {
	plan := PlanMoves([]Move{
		{Topic: "t", Partition: 0, Current: []int32{1, 2}, Target: []int32{2, 3}},
		{Topic: "u", Partition: 1, Current: []int32{4}, Target: []int32{4}},
	})
	if !slices.Equal(plan.Brokers, []int32{1, 2, 3, 4}) {
		t.Errorf("brokers %v", plan.Brokers)
	}
	if plan.Leaders["t"] != "0:1,0:2" || plan.Followers["t"] != "0:3" || plan.Leaders["u"] != "1:4" {
		t.Errorf("leaders %v, followers %v", plan.Leaders, plan.Followers)
	}
	if _, ok := plan.Followers["u"]; ok {
		t.Errorf("u adds no replica, yet has followers %q", plan.Followers["u"])
	}
}
