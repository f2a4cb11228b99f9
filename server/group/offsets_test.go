package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

func commitReq(version int16, group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.MemberID, r.Generation = version, group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p := int32(0); p < 16; p++ {
		off, ok := offsets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		md := "md"
		rp.Partition, rp.Offset, rp.Metadata, rp.LeaderEpoch = p, off, &md, 7
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func (e *testEnv) commit(req *kmsg.OffsetCommitRequest) []int16 {
	e.t.Helper()
	var codes []int16
	for _, t := range e.c.HandleOffsetCommit(context.Background(), req).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// fetchV1 reads committed offsets with OffsetFetch v1 (explicit partitions).
func (e *testEnv) fetchV1(group, topic string, partitions ...int32) map[int32]int64 {
	e.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group = 1, group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	r.Topics = append(r.Topics, rt)
	out := map[int32]int64{}
	for _, t := range e.c.HandleOffsetFetch(context.Background(), r).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				e.t.Fatalf("fetch %s-%d: %d", t.Topic, p.Partition, p.ErrorCode)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func TestOffsetsSurviveRestart(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 3)
	if codes := e.commit(commitReq(2, "g", "", -1, "t", map[int32]int64{0: 10, 1: 20, 2: 30})); codes[0]+codes[1]+codes[2] != 0 {
		t.Fatalf("simple commit: %v", codes)
	}
	if codes := e.commit(commitReq(8, "g", "", -1, "t", map[int32]int64{1: 21})); codes[0] != 0 {
		t.Fatalf("second commit: %v", codes)
	}
	if codes := e.commit(commitReq(8, "other", "", -1, "t", map[int32]int64{0: 5})); codes[0] != 0 {
		t.Fatalf("other group: %v", codes)
	}
	want := map[int32]int64{0: 10, 1: 21, 2: 30}
	check := func(when string) {
		t.Helper()
		got := e.fetchV1("g", "t", 0, 1, 2)
		for p, off := range want {
			if got[p] != off {
				t.Fatalf("%s: partition %d at %d, want %d (all %v)", when, p, got[p], off, got)
			}
		}
	}
	check("before restart")
	e.close()
	e.open()
	check("after restart")

	// v8: several groups, null topics = everything committed, with the
	// leader epoch and metadata of the commit.
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	for _, g := range []string{"g", "other", "unknown"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		r.Groups = append(r.Groups, rg)
	}
	resp := e.c.HandleOffsetFetch(context.Background(), r)
	if len(resp.Groups) != 3 || len(resp.Groups[0].Topics[0].Partitions) != 3 || len(resp.Groups[2].Topics) != 0 {
		t.Fatalf("v8 fetch: %+v", resp.Groups)
	}
	p1 := resp.Groups[0].Topics[0].Partitions[1]
	if p1.Offset != 21 || p1.LeaderEpoch != 7 || p1.Metadata == nil || *p1.Metadata != "md" {
		t.Fatalf("v8 partition 1: %+v", p1)
	}
	if resp.Groups[1].Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("other group: %+v", resp.Groups[1])
	}
	// A partition never committed reads -1.
	if got := e.fetchV1("unknown", "t", 0); got[0] != -1 {
		t.Fatalf("uncommitted: %v", got)
	}
}

func TestOffsetRecordsUseKafkaFormats(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 1)
	e.commit(commitReq(7, "g", "", -1, "t", map[int32]int64{0: 42}))
	res, err := e.broker.Fetch(context.Background(), server.FetchRequest{Topic: OffsetsTopic, Partition: OffsetsPartition("g", 3), MaxBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	records.Decode(res.Data, 0, 0, func(r records.Record) bool {
		var k kmsg.OffsetCommitKey
		var v kmsg.OffsetCommitValue
		if k.ReadFrom(r.Key) != nil || v.ReadFrom(r.Value) != nil {
			t.Fatalf("record %x / %x is not a Kafka offset commit", r.Key, r.Value)
		}
		if k.Version != 1 || k.Group != "g" || k.Topic != "t" || k.Partition != 0 ||
			v.Version != 3 || v.Offset != 42 || v.LeaderEpoch != 7 || v.Metadata != "md" || v.CommitTimestamp != e.clock.Now().UnixMilli() {
			t.Fatalf("key %+v value %+v", k, v)
		}
		n++
		return true
	})
	if n != 1 {
		t.Fatalf("%d records", n)
	}
	info, _ := e.broker.DescribeTopic(OffsetsTopic)
	for _, c := range info.Configs {
		if c.Name == server.CfgCleanupPolicy && c.Value != "compact" {
			t.Fatalf("cleanup.policy %s", c.Value)
		}
	}
}

func TestCommitChecksMembership(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	ids, _, gen := e.stableGroup("g", 2)
	if codes := e.commit(commitReq(8, "g", ids[0], gen, "t", map[int32]int64{0: 1})); codes[0] != 0 {
		t.Fatalf("member commit: %v", codes)
	}
	if codes := e.commit(commitReq(8, "g", ids[0], gen+1, "t", map[int32]int64{0: 1})); codes[0] != errIllegalGeneration {
		t.Fatalf("wrong generation: %v", codes)
	}
	if codes := e.commit(commitReq(8, "g", "ghost", gen, "t", map[int32]int64{0: 1})); codes[0] != errUnknownMemberID {
		t.Fatalf("unknown member: %v", codes)
	}
	if codes := e.commit(commitReq(8, "g", "", -1, "t", map[int32]int64{0: 1})); codes[0] != errUnknownMemberID {
		t.Fatalf("generation -1 on a live group: %v", codes)
	}
	if codes := e.commit(commitReq(8, "g", ids[0], gen, "t", map[int32]int64{5: 1})); codes[0] != errUnknownTopicOrPartition {
		t.Fatalf("unknown partition: %v", codes)
	}
	// During a rebalance the old generation may still commit (Kafka allows
	// it until the join phase completes).
	e.joinNew(9, "g")
	if codes := e.commit(commitReq(8, "g", ids[1], gen, "t", map[int32]int64{1: 9})); codes[0] != 0 {
		t.Fatalf("commit during PreparingRebalance: %v", codes)
	}
}

func TestDeleteOffsetsAndGroups(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	e.createTopic("u", 1)
	e.commit(commitReq(8, "g", "", -1, "t", map[int32]int64{0: 1, 1: 2}))
	e.commit(commitReq(8, "g", "", -1, "u", map[int32]int64{0: 3}))
	e.commit(commitReq(8, "h", "", -1, "t", map[int32]int64{0: 4}))

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	ot := kmsg.NewOffsetDeleteRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetDeleteRequestTopicPartition()
	op.Partition = 1
	ot.Partitions = append(ot.Partitions, op)
	od.Topics = append(od.Topics, ot)
	if resp := e.c.HandleOffsetDelete(context.Background(), od); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"h", "nope"}
	resp := e.c.HandleDeleteGroups(context.Background(), dg)
	if resp.Groups[0].ErrorCode != 0 || resp.Groups[1].ErrorCode != errGroupIDNotFound {
		t.Fatalf("delete groups: %+v", resp.Groups)
	}
	check := func(when string) {
		t.Helper()
		if got := e.fetchV1("g", "t", 0, 1); got[0] != 1 || got[1] != -1 {
			t.Fatalf("%s: g/t %v", when, got)
		}
		if got := e.fetchV1("g", "u", 0); got[0] != 3 {
			t.Fatalf("%s: g/u %v", when, got)
		}
		if got := e.fetchV1("h", "t", 0); got[0] != -1 {
			t.Fatalf("%s: deleted group h %v", when, got)
		}
	}
	check("before restart")
	e.close()
	e.open()
	check("after restart (tombstones)")
	if gs := e.c.List(); len(gs) != 1 || gs[0].Group != "g" || gs[0].State != "Empty" {
		t.Fatalf("groups after restart: %+v", gs)
	}

	// A group with members cannot be deleted, and its subscribed topics'
	// offsets cannot be deleted.
	e.stableGroup("live", 1)
	dg.Groups = []string{"live"}
	if resp := e.c.HandleDeleteGroups(context.Background(), dg); resp.Groups[0].ErrorCode != errNonEmptyGroup {
		t.Fatalf("delete live group: %d", resp.Groups[0].ErrorCode)
	}
	od.Group = "live"
	if resp := e.c.HandleOffsetDelete(context.Background(), od); resp.Topics[0].Partitions[0].ErrorCode != errGroupSubscribedToTopic {
		t.Fatalf("delete subscribed offsets: %+v", resp)
	}
}

func TestFindCoordinator(t *testing.T) {
	e := newTestEnv(t)
	for _, v := range []int16{0, 1, 2, 3} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorKey = v, "g"
		resp := e.c.HandleFindCoordinator(context.Background(), r)
		if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != "broker.example" || resp.Port != 19092 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKeys = 4, []string{"a", "b"}
	resp := e.c.HandleFindCoordinator(context.Background(), r)
	if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "b" || resp.Coordinators[1].Port != 19092 {
		t.Fatalf("v4: %+v", resp)
	}
	r.CoordinatorType = 1
	resp = e.c.HandleFindCoordinator(context.Background(), r)
	if resp.Coordinators[0].ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("transaction key: %+v", resp.Coordinators[0])
	}
	r = kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKey, r.CoordinatorType = 2, "tx", 1
	if resp := e.c.HandleFindCoordinator(context.Background(), r); resp.ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("v2 transaction key: %+v", resp)
	}
}

