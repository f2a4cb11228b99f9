package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticReq is a JoinGroup of a static member at version v whose metadata
// says it owns the given partitions of "t" (as a restarted client owns none).
func staticReq(v int16, group, instance, memberID string, owned ...int32) *kmsg.JoinGroupRequest {
	r := joinReq(v, group, memberID)
	r.InstanceID = &instance
	meta := kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"t"}}
	if len(owned) > 0 {
		meta.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: owned}}
	}
	r.Protocols[0].Metadata = meta.AppendTo(nil)
	return r
}

// staticGroup forms a Stable group of static members, one per instance id,
// member i assigned partition i of "t". It returns the member ids by
// instance, the leader's instance id and the generation.
func (e *testEnv) staticGroup(name string, instances ...string) (ids map[string]string, leaderInst string, gen int32) {
	e.t.Helper()
	waits := map[string]<-chan *kmsg.JoinGroupResponse{}
	for i, inst := range instances {
		// Each member's metadata claims the partition it will get, as a
		// client's does after its first generation.
		waits[inst] = e.joinAsync(staticReq(9, name, inst, "", int32(i)))
		e.waitFor(name, func(g *group) bool { return g.statics[inst] != "" })
	}
	e.clock.Advance(e.cfg.InitialRebalanceDelay)
	e.c.Tick()
	ids = map[string]string{}
	var leader string
	for _, inst := range instances {
		r := recv(e.t, waits[inst], "static join "+inst)
		if r.ErrorCode != 0 {
			e.t.Fatalf("static join %s: code %d", inst, r.ErrorCode)
		}
		ids[inst], leader, gen = r.MemberID, r.LeaderID, r.Generation
	}
	ordered := make([]string, 0, len(instances))
	for _, inst := range instances {
		ordered = append(ordered, ids[inst])
		if ids[inst] == leader {
			leaderInst = inst
		}
	}
	e.syncAll(name, ordered, leader, gen)
	return ids, leaderInst, gen
}

func (e *testEnv) syncStatic(group, instance, memberID string, gen int32) *kmsg.SyncGroupResponse {
	sr := syncReq(5, group, memberID, gen, nil)
	sr.InstanceID = &instance
	return e.c.HandleSyncGroup(context.Background(), sr)
}

func partitionsOf(t *testing.T, assignment []byte) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil || len(a.Topics) != 1 {
		t.Fatalf("assignment %x: %v", assignment, err)
	}
	return a.Topics[0].Partitions
}

// A restarted follower comes back with its instance id, no member id and
// metadata that owns nothing: Kafka replaces its member id and hands it
// its assignment in the current generation; the others see no rebalance.
func TestStaticFollowerRestartKeepsAssignmentWithoutRebalance(t *testing.T) {
	e := newTestEnv(t)
	ids, leaderInst, gen := e.staticGroup("g", "a", "b")
	follower := "b"
	if leaderInst == "b" {
		follower = "a"
	}
	r := recv(t, e.joinAsync(staticReq(9, "g", follower, "")), "join")
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == ids[follower] || len(r.Members) != 0 {
		t.Fatalf("static rejoin: %+v, want generation %d, a new member id, no members", r, gen)
	}
	if st := e.state("g"); st != "Stable" {
		t.Fatalf("state %s: a static rejoin with changed metadata but the same protocol must not rebalance", st)
	}
	if code := e.heartbeat(4, "g", ids[leaderInst], gen); code != 0 {
		t.Fatalf("the other member's heartbeat: %d, want 0 (not revoked)", code)
	}
	resp := e.syncStatic("g", follower, r.MemberID, r.Generation)
	if resp.ErrorCode != 0 {
		t.Fatalf("sync with the new member id: %d", resp.ErrorCode)
	}
	want := int32(0)
	if follower == "b" {
		want = 1
	}
	if ps := partitionsOf(t, resp.MemberAssignment); len(ps) != 1 || ps[0] != want {
		t.Fatalf("assignment %v, want [%d] (its old one)", ps, want)
	}
}

