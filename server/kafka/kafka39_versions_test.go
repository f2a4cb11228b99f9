package kafka

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/server/records/legacytest"
)

// kafka39 is the range Kafka 3.9 serves of each API ferry implements (its
// clients/src/main/resources/common/message/*Request.json validVersions).
// Every floor is 0: 4.0 raised those of Fetch, ListOffsets, OffsetCommit,
// OffsetFetch, CreateTopics, DeleteTopics and DescribeConfigs (KIP-896),
// which old tools still send. ApiVersions goes beyond 3.9 to v5
// (KIP-1242, which franz-go 1.22 opens every connection with).
var kafka39 = map[int16][2]int16{
	0: {0, 11}, 1: {0, 17}, 2: {0, 9}, 3: {0, 12}, 8: {0, 9}, 9: {0, 9}, 10: {0, 5}, 11: {0, 9},
	12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 5}, 16: {0, 5}, 18: {0, 5}, 19: {0, 7}, 20: {0, 6},
	21: {0, 2}, 22: {0, 5}, 23: {0, 4}, 27: {0, 1}, 29: {0, 3}, 30: {0, 3}, 31: {0, 3}, 32: {0, 4}, 33: {0, 2}, 35: {0, 4}, 37: {0, 3}, 42: {0, 2}, 43: {0, 2}, 44: {0, 1}, 45: {0, 0}, 46: {0, 0},
	47: {0, 0}, 60: {0, 1}, 61: {0, 0},
	17: {0, 1}, 36: {0, 2}, 50: {0, 0}, 51: {0, 0}, // SASL and its users
	48: {0, 1}, 49: {0, 1}, // client quotas
	57: {0, 1}, // UpdateFeatures
}

func TestApiVersionsAdvertisesKafka39Ranges(t *testing.T) {
	ts := newTestServer(t)
	resp := do[*kmsg.ApiVersionsResponse](ts.dial(t), kmsg.NewPtrApiVersionsRequest(), 0)
	seen := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		want, ok := kafka39[k.ApiKey]
		if !ok {
			t.Fatalf("api %d (%s) advertised but not in the Kafka 3.9 table", k.ApiKey, kmsg.NameForKey(k.ApiKey))
		}
		if k.MinVersion != want[0] || k.MaxVersion != want[1] {
			t.Fatalf("%s: versions %d-%d, Kafka 3.9 serves %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, want[0], want[1])
		}
		seen[k.ApiKey] = true
	}
	if len(seen) != len(kafka39) {
		t.Fatalf("advertised %d apis, want %d", len(seen), len(kafka39))
	}
}

func TestListOffsetsV0AnswersOldStyleOffsets(t *testing.T) {
	c := listOffsetsTopic(t, "lo0")
	for _, tc := range []struct {
		ts   int64
		max  int32
		want []int64
	}{
		{-1, 1, []int64{3}}, {-2, 1, []int64{0}}, {-1, 10, []int64{3}}, {2000, 1, []int64{1}},
		{9000, 1, []int64{3}}, {-1, 0, []int64{}},
	} {
		req := listOffsetsReq("lo0", tc.ts)
		req.Topics[0].Partitions[0].MaxNumOffsets = tc.max
		p := do[*kmsg.ListOffsetsResponse](c, req, 0).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || !slices.Equal(p.OldStyleOffsets, tc.want) {
			t.Fatalf("v0 ts %d max %d: %+v, want offsets %v", tc.ts, tc.max, p, tc.want)
		}
	}
	req := listOffsetsReq("no-such-topic-and-no-autocreate", -1)
	req.Topics[0].Partitions[0].Partition = 7
	if p := do[*kmsg.ListOffsetsResponse](c, req, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", p)
	}
}