func TestDescribeAndListGroups(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 2)
	ids, leader, _ := e.stableGroup("g", 2)
	e.commit(commitReq(2, "idle", "", -1, "t", map[int32]int64{0: 1}))

	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups = 5, []string{"g", "missing"}
	resp := e.c.HandleDescribeGroups(context.Background(), dr)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 2 || g.Members[0].MemberID != ids[0] {
		t.Fatalf("describe g: %+v", g)
	}
	if len(g.Members[1].MemberAssignment) == 0 || resp.Groups[1].State != "Dead" {
		t.Fatalf("describe: %+v", resp.Groups)
	}
	lr := kmsg.NewPtrListGroupsRequest()
	lr.Version = 4
	if got := e.c.HandleListGroups(context.Background(), lr).Groups; len(got) != 2 {
		t.Fatalf("list: %+v", got)
	}
	lr.StatesFilter = []string{"stable"}
	got := e.c.HandleListGroups(context.Background(), lr).Groups
	if len(got) != 1 || got[0].Group != "g" || got[0].ProtocolType != "consumer" || got[0].GroupState != "Stable" {
		t.Fatalf("list stable: %+v", got)
	}
	_ = leader

	// Lag: committed 1 on idle/t-0, high watermark 3.
	e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "t", Records: []server.ProduceRecord{
		{Partition: 0, Record: records.Record{Value: []byte("a")}},
		{Partition: 0, Record: records.Record{Value: []byte("b")}},
		{Partition: 0, Record: records.Record{Value: []byte("c")}},
	}})
	lag, ok := e.c.Lag("idle")
	if !ok || len(lag) != 1 || lag[0].Committed != 1 || lag[0].HighWatermark != 3 || lag[0].Lag != 2 {
		t.Fatalf("lag: %+v", lag)
	}
	lag, _ = e.c.Lag("g")
	if len(lag) != 2 || lag[0].Member != ids[0] || lag[0].Committed != -1 || lag[0].Lag != 3 {
		t.Fatalf("lag of g: %+v", lag)
	}
}