// The old member id of a replaced instance is fenced on every request, and
// a join it was waiting in is answered FENCED_INSTANCE_ID.
func TestStaticOldMemberIDIsFenced(t *testing.T) {
	e := newTestEnv(t)
	ids, _, gen := e.staticGroup("g", "a", "b")
	old := ids["a"]
	r := recv(t, e.joinAsync(staticReq(9, "g", "a", "")), "join")
	if r.ErrorCode != 0 {
		t.Fatalf("static rejoin: %d", r.ErrorCode)
	}
	inst := "a"
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 4, "g", old, gen, &inst
	if code := e.c.HandleHeartbeat(context.Background(), hb).ErrorCode; code != errFencedInstanceID {
		t.Fatalf("old id heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}
	if code := e.syncStatic("g", "a", old, gen).ErrorCode; code != errFencedInstanceID {
		t.Fatalf("old id sync: %d, want FENCED_INSTANCE_ID", code)
	}
	if code := recv(t, e.joinAsync(staticReq(9, "g", "a", old)), "join").ErrorCode; code != errFencedInstanceID {
		t.Fatalf("old id join: %d, want FENCED_INSTANCE_ID", code)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.MemberID, oc.Generation, oc.InstanceID = 7, "g", old, gen, &inst
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	oc.Topics = append(oc.Topics, ct)
	if code := e.c.HandleOffsetCommit(context.Background(), oc).Topics[0].Partitions[0].ErrorCode; code != errFencedInstanceID {
		t.Fatalf("old id commit: %d, want FENCED_INSTANCE_ID", code)
	}

	// A join parked in a rebalance is answered FENCED when the instance
	// comes back under a new id.
	e.joinNew(9, "g") // a dynamic member starts a rebalance
	e.waitFor("g", joinedCount(1))
	wb := e.joinAsync(staticReq(9, "g", "b", ids["b"]))
	e.waitFor("g", joinedCount(2))
	e.joinAsync(staticReq(9, "g", "b", "")) // b restarts; it waits in the join phase
	if resp := recv(t, wb, "b's parked join"); resp.ErrorCode != errFencedInstanceID {
		t.Fatalf("parked join of the old id: %d, want FENCED_INSTANCE_ID", resp.ErrorCode)
	}
}

// Before JoinGroup v9 a restarted static leader is given the old leader
// id, so it syncs as a follower and the group keeps its assignment; from
// v9 it is told it leads, with the members, and to skip the assignment.
func TestStaticLeaderRestart(t *testing.T) {
	for _, v := range []int16{5, 9} {
		e := newTestEnv(t)
		ids, leaderInst, gen := e.staticGroup("g", "a", "b")
		oldLeader := ids[leaderInst]
		r := recv(t, e.joinAsync(staticReq(v, "g", leaderInst, "")), "join")
		if r.ErrorCode != 0 || r.Generation != gen {
			t.Fatalf("v%d leader rejoin: %+v", v, r)
		}
		if st := e.state("g"); st != "Stable" {
			t.Fatalf("v%d: state %s after the static leader restarted", v, st)
		}
		switch {
		case v < 9 && (r.LeaderID != oldLeader || len(r.Members) != 0 || r.SkipAssignment):
			t.Fatalf("v%d: leader %q members %d skip %v, want the old leader id %q, no members", v, r.LeaderID, len(r.Members), r.SkipAssignment, oldLeader)
		case v >= 9 && (r.LeaderID != r.MemberID || len(r.Members) != 2 || !r.SkipAssignment):
			t.Fatalf("v%d: leader %q (self %q) members %d skip %v, want itself, 2 members, skip", v, r.LeaderID, r.MemberID, len(r.Members), r.SkipAssignment)
		}
		resp := e.syncStatic("g", leaderInst, r.MemberID, gen)
		if resp.ErrorCode != 0 || len(partitionsOf(t, resp.MemberAssignment)) != 1 {
			t.Fatalf("v%d leader sync: %+v", v, resp)
		}
		other := "a"
		if leaderInst == "a" {
			other = "b"
		}
		if code := e.heartbeat(4, "g", ids[other], gen); code != 0 {
			t.Fatalf("v%d: follower heartbeat %d, want 0", v, code)
		}
		e.close()
	}
}

// A static member whose new protocols change the protocol the group would
// select forces a rebalance (Kafka checks the selected protocol, not the
// metadata).
func TestStaticRejoinChangingSelectedProtocolRebalances(t *testing.T) {
	e := newTestEnv(t)
	both := func(r *kmsg.JoinGroupRequest) *kmsg.JoinGroupRequest {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "roundrobin", consumerMeta("t")
		r.Protocols = append(r.Protocols, p)
		return r
	}
	wa := e.joinAsync(both(staticReq(9, "g", "a", "")))
	wb := e.joinAsync(both(staticReq(9, "g", "b", "")))
	e.waitFor("g", joinedCount(2))
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	ra, rb := recv(t, wa, "a"), recv(t, wb, "b")
	if *ra.Protocol != "range" {
		t.Fatalf("protocol %s", *ra.Protocol)
	}
	e.syncAll("g", []string{ra.MemberID, rb.MemberID}, ra.LeaderID, ra.Generation)
	// b prefers roundrobin now; with a preferring range the vote ties and
	// the leader's order decides — make a the follower to flip it.
	follower, req := "b", staticReq(9, "g", "b", "")
	if ra.LeaderID == rb.MemberID {
		follower, req = "a", staticReq(9, "g", "a", "")
	}
	rr := kmsg.NewJoinGroupRequestProtocol()
	rr.Name, rr.Metadata = "roundrobin", consumerMeta("t")
	req.Protocols = []kmsg.JoinGroupRequestProtocol{rr}
	w := e.joinAsync(req)
	e.waitFor("g", func(g *group) bool { return g.state == statePreparingRebalance })
	notYet(t, w, follower+"'s join")
}

// A static member that is down (it does not leave on close) keeps its
// place through another member's rebalance, as in Kafka; only its session
// timeout removes it.
func TestStaticMemberSurvivesRebalanceUntilSessionTimeout(t *testing.T) {
	e := newTestEnv(t)
	ids, leaderInst, gen := e.staticGroup("g", "a", "b")
	down := "b"
	if leaderInst == "b" {
		down = "a"
	}
	up := map[string]string{"a": "b", "b": "a"}[down]
	// "down" stops heartbeating. "up" rejoins (its leader rejoins: rebalance).
	w := e.joinAsync(staticReq(9, "g", up, ids[up]))
	e.waitFor("g", joinedCount(1))
	e.clock.Advance(9 * time.Second)
	if code := e.heartbeat(4, "g", ids[up], gen); code != errRebalanceInProgress && code != 0 {
		t.Fatalf("heartbeat %d", code)
	}
	e.c.Tick()
	notYet(t, w, "join while a static member may still come back")
	// The static member's session (10 s) expires before the rebalance
	// timeout (20 s): it is removed and the join completes without it.
	e.clock.Advance(2 * time.Second)
	e.c.Tick()
	r := recv(t, w, "join")
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("join after the session timeout: %+v", r)
	}

	// With a session timeout longer than the rebalance timeout, the join
	// phase ends at the rebalance timeout and the absent static member
	// stays in the new generation, so it can come back to its partitions.
	e2 := newTestEnv(t)
	long := func(r *kmsg.JoinGroupRequest) *kmsg.JoinGroupRequest {
		r.SessionTimeoutMillis = 60000
		return r
	}
	wa, wb := e2.joinAsync(long(staticReq(9, "g", "a", ""))), e2.joinAsync(long(staticReq(9, "g", "b", "")))
	e2.waitFor("g", joinedCount(2))
	e2.clock.Advance(3 * time.Second)
	e2.c.Tick()
	ra, rb := recv(t, wa, "a"), recv(t, wb, "b")
	leader, follower, followerInst := ra.MemberID, rb.MemberID, "b"
	if ra.LeaderID != ra.MemberID {
		leader, follower, followerInst = rb.MemberID, ra.MemberID, "a"
	}
	e2.syncAll("g", []string{leader, follower}, leader, ra.Generation)
	_, w3 := e2.joinNew(9, "g") // a new member: rebalance; the follower is down
	wl := e2.joinAsync(long(staticReq(9, "g", map[string]string{"a": "b", "b": "a"}[followerInst], leader)))
	e2.waitFor("g", joinedCount(2))
	e2.clock.Advance(21 * time.Second)
	e2.c.Tick()
	rl := recv(t, wl, "leader join")
	recv(t, w3, "new member join")
	if rl.ErrorCode != 0 || len(rl.Members) != 3 {
		t.Fatalf("leader's join: code %d, %d members, want 3 (the absent static member kept)", rl.ErrorCode, len(rl.Members))
	}
	if d, _ := e2.c.Describe("g"); len(d.Members) != 3 {
		t.Fatalf("members %d, want 3", len(d.Members))
	}
}