func TestFetchV0ToV3DownConvertsToMessageSets(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	stored := []records.Record{
		{Key: []byte("k0"), Value: []byte("v0"), Timestamp: 1000},
		{Key: nil, Value: []byte("v1"), Timestamp: 2000, Headers: []records.Header{{Key: "h", Value: []byte("x")}}},
		{Key: []byte("k2"), Value: nil, Timestamp: 3000},
		{Key: []byte("k3"), Value: bytes.Repeat([]byte("z"), 500), Timestamp: 4000},
	}
	for i, codec := range []records.Codec{records.None, records.Snappy} { // two batches: 0-1 plain, 2-3 snappy
		var b records.Builder
		b.Add(stored[2*i])
		b.Add(stored[2*i+1])
		data, _ := b.AppendBatch(nil, records.BatchOptions{Codec: codec})
		if p := produceOne(c, 9, "old", data); p.ErrorCode != 0 {
			t.Fatalf("produce: %+v", p)
		}
	}
	for v := int16(0); v <= 3; v++ {
		wantMagic := int8(1)
		if v < 2 {
			wantMagic = 0
		}
		resp := do[*kmsg.FetchResponse](c, fetchReq("old", 0, 1, 0, 1), v)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 4 {
			t.Fatalf("fetch v%d: %+v", v, p)
		}
		got := legacytest.Parse(t, p.RecordBatches)
		if len(got) != 3 {
			t.Fatalf("fetch v%d from offset 1: %d messages, want 3", v, len(got))
		}
		for i, m := range got {
			want := stored[i+1]
			wantTS := want.Timestamp
			if wantMagic == 0 {
				wantTS = -1
			}
			if m.Offset != int64(i+1) || m.Magic != wantMagic || m.Attrs != 0 || m.Timestamp != wantTS ||
				!bytes.Equal(m.Key, want.Key) || (m.Key == nil) != (want.Key == nil) ||
				!bytes.Equal(m.Value, want.Value) || (m.Value == nil) != (want.Value == nil) {
				t.Fatalf("fetch v%d message %d: %+v, want offset %d magic %d of %+v", v, i, m, i+1, wantMagic, want)
			}
		}
	}
	// Limits count converted bytes, in whole messages, and never starve the first.
	small := fetchReq("old", 0, 0, 0, 1)
	small.Topics[0].Partitions[0].PartitionMaxBytes = 40
	if got := legacytest.Parse(t, do[*kmsg.FetchResponse](c, small, 1).Topics[0].Partitions[0].RecordBatches); len(got) != 1 || got[0].Offset != 0 {
		t.Fatalf("v1 with PartitionMaxBytes 40: %+v, want message 0 alone", got)
	}
	// v3's MaxBytes: messages 0 and 1 are 38 and 36 bytes in magic 1.
	for maxBytes, want := range map[int32]int{74: 2, 73: 1} {
		capped := fetchReq("old", 0, 0, 0, 1)
		capped.MaxBytes = maxBytes
		if got := legacytest.Parse(t, do[*kmsg.FetchResponse](c, capped, 3).Topics[0].Partitions[0].RecordBatches); len(got) != want {
			t.Fatalf("v3 with MaxBytes %d: %d messages, want %d", maxBytes, len(got), want)
		}
	}
	// The current format still sees what was stored, headers included.
	p := do[*kmsg.FetchResponse](c, fetchReq("old", 0, 0, 0, 1), 12).Topics[0].Partitions[0]
	if got := fetchValues(t, p, 0); len(got) != 4 {
		t.Fatalf("fetch v12: %q", got)
	}
}

