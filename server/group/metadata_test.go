package group

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// groupRecord is one group metadata record as it is in the log.
type groupRecord struct {
	key   kmsg.GroupMetadataKey
	value *kmsg.GroupMetadataValue // nil: tombstone
}

// groupRecords reads every group metadata record of group from its
// __consumer_offsets partition, decoding them with kmsg as any Kafka tool
// reading the topic would.
func (e *testEnv) groupRecords(group string) []groupRecord {
	e.t.Helper()
	res, err := e.broker.Fetch(context.Background(), server.FetchRequest{Topic: OffsetsTopic,
		Partition: OffsetsPartition(group, 3), MaxBytes: 4 << 20}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []groupRecord
	records.Decode(res.Data, 0, 0, func(r records.Record) bool {
		if len(r.Key) < 2 || r.Key[0] != 0 || r.Key[1] != 2 {
			return true
		}
		var gr groupRecord
		if err := gr.key.ReadFrom(r.Key); err != nil {
			e.t.Fatalf("group key %x: %v", r.Key, err)
		}
		if gr.key.Group != group {
			return true
		}
		if r.Value != nil {
			gr.value = new(kmsg.GroupMetadataValue)
			if err := gr.value.ReadFrom(r.Value); err != nil {
				e.t.Fatalf("group value %x: %v", r.Value, err)
			}
		}
		out = append(out, gr)
		return true
	})
	return out
}

// waitGroupRecords polls until group has n metadata records (the tick
// loop writes those of timeouts on its own goroutines).
func (e *testEnv) waitGroupRecords(group string, n int) []groupRecord {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := e.groupRecords(group)
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) != n {
				e.t.Fatalf("group %s has %d metadata records, want %d", group, len(recs), n)
			}
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func leaveReq(group string, ids ...string) *kmsg.LeaveGroupRequest {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = 5, group
	for _, id := range ids {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		r.Members = append(r.Members, m)
	}
	return r
}

func TestGroupMetadataWrittenOnStableEmptyAndDelete(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	if recs := e.groupRecords("g"); len(recs) != 0 {
		t.Fatalf("records before any member: %+v", recs)
	}
	ids, leader, gen := e.stableGroup("g", 2)
	recs := e.groupRecords("g")
	if len(recs) != 1 {
		t.Fatalf("%d records after the first generation, want 1", len(recs))
	}
	v := recs[0].value
	if recs[0].key.Version != 2 || v == nil || v.Version != 3 || v.ProtocolType != "consumer" || v.Generation != gen ||
		v.Protocol == nil || *v.Protocol != "range" || v.Leader == nil || *v.Leader != leader ||
		v.CurrentStateTimestamp != e.clock.Now().UnixMilli() || len(v.Members) != 2 {
		t.Fatalf("stable record: key %+v value %+v", recs[0].key, v)
	}
	for i, m := range v.Members {
		if m.MemberID != ids[i] || m.SessionTimeoutMillis != 10000 || m.RebalanceTimeoutMillis != 20000 ||
			!bytes.Equal(m.Subscription, consumerMeta("t")) || !bytes.Equal(m.Assignment, assignmentFor(int32(i))) {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	// Heartbeats and a second sync change nothing: no new record.
	e.heartbeat(4, "g", ids[1], gen)
	e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", ids[1], gen, nil))
	if n := len(e.groupRecords("g")); n != 1 {
		t.Fatalf("%d records after heartbeats, want 1", n)
	}

	// One leaves: the group rebalances, nothing is written until the
	// next generation is assigned.
	if resp := e.c.HandleLeaveGroup(context.Background(), leaveReq("g", ids[1])); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v", resp)
	}
	if n := len(e.groupRecords("g")); n != 1 {
		t.Fatalf("%d records during the rebalance, want 1", n)
	}
	r := recv(t, e.joinAsync(joinReq(9, "g", ids[0])), "rejoin")
	e.syncAll("g", ids[:1], r.LeaderID, r.Generation)
	recs = e.groupRecords("g")
	if len(recs) != 2 || recs[1].value.Generation != gen+1 || len(recs[1].value.Members) != 1 {
		t.Fatalf("records after the second generation: %+v", recs)
	}

	// The last member leaves: an Empty record, at the generation the
	// empty join phase ended with, without members or protocol.
	e.c.HandleLeaveGroup(context.Background(), leaveReq("g", ids[0]))
	recs = e.groupRecords("g")
	if len(recs) != 3 {
		t.Fatalf("%d records after the last member left, want 3", len(recs))
	}
	if v := recs[2].value; v == nil || v.Generation != gen+2 || len(v.Members) != 0 || v.Protocol != nil || v.Leader != nil {
		t.Fatalf("empty record: %+v", v)
	}

	// DeleteGroups writes the tombstone.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"g"}
	if resp := e.c.HandleDeleteGroups(context.Background(), dg); resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", resp.Groups)
	}
	recs = e.groupRecords("g")
	if len(recs) != 4 || recs[3].value != nil {
		t.Fatalf("records after delete: %+v", recs)
	}
	e.close()
	e.open()
	if st := e.state("g"); st != "Dead" {
		t.Fatalf("deleted group is %s after a restart", st)
	}
}

// A member whose session expires is dropped by the tick loop; when it was
// the last one, the Empty record is written without any request.
func TestGroupMetadataWrittenWhenLastSessionExpires(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 1)
	e.stableGroup("g", 1)
	e.clock.Advance(11 * time.Second)
	e.c.Tick() // the session expires: PreparingRebalance, then Empty
	e.c.Tick()
	recs := e.waitGroupRecords("g", 2)
	if v := recs[1].value; v == nil || len(v.Members) != 0 || v.Generation != 2 {
		t.Fatalf("record after expiry: %+v", v)
	}
}

