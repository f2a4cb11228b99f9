package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncHeartbeat(t *testing.T) {
	e := newTestEnv(t)
	ids, leader, gen := e.stableGroup("g", 2)
	if leader != ids[0] || gen != 1 {
		t.Fatalf("leader %s gen %d, want the first member and generation 1", leader, gen)
	}
	for i, id := range ids {
		if code := e.heartbeat(4, "g", id, gen); code != 0 {
			t.Fatalf("heartbeat of member %d: %d", i, code)
		}
		// Stable: a sync again returns the stored assignment at once.
		resp := e.c.HandleSyncGroup(context.Background(), syncReq(0, "g", id, gen, nil))
		var a kmsg.ConsumerMemberAssignment
		if resp.ErrorCode != 0 || a.ReadFrom(resp.MemberAssignment) != nil || a.Topics[0].Partitions[0] != int32(i) {
			t.Fatalf("sync of member %d: code %d assignment %x", i, resp.ErrorCode, resp.MemberAssignment)
		}
	}
	d, _ := e.c.Describe("g")
	if d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 || d.Members[1].Assignment[0].Partitions[0] != 1 {
		t.Fatalf("describe: %+v", d)
	}
}

func TestMemberIDRequiredAndUnknownMember(t *testing.T) {
	e := newTestEnv(t)
	resp := e.c.HandleJoinGroup(context.Background(), joinReq(4, "g", ""))
	if resp.ErrorCode != errMemberIDRequired || resp.MemberID == "" || resp.Generation != -1 {
		t.Fatalf("v4 first join: %+v", resp)
	}
	resp = e.c.HandleJoinGroup(context.Background(), joinReq(4, "g", "nobody"))
	if resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("join with an unknown id: %d", resp.ErrorCode)
	}
	if code := e.heartbeat(0, "g", "nobody", 0); code != errUnknownMemberID {
		t.Fatalf("heartbeat of an unknown member: %d", code)
	}
	// The id handed out expires after the session timeout.
	e.clock.Advance(11 * time.Second)
	e.c.Tick()
	resp = e.c.HandleJoinGroup(context.Background(), joinReq(4, "g", resp.MemberID))
	if resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("join with an expired pending id: %d", resp.ErrorCode)
	}
}

func TestJoinV0NoMemberIDDance(t *testing.T) {
	e := newTestEnv(t)
	w := e.joinAsync(joinReq(0, "g", ""))
	e.waitFor("g", joinedCount(1))
	notYet(t, w, "join during the initial delay")
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	resp := recv(t, w, "join")
	if resp.ErrorCode != 0 || resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 {
		t.Fatalf("v0 join: %+v", resp)
	}
	if resp.Protocol == nil || *resp.Protocol != "range" || resp.ProtocolType != nil {
		t.Fatalf("v0 join protocol %v type %v", resp.Protocol, resp.ProtocolType)
	}
}

func TestInitialDelayExtendsPerMember(t *testing.T) {
	e := newTestEnv(t)
	_, w1 := e.joinNew(9, "g")
	e.waitFor("g", joinedCount(1))
	e.clock.Advance(2 * time.Second)
	_, w2 := e.joinNew(9, "g") // extends the delay to t0+5s
	e.waitFor("g", joinedCount(2))
	e.clock.Advance(1500 * time.Millisecond)
	e.c.Tick()
	notYet(t, w1, "join before the extended delay")
	e.clock.Advance(1500 * time.Millisecond)
	e.c.Tick()
	r1, r2 := recv(t, w1, "join 1"), recv(t, w2, "join 2")
	if r1.Generation != 1 || r2.Generation != 1 || r1.LeaderID != r1.MemberID || len(r2.Members) != 0 {
		t.Fatalf("joins: %+v %+v", r1, r2)
	}
}