func TestProduceV0ToV2AcceptsMessageSets(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	before := time.Now().UnixMilli()
	inner := legacytest.Set(
		legacytest.Message{Offset: 0, Magic: 1, Timestamp: 7000, Key: []byte("gk0"), Value: []byte("gv0")},
		legacytest.Message{Offset: 1, Magic: 1, Timestamp: 7001, Key: []byte("gk1"), Value: []byte("gv1")},
	)
	gz, err := records.Compress(records.Gzip, nil, inner)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    int16
		set  []byte
		base int64
	}{
		{0, legacytest.Set(legacytest.Message{Magic: 0, Key: []byte("k0"), Value: []byte("m0")}, legacytest.Message{Offset: 1, Magic: 0, Value: []byte("m0b")}), 0},
		{1, legacytest.Set(legacytest.Message{Magic: 0, Key: []byte("k1"), Value: []byte("m1")}), 2},
		{2, legacytest.Set(legacytest.Message{Magic: 1, Timestamp: 5000, Key: []byte("k2"), Value: []byte("m2")}), 3},
		{2, legacytest.Set(legacytest.Message{Offset: 1, Magic: 1, Attrs: int8(records.Gzip), Timestamp: 7001, Value: gz}), 4},
	} {
		if p := produceOne(c, tc.v, "oldp", tc.set); p.ErrorCode != 0 || p.BaseOffset != tc.base {
			t.Fatalf("produce v%d: %+v, want base offset %d", tc.v, p, tc.base)
		}
	}
	after := time.Now().UnixMilli()
	type rec struct {
		key, value string
		ts         int64
	}
	var got []rec
	p := do[*kmsg.FetchResponse](c, fetchReq("oldp", 0, 0, 0, 1), 12).Topics[0].Partitions[0]
	if err := records.Decode(p.RecordBatches, 0, 0, func(r records.Record) bool {
		got = append(got, rec{string(r.Key), string(r.Value), r.Timestamp})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []rec{{"k0", "m0", 0}, {"", "m0b", 0}, {"k1", "m1", 0}, {"k2", "m2", 5000}, {"gk0", "gv0", 7000}, {"gk1", "gv1", 7001}}
	if len(got) != len(want) {
		t.Fatalf("fetched %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		magic0 := w.ts == 0 // magic 0 has no timestamp: the broker's clock
		if g.key != w.key || g.value != w.value || !magic0 && g.ts != w.ts || magic0 && (g.ts < before || g.ts > after) {
			t.Fatalf("record %d: %+v, want %+v (magic 0 stamped in [%d, %d])", i, g, w, before, after)
		}
	}
	// A corrupt message set is refused and writes nothing.
	bad := legacytest.Set(legacytest.Message{Magic: 1, Timestamp: 1, Value: []byte("x")})
	bad[len(bad)-1] ^= 1
	if p := produceOne(c, 2, "oldp", bad); p.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad crc: %+v", p)
	}
	if part, _ := ts.broker.Partition("oldp", 0); part.LogEndOffset() != 6 {
		t.Fatalf("log end %d after a refused set, want 6", part.LogEndOffset())
	}
	// The old consumer reads back what the old producer wrote.
	set := do[*kmsg.FetchResponse](c, fetchReq("oldp", 0, 4, 0, 1), 2).Topics[0].Partitions[0].RecordBatches
	if m := legacytest.Parse(t, set); len(m) != 2 || string(m[1].Value) != "gv1" || m[1].Timestamp != 7001 || m[1].Offset != 5 {
		t.Fatalf("fetch v2 of the gzip set: %+v", m)
	}
}

func TestOldGroupAndAdminVersions(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "grp", batch(t, records.BatchOptions{}, "a", "b", "c"))
	commit := func(v int16, offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "old-group", -1
		md := "meta"
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "grp", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, Metadata: &md}}}}
		if p := do[*kmsg.OffsetCommitResponse](c, req, v).Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("offset commit v%d: %+v", v, p)
		}
	}
	fetch := func(v int16) kmsg.OffsetFetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "old-group"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "grp", Partitions: []int32{0}}}
		return do[*kmsg.OffsetFetchResponse](c, req, v).Topics[0].Partitions[0]
	}
	commit(0, 1)
	if p := fetch(0); p.ErrorCode != 0 || p.Offset != 1 || p.Metadata == nil || *p.Metadata != "meta" {
		t.Fatalf("offset fetch v0 after a v0 commit: %+v", p)
	}
	commit(1, 2)
	if p := fetch(0); p.Offset != 2 {
		t.Fatalf("offset fetch v0 after a v1 commit: %+v", p)
	}
	if p := fetch(1); p.Offset != 2 { // v1 reads the same store
		t.Fatalf("offset fetch v1: %+v", p)
	}

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "adm0", NumPartitions: 2, ReplicationFactor: 1}}
	if r := do[*kmsg.CreateTopicsResponse](c, ct, 0); r.Topics[0].ErrorCode != 0 || !slices.Contains(ts.broker.Topics(), "adm0") {
		t.Fatalf("create topics v0: %+v", r.Topics[0])
	}
	ct.Topics[0].Topic, ct.ValidateOnly = "adm1", true
	if r := do[*kmsg.CreateTopicsResponse](c, ct, 1); r.Topics[0].ErrorCode != 0 || slices.Contains(ts.broker.Topics(), "adm1") {
		t.Fatalf("create topics v1 validate only: %+v", r.Topics[0])
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "adm0", ConfigNames: []string{"retention.ms"}}}
	d := do[*kmsg.DescribeConfigsResponse](c, dc, 0)
	if r := d.Resources[0]; r.ErrorCode != 0 || len(r.Configs) != 1 || !r.Configs[0].IsDefault || r.Configs[0].Value == nil {
		t.Fatalf("describe configs v0: %+v", r)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"adm0"}
	if r := do[*kmsg.DeleteTopicsResponse](c, dt, 0); r.Topics[0].ErrorCode != 0 || slices.Contains(ts.broker.Topics(), "adm0") {
		t.Fatalf("delete topics v0: %+v", r.Topics[0])
	}
	md := do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 0) // v0: no topics = every topic
	var names []string
	for _, mt := range md.Topics {
		names = append(names, *mt.Topic)
	}
	if !slices.Contains(names, "grp") || slices.Contains(names, "adm0") {
		t.Fatalf("metadata v0 with no topics: %q, want every topic", names)
	}
}