func TestLoadedGroupKeepsItsGeneration(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	ids, leader, gen := e.stableGroup("g", 2)
	before, _ := e.c.Describe("g")
	e.close()
	e.clock.Advance(5 * time.Second) // the coordinator was away for a while
	e.open()

	after, ok := e.c.Describe("g")
	if !ok || after.State != "Stable" || after.Generation != gen || after.Leader != leader || after.Protocol != "range" ||
		len(after.Members) != 2 {
		t.Fatalf("loaded group: %+v", after)
	}
	for i := range before.Members {
		b, a := before.Members[i], after.Members[i]
		if a.MemberID != b.MemberID || !bytes.Equal(a.assignment, b.assignment) || !bytes.Equal(a.metadata, b.metadata) {
			t.Fatalf("member %d before %+v after %+v", i, b, a)
		}
	}
	// The old generation's heartbeats, syncs and commits are accepted:
	// no rebalance.
	for _, id := range ids {
		if code := e.heartbeat(4, "g", id, gen); code != 0 {
			t.Fatalf("heartbeat of %s after the load: %d", id, code)
		}
	}
	resp := e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", ids[1], gen, nil))
	if resp.ErrorCode != 0 || !bytes.Equal(resp.MemberAssignment, assignmentFor(1)) {
		t.Fatalf("sync after the load: %+v", resp)
	}
	if codes := e.commit(commitReq(8, "g", ids[0], gen, "t", map[int32]int64{0: 7})); codes[0] != 0 {
		t.Fatalf("commit after the load: %v", codes)
	}
	if got := e.fetchV1("g", "t", 0); got[0] != 7 {
		t.Fatalf("committed %v", got)
	}
	// A rejoin with the same protocols gets the current generation back.
	r := recv(t, e.joinAsync(joinReq(9, "g", ids[1])), "rejoin of a follower")
	if r.ErrorCode != 0 || r.Generation != gen || r.LeaderID != leader {
		t.Fatalf("rejoin after the load: %+v", r)
	}
	if code := e.heartbeat(4, "g", "stranger", gen); code != errUnknownMemberID {
		t.Fatalf("heartbeat of an unknown member: %d", code)
	}
	if n := len(e.groupRecords("g")); n != 1 {
		t.Fatalf("%d metadata records, want the one of the first generation", n)
	}
}