func TestRebalanceWhenMemberJoins(t *testing.T) {
	e := newTestEnv(t)
	ids, leader, gen := e.stableGroup("g", 2)
	newID, w3 := e.joinNew(9, "g")
	e.waitFor("g", joinedCount(1))
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	for _, id := range ids {
		if code := e.heartbeat(4, "g", id, gen); code != errRebalanceInProgress {
			t.Fatalf("heartbeat during rebalance: %d", code)
		}
	}
	if resp := e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", ids[1], gen, nil)); resp.ErrorCode != errRebalanceInProgress {
		t.Fatalf("sync during rebalance: %d", resp.ErrorCode)
	}
	w1, w2 := e.joinAsync(joinReq(9, "g", ids[0])), e.joinAsync(joinReq(9, "g", ids[1]))
	r1, r2, r3 := recv(t, w1, "rejoin 1"), recv(t, w2, "rejoin 2"), recv(t, w3, "join 3")
	if r1.Generation != gen+1 || r2.Generation != gen+1 || r3.Generation != gen+1 {
		t.Fatalf("generations %d %d %d, want %d", r1.Generation, r2.Generation, r3.Generation, gen+1)
	}
	if r1.LeaderID != leader || len(r1.Members) != 3 || r3.MemberID != newID {
		t.Fatalf("leader %s (was %s) members %d", r1.LeaderID, leader, len(r1.Members))
	}
	// A member still on the old generation is told so.
	if code := e.heartbeat(4, "g", ids[1], gen); code != errIllegalGeneration {
		t.Fatalf("heartbeat with the old generation: %d", code)
	}
	if resp := e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", ids[1], gen, nil)); resp.ErrorCode != errIllegalGeneration {
		t.Fatalf("sync with the old generation: %d", resp.ErrorCode)
	}
	e.syncAll("g", append(ids, newID), leader, gen+1)
}

func TestRebalanceTimeoutDropsStragglers(t *testing.T) {
	e := newTestEnv(t)
	ids, _, gen := e.stableGroup("g", 2)
	_, w3 := e.joinNew(9, "g")
	e.waitFor("g", joinedCount(1))
	w1 := e.joinAsync(joinReq(9, "g", ids[0]))
	e.waitFor("g", joinedCount(2))
	// Member 1 keeps heartbeating but never rejoins: the join phase waits
	// for it until the rebalance timeout (20 s), then goes on without it.
	for i := 0; i < 2; i++ {
		e.clock.Advance(8 * time.Second)
		if code := e.heartbeat(4, "g", ids[1], gen); code != errRebalanceInProgress {
			t.Fatalf("heartbeat: %d", code)
		}
		e.c.Tick()
	}
	notYet(t, w1, "join before the rebalance timeout")
	e.clock.Advance(4 * time.Second)
	e.c.Tick()
	r1, r3 := recv(t, w1, "rejoin"), recv(t, w3, "join")
	if r1.ErrorCode != 0 || r3.ErrorCode != 0 || len(r1.Members) != 2 || r1.Generation != gen+1 {
		t.Fatalf("after timeout: %+v / %+v", r1, r3)
	}
	if code := e.heartbeat(4, "g", ids[1], gen); code != errUnknownMemberID {
		t.Fatalf("dropped member's heartbeat: %d", code)
	}
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	e := newTestEnv(t)
	ids, _, gen := e.stableGroup("g", 2)
	e.clock.Advance(5 * time.Second)
	if code := e.heartbeat(0, "g", ids[0], gen); code != 0 {
		t.Fatal(code)
	}
	e.clock.Advance(5 * time.Second)
	e.c.Tick()
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("state %s before the session timeout passed", st)
	}
	e.clock.Advance(1 * time.Second) // member 1 silent for 11 s > 10 s
	e.c.Tick()
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after member 1 expired", st)
	}
	if code := e.heartbeat(0, "g", ids[0], gen); code != errRebalanceInProgress {
		t.Fatalf("survivor's heartbeat: %d", code)
	}
	r := recv(t, e.joinAsync(joinReq(9, "g", ids[0])), "rejoin")
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
	if code := e.heartbeat(0, "g", ids[1], gen); code != errUnknownMemberID {
		t.Fatalf("expired member: %d", code)
	}
}

func TestLeaveGroup(t *testing.T) {
	e := newTestEnv(t)
	ids, _, gen := e.stableGroup("g", 3)
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group, lv.MemberID = 0, "g", ids[2]
	if resp := e.c.HandleLeaveGroup(context.Background(), lv); resp.ErrorCode != 0 {
		t.Fatalf("v0 leave: %d", resp.ErrorCode)
	}
	if code := e.heartbeat(0, "g", ids[0], gen); code != errRebalanceInProgress {
		t.Fatalf("heartbeat after a leave: %d", code)
	}
	lv = kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group = 5, "g"
	for _, id := range []string{ids[0], "ghost", ids[1]} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		lv.Members = append(lv.Members, m)
	}
	resp := e.c.HandleLeaveGroup(context.Background(), lv)
	if resp.ErrorCode != 0 || len(resp.Members) != 3 || resp.Members[0].ErrorCode != 0 ||
		resp.Members[1].ErrorCode != errUnknownMemberID || resp.Members[2].ErrorCode != 0 {
		t.Fatalf("v5 batch leave: %+v", resp)
	}
	if st := e.state("g"); st != "Dead" && st != "Empty" {
		t.Fatalf("state %s after everyone left", st)
	}
}