func TestConsumerInstanceSharesGroupWithKafkaMember(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 4)
	if _, err := e.c.CreateConsumer("g", ConsumerOptions{Name: "rest", Format: "json", AutoOffsetReset: "earliest"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe("g", "rest", []string{"t"}); err != nil {
		t.Fatal(err)
	}
	kid, w := e.joinNew(9, "g")
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	jr := recv(t, w, "kafka member join")
	if jr.ErrorCode != 0 || jr.LeaderID == kid || jr.Protocol == nil || *jr.Protocol != "range" {
		t.Fatalf("kafka member join: %+v (the REST instance joined first and leads)", jr)
	}
	sr := e.c.HandleSyncGroup(context.Background(), syncReq(5, "g", kid, jr.Generation, nil))
	var a kmsg.ConsumerMemberAssignment
	if sr.ErrorCode != 0 || a.ReadFrom(sr.MemberAssignment) != nil || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
		t.Fatalf("kafka member sync: %+v", sr)
	}
	kafkaOwns := map[int32]bool{}
	for _, p := range a.Topics[0].Partitions {
		kafkaOwns[p] = true
	}
	var recs []server.ProduceRecord
	for p := int32(0); p < 4; p++ {
		recs = append(recs, server.ProduceRecord{Partition: p, Record: records.Record{Value: []byte{byte('0' + p)}}})
	}
	if _, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "t", Records: recs}); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Poll(context.Background(), "g", "rest", PollOptions{Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("REST instance read %d records, want the 2 of its partitions", len(got))
	}
	for _, r := range got {
		if kafkaOwns[r.Partition] {
			t.Fatalf("REST instance read partition %d that the Kafka member owns", r.Partition)
		}
	}
	if err := e.c.CommitConsumer(context.Background(), "g", "rest", nil); err != nil {
		t.Fatal(err)
	}
	co, _ := e.c.ConsumerCommitted("g", "rest", nil)
	if len(co) != 2 || co[0].Offset != 1 || co[1].Offset != 1 {
		t.Fatalf("committed: %+v", co)
	}
	// Deleting the instance leaves the group: the Kafka member is told to rejoin.
	if err := e.c.DeleteConsumer(context.Background(), "g", "rest"); err != nil {
		t.Fatal(err)
	}
	if code := e.heartbeat(4, "g", kid, jr.Generation); code != errRebalanceInProgress {
		t.Fatalf("heartbeat after the instance left: %d", code)
	}
	r := recv(t, e.joinAsync(joinReq(9, "g", kid)), "rejoin")
	if r.LeaderID != kid || len(r.Members) != 1 {
		t.Fatalf("rejoin alone: %+v", r)
	}
	if _, err := e.c.Poll(context.Background(), "g", "rest", PollOptions{}); err == nil {
		t.Fatal("poll of a deleted instance succeeded")
	}
}