// Loaded members get a fresh session: one that never comes back expires a
// session timeout after the load, and the others rebalance without it.
func TestLoadedMemberThatNeverReturnsExpires(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	ids, _, gen := e.stableGroup("g", 2)
	e.close()
	e.clock.Advance(time.Minute) // longer than the session timeout
	e.open()
	e.c.Tick()
	if d, _ := e.c.Describe("g"); d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("members expired at the load: %+v", d)
	}
	for step := 0; step < 3; step++ {
		e.clock.Advance(4 * time.Second)
		if code := e.heartbeat(4, "g", ids[0], gen); code != 0 {
			t.Fatalf("heartbeat at step %d: %d", step, code)
		}
		e.c.Tick()
	}
	// 12 s after the load: ids[1] (10 s session) is gone.
	if d, _ := e.c.Describe("g"); d.State != "PreparingRebalance" || len(d.Members) != 1 || d.Members[0].MemberID != ids[0] {
		t.Fatalf("after the silent member's session: %+v", d)
	}
	if code := e.heartbeat(4, "g", ids[0], gen); code != errRebalanceInProgress {
		t.Fatalf("heartbeat of the live member: %d", code)
	}
	r := recv(t, e.joinAsync(joinReq(9, "g", ids[0])), "rejoin")
	if r.Generation != gen+1 || r.LeaderID != ids[0] || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
}