// TestGroupV0Lifecycle: a 0.9-era group member (JoinGroup v0 has no
// rebalance timeout; the session timeout stands in) joins, gets its
// assignment, heartbeats and leaves.
func TestGroupV0Lifecycle(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.ProtocolType = "g0", 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("meta")}}
	j := do[*kmsg.JoinGroupResponse](c, join, 0) // waits out the initial rebalance delay
	if j.ErrorCode != 0 || j.MemberID == "" || j.LeaderID != j.MemberID || j.Generation != 1 || *j.Protocol != "range" || len(j.Members) != 1 {
		t.Fatalf("join v0: %+v", j)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g0", j.Generation, j.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("assigned")}}
	if s := do[*kmsg.SyncGroupResponse](c, sync, 0); s.ErrorCode != 0 || string(s.MemberAssignment) != "assigned" {
		t.Fatalf("sync v0: %+v", s)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "g0", j.Generation, j.MemberID
	if h := do[*kmsg.HeartbeatResponse](c, hb, 0); h.ErrorCode != 0 {
		t.Fatalf("heartbeat v0: %+v", h)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = "g0", j.Generation, j.MemberID
	produceOne(c, 9, "g0-topic", batch(t, records.BatchOptions{}, "a"))
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "g0-topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
	if r := do[*kmsg.OffsetCommitResponse](c, commit, 1); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset commit v1 in generation: %+v", r.Topics[0].Partitions[0])
	}
	commit.Generation++
	if r := do[*kmsg.OffsetCommitResponse](c, commit, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("offset commit v1 with a wrong generation: %+v", r.Topics[0].Partitions[0])
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g0", j.MemberID
	if l := do[*kmsg.LeaveGroupResponse](c, leave, 0); l.ErrorCode != 0 {
		t.Fatalf("leave v0: %+v", l)
	}
}

// TestNewestKafka39Versions: the top versions Kafka 3.9 serves that only
// add error codes or fields ferry ignores answer like the one below them.
func TestNewestKafka39Versions(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g9"}
	v4 := do[*kmsg.FindCoordinatorResponse](c, fc, 4)
	if v5 := do[*kmsg.FindCoordinatorResponse](c, fc, 5); len(v5.Coordinators) != 1 || v5.Coordinators[0].ErrorCode != v4.Coordinators[0].ErrorCode ||
		v5.Coordinators[0].NodeID != v4.Coordinators[0].NodeID || v5.Coordinators[0].Port != v4.Coordinators[0].Port {
		t.Fatalf("find coordinator v5: %+v, v4 answered %+v", v5.Coordinators, v4.Coordinators)
	}
	if r := do[*kmsg.InitProducerIDResponse](c, kmsg.NewPtrInitProducerIDRequest(), 5); r.ErrorCode != 0 || r.ProducerID < 1 {
		t.Fatalf("init producer id v5: %+v", r)
	}
	produceOne(c, 11, "t9", batch(t, records.BatchOptions{}, "a", "b"))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g9", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t9", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}}}
	if r := do[*kmsg.OffsetCommitResponse](c, commit, 9); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset commit v9: %+v", r)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	member := "someone"
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g9", MemberID: &member, MemberEpoch: 3,
		Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t9", Partitions: []int32{0}}}}}
	r := do[*kmsg.OffsetFetchResponse](c, of, 9)
	if len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 || r.Groups[0].Topics[0].Partitions[0].Offset != 2 {
		t.Fatalf("offset fetch v9: %+v", r)
	}
}