func TestConsumerInstanceExpires(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ConsumerIdleTimeout = time.Minute })
	e.createTopic("t", 1)
	e.c.CreateConsumer("g", ConsumerOptions{Name: "a", AutoCommit: true})
	e.c.Subscribe("g", "a", []string{"t"})
	e.clock.Advance(3 * time.Second)
	e.c.Tick()
	if d, _ := e.c.Describe("g"); len(d.Members) != 1 || d.State != "Stable" {
		t.Fatalf("group: %+v", d)
	}
	e.clock.Advance(2 * time.Minute)
	e.c.Tick()
	if _, err := e.c.Consumer("g", "a"); err == nil {
		t.Fatal("idle instance did not expire")
	}
	if d, ok := e.c.Describe("g"); ok && len(d.Members) != 0 {
		t.Fatalf("expired instance still a member: %+v", d)
	}
}

// By default __consumer_offsets has Kafka's 50 partitions, each group's
// commits land on the partition Kafka's hash picks, and all 50 are read
// back at startup; a topic created earlier with another count keeps it.
func TestOffsetsTopicDefaultsToFiftyPartitions(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.OffsetsTopicPartitions = 0 })
	if n, err := e.broker.PartitionCount(OffsetsTopic); err != nil || n != 50 {
		t.Fatalf("%s has %d partitions (%v), want 50", OffsetsTopic, n, err)
	}
	e.createTopic("t", 1)
	groups := []string{"billing", "audit", "g-0", "g-1", "g-2", "g-3"}
	used := map[int32]bool{}
	for i, g := range groups {
		if codes := e.commit(commitReq(8, g, "", -1, "t", map[int32]int64{0: int64(10 + i)})); codes[0] != 0 {
			t.Fatalf("commit %s: %v", g, codes)
		}
		p := OffsetsPartition(g, 50)
		used[p] = true
		if part, err := e.broker.Partition(OffsetsTopic, p); err != nil || part.HighWatermark() == 0 {
			t.Fatalf("group %s: partition %d of %s holds nothing (%v)", g, p, OffsetsTopic, err)
		}
	}
	if len(used) < 2 {
		t.Fatalf("%d groups all on one partition", len(groups))
	}
	e.close()
	e.cfg.OffsetsTopicPartitions = 7 // an existing topic keeps its count
	e.open()
	if n, _ := e.broker.PartitionCount(OffsetsTopic); n != 50 {
		t.Fatalf("after restart %s has %d partitions", OffsetsTopic, n)
	}
	for i, g := range groups {
		if got := e.fetchV1(g, "t", 0)[0]; got != int64(10+i) {
			t.Fatalf("after restart %s is at %d, want %d", g, got, 10+i)
		}
	}
}

// A group that exists only through a commit has no offsets until the
// commit's write lands; a Tick meanwhile must not forget it, or the
// offsets land in a group nobody can find (seen as a 404 on reset).
func TestTickDuringFirstCommitKeepsTheGroup(t *testing.T) {
	e := newTestEnv(t)
	e.createTopic("t", 1)
	stop := make(chan struct{})
	ticking := make(chan struct{})
	go func() {
		defer close(ticking)
		for {
			select {
			case <-stop:
				return
			default:
				e.c.Tick()
			}
		}
	}()
	const groups = 40
	for i := range groups {
		if codes := e.commit(commitReq(8, fmt.Sprintf("new-%d", i), "", -1, "t", map[int32]int64{0: 7})); codes[0] != 0 {
			t.Fatalf("commit %d: %v", i, codes)
		}
	}
	close(stop)
	<-ticking
	for i := range groups {
		name := fmt.Sprintf("new-%d", i)
		if _, ok := e.c.Describe(name); !ok {
			t.Fatalf("group %s was forgotten while its first commit was written", name)
		}
		if got := e.fetchV1(name, "t", 0)[0]; got != 7 {
			t.Fatalf("group %s at %d, want 7", name, got)
		}
	}
}