// A group of the coordinator's own consumers has no metadata record (its
// instances keep theirs); once a Kafka client's generation was written, a
// generation with an instance in it is written without members, so a new
// coordinator does not restore a generation it cannot drive.
func TestConsumerInstanceGroupsAreNotRestored(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	if _, err := e.c.CreateConsumer("rest", ConsumerOptions{Name: "a", Format: "json"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe("rest", "a", []string{"t"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	if d, _ := e.c.Describe("rest"); d.State != "Stable" {
		t.Fatalf("instance group: %+v", d)
	}
	e.c.Tick()
	time.Sleep(20 * time.Millisecond) // nothing is due: no write to wait for
	if recs := e.groupRecords("rest"); len(recs) != 0 {
		t.Fatalf("instance group has metadata records: %+v", recs)
	}

	_, _, gen := e.stableGroup("g", 1)
	if _, err := e.c.CreateConsumer("g", ConsumerOptions{Name: "b", Format: "json"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe("g", "b", []string{"t"}); err != nil {
		t.Fatal(err)
	}
	d, _ := e.c.Describe("g")
	kafka := d.Members[0].MemberID
	if d.Members[0].Consumer != "" {
		kafka = d.Members[1].MemberID
	}
	r := recv(t, e.joinAsync(joinReq(9, "g", kafka)), "rejoin with the instance")
	if r.Generation != gen+1 {
		t.Fatalf("rejoin: %+v", r)
	}
	if sr := e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", kafka, r.Generation, nil)); sr.ErrorCode != 0 {
		t.Fatalf("sync: %+v", sr)
	}
	e.c.Tick()
	recs := e.waitGroupRecords("g", 2)
	if v := recs[1].value; v.Generation != gen+1 || len(v.Members) != 0 {
		t.Fatalf("mixed generation recorded as %+v", v)
	}
}

func TestGroupMetadataValueVersions(t *testing.T) {
	md := &groupMetadata{protocolType: "consumer", generation: 4, protocol: "range", leader: "a", stateTime: 1234,
		members: []persistedMember{
			{id: "a", instanceID: "i-a", clientID: "c", clientHost: "/127.0.0.1", rebalanceTimeout: 20 * time.Second,
				sessionTimeout: 10 * time.Second, subscription: []byte{1}, assignment: []byte{2}},
			{id: "b", clientID: "c", clientHost: "/127.0.0.1", rebalanceTimeout: time.Minute, sessionTimeout: 45 * time.Second},
		}}
	got, ok := parseGroupMetadataValue(groupMetadataValue(md))
	if !ok || got.generation != 4 || got.leader != "a" || got.stateTime != 1234 || len(got.members) != 2 ||
		got.members[0].instanceID != "i-a" || got.members[0].rebalanceTimeout != 20*time.Second ||
		!bytes.Equal(got.members[0].assignment, []byte{2}) || got.members[1].sessionTimeout != 45*time.Second {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if name, ok := parseGroupMetadataKey(groupMetadataKey("g")); !ok || name != "g" {
		t.Fatalf("key: %q %v", name, ok)
	}
	// Older versions, as Kafka before 2.3 (v2), 2.1 (v1) and 0.10.1 (v0)
	// wrote them: no instance ids, no state time, no rebalance timeout.
	for version := int16(0); version <= 2; version++ {
		v := kmsg.NewGroupMetadataValue()
		p, l := "range", "a"
		v.Version, v.ProtocolType, v.Generation, v.Protocol, v.Leader = version, "consumer", 1, &p, &l
		v.Members = []kmsg.GroupMetadataValueMember{{MemberID: "a", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 30000}}
		got, ok := parseGroupMetadataValue(v.AppendTo(nil))
		if !ok || len(got.members) != 1 || got.members[0].sessionTimeout != 10*time.Second {
			t.Fatalf("v%d: %+v %v", version, got, ok)
		}
		wantRebalance := 30 * time.Second
		if version == 0 {
			wantRebalance = 10 * time.Second
		}
		if got.members[0].rebalanceTimeout != wantRebalance {
			t.Fatalf("v%d rebalance timeout %v", version, got.members[0].rebalanceTimeout)
		}
	}
	bad := map[string]*groupMetadata{
		"leader not a member": {protocolType: "consumer", protocol: "range", leader: "z", members: md.members},
		"duplicate member":    {protocolType: "consumer", protocol: "range", leader: "a", members: []persistedMember{md.members[0], md.members[0]}},
		"no protocol":         {protocolType: "consumer", leader: "a", members: md.members[:1]},
		"zero session":        {protocolType: "consumer", protocol: "range", leader: "a", members: []persistedMember{{id: "a", rebalanceTimeout: time.Second}}},
		"negative generation": {generation: -3},
	}
	for what, md := range bad {
		if got, ok := parseGroupMetadataValue(groupMetadataValue(md)); ok {
			t.Fatalf("%s accepted: %+v", what, got)
		}
	}
	v4 := kmsg.NewGroupMetadataValue()
	v4.Version = 4
	if _, ok := parseGroupMetadataValue(v4.AppendTo(nil)); ok {
		t.Fatal("value v4 accepted")
	}
}

func FuzzParseGroupMetadata(f *testing.F) {
	f.Add(groupMetadataKey("g"), groupMetadataValue(&groupMetadata{protocolType: "consumer", generation: 1,
		protocol: "range", leader: "a", members: []persistedMember{{id: "a", sessionTimeout: time.Second,
			rebalanceTimeout: time.Second, subscription: []byte{0, 1}, assignment: []byte{2}}}}))
	f.Add([]byte{0, 2, 0xff, 0xff}, []byte{0, 3, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		parseGroupMetadataKey(key)
		md, ok := parseGroupMetadataValue(value)
		if !ok {
			return
		}
		if len(md.members) > len(value) {
			t.Fatalf("%d members from %d bytes", len(md.members), len(value))
		}
		// What parses re-encodes to a record that parses the same.
		again, ok := parseGroupMetadataValue(groupMetadataValue(md))
		if !ok || again.generation != md.generation || len(again.members) != len(md.members) || again.leader != md.leader {
			t.Fatalf("re-encoded %+v parses as %+v (%v)", md, again, ok)
		}
	})
}