func TestFetchV13ToV17NameTopicsByID(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	produceOne(c, 11, "byid", batch(t, records.BatchOptions{Codec: records.Zstd}, "x", "y"))
	id, err := ts.broker.TopicID("byid")
	if err != nil || id == [16]byte{} {
		t.Fatalf("topic id %x: %v", id, err)
	}
	for v := int16(13); v <= 17; v++ {
		req := fetchReq("", 0, 0, 0, 1)
		req.Topics[0].TopicID = id
		req.Topics = append(req.Topics, kmsg.FetchRequestTopic{TopicID: [16]byte{1, 2, 3},
			Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}})
		resp := do[*kmsg.FetchResponse](c, req, v)
		if len(resp.Topics) != 2 || resp.Topics[0].TopicID != id || resp.Topics[1].TopicID != [16]byte{1, 2, 3} {
			t.Fatalf("fetch v%d: topics %+v", v, resp.Topics)
		}
		if got := fetchValues(t, resp.Topics[0].Partitions[0], 0); !slices.Equal(got, []string{"x", "y"}) || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch v%d by id: %q, %+v", v, got, resp.Topics[0].Partitions[0])
		}
		if p := resp.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code || len(p.RecordBatches) != 0 {
			t.Fatalf("fetch v%d of an unknown id: %+v", v, p)
		}
	}
}

// TestBurrowReadsCommitsOverOldFetch: Burrow (sarama at 0.10.x) reads the
// commit log __consumer_offsets with Fetch v2, magic 1 messages, and
// decodes Kafka's offset-commit key and value from them.
func TestBurrowReadsCommitsOverOldFetch(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "lagged", batch(t, records.BatchOptions{}, "a", "b", "c"))
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "burrowed", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "lagged", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2}}}}
	if r := do[*kmsg.OffsetCommitResponse](c, commit, 2); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r)
	}
	set := do[*kmsg.FetchResponse](c, fetchReq(group.OffsetsTopic, group.OffsetsPartition("burrowed", 50), 0, 0, 1), 2).Topics[0].Partitions[0].RecordBatches
	found := false
	for _, m := range legacytest.Parse(t, set) {
		var key kmsg.OffsetCommitKey
		var value kmsg.OffsetCommitValue
		if m.Magic != 1 || key.ReadFrom(m.Key) != nil || value.ReadFrom(m.Value) != nil {
			t.Fatalf("commit message %+v does not decode", m)
		}
		found = found || key.Group == "burrowed" && key.Topic == "lagged" && key.Partition == 0 && value.Offset == 2
	}
	if !found {
		t.Fatalf("the commit is not in the %d-byte v2 fetch of %s", len(set), group.OffsetsTopic)
	}
	lo := listOffsetsReq("lagged", -1)
	lo.Topics[0].Partitions[0].MaxNumOffsets = 1
	if p := do[*kmsg.ListOffsetsResponse](c, lo, 0).Topics[0].Partitions[0]; !slices.Equal(p.OldStyleOffsets, []int64{3}) {
		t.Fatalf("ListOffsets v0 (Burrow's lag end): %+v", p)
	}
}