func staticJoin(group, instance, memberID string) *kmsg.JoinGroupRequest {
	r := joinReq(9, group, memberID)
	r.InstanceID = &instance
	return r
}

func TestStaticMembership(t *testing.T) {
	e := newTestEnv(t)
	wa, wb := e.joinAsync(staticJoin("g", "a", "")), e.joinAsync(staticJoin("g", "b", ""))
	e.waitFor("g", joinedCount(2))
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	ra, rb := recv(t, wa, "join a"), recv(t, wb, "join b")
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 {
		t.Fatalf("static joins: %d %d (static members skip MEMBER_ID_REQUIRED)", ra.ErrorCode, rb.ErrorCode)
	}
	ids := []string{ra.MemberID, rb.MemberID}
	if ra.LeaderID != ra.MemberID {
		ids = []string{rb.MemberID, ra.MemberID}
	}
	e.syncAll("g", ids, ra.LeaderID, ra.Generation)
	follower, followerInst := rb.MemberID, "b"
	if ra.LeaderID == rb.MemberID {
		follower, followerInst = ra.MemberID, "a"
	}
	// The follower restarts: same instance id, no member id, same
	// protocols. It takes over its old assignment without a rebalance.
	r := e.c.HandleJoinGroup(context.Background(), staticJoin("g", followerInst, ""))
	if r.ErrorCode != 0 || r.MemberID == follower || r.Generation != ra.Generation {
		t.Fatalf("static rejoin: %+v", r)
	}
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("state %s: a static rejoin must not rebalance", st)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 4, "g", follower, ra.Generation, &followerInst
	if code := e.c.HandleHeartbeat(context.Background(), hb).ErrorCode; code != errFencedInstanceID {
		t.Fatalf("old member id's heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}
	sr := syncReq(5, "g", r.MemberID, r.Generation, nil)
	sr.InstanceID = &followerInst
	if resp := e.c.HandleSyncGroup(context.Background(), sr); resp.ErrorCode != 0 || len(resp.MemberAssignment) == 0 {
		t.Fatalf("new member id's sync: %+v", resp)
	}
	// Leaving by instance id alone (LeaveGroup v3+).
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group = 4, "g"
	m := kmsg.NewLeaveGroupRequestMember()
	m.InstanceID = &followerInst
	lv.Members = append(lv.Members, m)
	if resp := e.c.HandleLeaveGroup(context.Background(), lv); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("static leave: %d", resp.Members[0].ErrorCode)
	}
	if st := e.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after a static member left", st)
	}
}

func TestInconsistentProtocolAndBadRequests(t *testing.T) {
	e := newTestEnv(t)
	e.stableGroup("g", 1)
	r := joinReq(9, "g", "")
	r.Protocols[0].Name = "roundrobin"
	if resp := e.c.HandleJoinGroup(context.Background(), r); resp.ErrorCode != errInconsistentGroupProtocol {
		t.Fatalf("join with no common protocol: %d", resp.ErrorCode)
	}
	r = joinReq(9, "g", "")
	r.ProtocolType = "connect"
	if resp := e.c.HandleJoinGroup(context.Background(), r); resp.ErrorCode != errInconsistentGroupProtocol {
		t.Fatalf("join with another protocol type: %d", resp.ErrorCode)
	}
	if resp := e.c.HandleJoinGroup(context.Background(), joinReq(9, "", "")); resp.ErrorCode != errInvalidGroupID {
		t.Fatalf("empty group id: %d", resp.ErrorCode)
	}
	r = joinReq(9, "g2", "")
	r.SessionTimeoutMillis = 0
	if resp := e.c.HandleJoinGroup(context.Background(), r); resp.ErrorCode != errInvalidSessionTimeout {
		t.Fatalf("session timeout 0: %d", resp.ErrorCode)
	}
}

func TestLeaderNeverSyncs(t *testing.T) {
	e := newTestEnv(t)
	ids, leader, gen := e.stableGroup("g", 2)
	_, w3 := e.joinNew(9, "g")
	e.waitFor("g", joinedCount(1))
	w0, w1 := e.joinAsync(joinReq(9, "g", ids[0])), e.joinAsync(joinReq(9, "g", ids[1]))
	for _, w := range []<-chan *kmsg.JoinGroupResponse{w0, w1, w3} {
		recv(t, w, "join")
	}
	follower := ids[1]
	if leader == ids[1] {
		follower = ids[0]
	}
	sw := e.syncAsync(syncReq(5, "g", follower, gen+1, nil))
	e.waitFor("g", func(g *group) bool { return g.members[follower].syncWait != nil })
	e.clock.Advance(21 * time.Second) // rebalance timeout: the leader is given up on
	e.c.Tick()
	if resp := recv(t, sw, "sync"); resp.ErrorCode != errRebalanceInProgress {
		t.Fatalf("waiting sync: %d, want REBALANCE_IN_PROGRESS", resp.ErrorCode)
	}
	if code := e.heartbeat(4, "g", leader, gen+1); code != errUnknownMemberID {
		t.Fatalf("leader that never synced: %d", code)
	}
}

func TestCloseAnswersWaitingJoins(t *testing.T) {
	e := newTestEnv(t)
	_, w := e.joinNew(9, "g") // waits in the initial delay
	e.c.Close()
	if r := recv(t, w, "join"); r.ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("join during Close: %d, want COORDINATOR_NOT_AVAILABLE", r.ErrorCode)
	}
	if code := e.heartbeat(0, "g", "x", 1); code != errCoordinatorNotAvailable {
		t.Fatalf("heartbeat after Close: %d", code)
	}
}

func TestJoinResponseShapesPerVersion(t *testing.T) {
	e := newTestEnv(t)
	for _, v := range []int16{0, 1, 2, 3} { // no MEMBER_ID_REQUIRED before v4
		w := e.joinAsync(joinReq(v, fmt.Sprintf("g%d", v), ""))
		e.waitFor(fmt.Sprintf("g%d", v), joinedCount(1))
		e.clock.Advance(3 * time.Second)
		e.c.Tick()
		r := recv(t, w, "join")
		if r.ErrorCode != 0 || r.ProtocolType != nil || r.Protocol == nil || r.Version != v {
			t.Fatalf("v%d: %+v", v, r)
		}
	}
	for _, v := range []int16{7, 9} {
		group := fmt.Sprintf("g%d", v)
		_, w := e.joinNew(v, group)
		e.clock.Advance(3 * time.Second)
		e.c.Tick()
		r := recv(t, w, "join")
		if r.ErrorCode != 0 || r.ProtocolType == nil || *r.ProtocolType != "consumer" {
			t.Fatalf("v%d: %+v", v, r)
		}
		// SyncGroup v5 echoes protocol type and name; a mismatch is refused.
		sr := syncReq(5, group, r.MemberID, r.Generation, map[string][]byte{r.MemberID: assignmentFor(0)})
		bad := "roundrobin"
		sr.Protocol = &bad
		if resp := e.c.HandleSyncGroup(context.Background(), sr); resp.ErrorCode != errInconsistentGroupProtocol {
			t.Fatalf("sync with another protocol name: %d", resp.ErrorCode)
		}
		sr.Protocol = r.Protocol
		resp := e.c.HandleSyncGroup(context.Background(), sr)
		if resp.ErrorCode != 0 || resp.Protocol == nil || *resp.Protocol != "range" || *resp.ProtocolType != "consumer" {
			t.Fatalf("sync v5: %+v", resp)
		}
	}
}

// A group whose every member left and came back (a consumer reopened with
// a new subscription) does not wait out the initial rebalance delay once
// as many members joined as its last generation had; fewer still wait.
func TestInitialDelayEndsWhenLastGenerationIsBack(t *testing.T) {
	e := newTestEnv(t)
	for _, n := range []int{1, 2} {
		name := fmt.Sprintf("g%d", n)
		ids, _, _ := e.stableGroup(name, n)
		lv := kmsg.NewPtrLeaveGroupRequest()
		lv.Version, lv.Group = 5, name
		for _, id := range ids {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = id
			lv.Members = append(lv.Members, m)
		}
		e.c.HandleLeaveGroup(context.Background(), lv)
		if st := e.state(name); st != "Empty" {
			t.Fatalf("%s: state %s after everyone left", name, st)
		}
		e.c.Tick() // an Empty group without commits is kept for a while
		_, w1 := e.joinNew(9, name)
		if n == 1 {
			if r := recv(t, w1, "rejoin of the only member"); r.ErrorCode != 0 || r.Generation < 1 {
				t.Fatalf("%s: %+v", name, r)
			}
			continue
		}
		notYet(t, w1, "first of two members back")
		_, w2 := e.joinNew(9, name)
		r1, r2 := recv(t, w1, "member 1"), recv(t, w2, "member 2")
		if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.Generation != r2.Generation {
			t.Fatalf("%s: %+v / %+v", name, r1, r2)
		}
	}
	// A group never seen waits the full delay.
	_, w := e.joinNew(9, "fresh")
	notYet(t, w, "join of a new group")
}
