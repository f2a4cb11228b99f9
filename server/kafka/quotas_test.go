package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/quota"
	"github.com/ferry-mq/ferry/server/records"
)

func quotaServer(t *testing.T, mutate ...func(*Config)) *testServer {
	st, err := quota.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, append([]func(*Config){func(c *Config) { c.QuotaStore = st }}, mutate...)...)
}

func alterQuota(c *client, validateOnly bool, entity []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasResponseEntry {
	c.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity, e.Ops = entity, ops
	req.Entries = append(req.Entries, e)
	return do[*kmsg.AlterClientQuotasResponse](c, req, 1).Entries[0]
}

func clientEntity(name *string) []kmsg.AlterClientQuotasRequestEntryEntity {
	return []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: name}}
}

func ipEntity(name *string) []kmsg.AlterClientQuotasRequestEntryEntity {
	return []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "ip", Name: name}}
}

func set(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
}

// AlterClientQuotas answers each entity with Kafka's codes;
// DescribeClientQuotas lists what was stored and refuses bad filters.
func TestClientQuotaAPIsValidate(t *testing.T) {
	ts := quotaServer(t)
	c := ts.dial(t)
	for name, tc := range map[string]struct {
		entity []kmsg.AlterClientQuotasRequestEntryEntity
		op     kmsg.AlterClientQuotasRequestEntryOp
	}{
		"ip with user":  {append(ipEntity(kmsg.StringPtr("127.0.0.1")), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: kmsg.StringPtr("a")}), set("connection_creation_rate", 1)},
		"ip not an ip":  {ipEntity(kmsg.StringPtr("localhost")), set("connection_creation_rate", 1)},
		"ip byte rate":  {ipEntity(nil), set("producer_byte_rate", 1024)},
		"ip fraction":   {ipEntity(nil), set("connection_creation_rate", 2.5)},
		"ip negative":   {ipEntity(nil), set("connection_creation_rate", -1)},
		"client conns":  {clientEntity(nil), set("connection_creation_rate", 1)},
		"unknown type":  {[]kmsg.AlterClientQuotasRequestEntryEntity{{Type: "topic", Name: kmsg.StringPtr("t")}}, set("producer_byte_rate", 1)},
		"repeated type": {append(clientEntity(nil), clientEntity(kmsg.StringPtr("a"))...), set("producer_byte_rate", 1)},
		"unknown key":   {clientEntity(nil), set("producer_bytes_rate", 1)},
		"fraction":      {clientEntity(nil), set("consumer_byte_rate", 10.5)},
		"negative":      {clientEntity(nil), set("request_percentage", -3)},
		"no entity":     {nil, set("producer_byte_rate", 1)},
		"slash":         {clientEntity(kmsg.StringPtr("a/b")), set("producer_byte_rate", 1)},
	} {
		r := alterQuota(c, false, tc.entity, tc.op)
		if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("%s: code %d %v, want INVALID_REQUEST with a message", name, r.ErrorCode, r.ErrorMessage)
		}
	}
	if r := alterQuota(c, true, clientEntity(kmsg.StringPtr("app")), set("producer_byte_rate", 1024)); r.ErrorCode != 0 {
		t.Fatalf("validate only: %d", r.ErrorCode)
	}
	describe := func(strict bool, cs ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Strict, req.Components = strict, cs
		return do[*kmsg.DescribeClientQuotasResponse](c, req, 1)
	}
	if resp := describe(false); resp.ErrorCode != 0 || len(resp.Entries) != 0 {
		t.Fatalf("validate_only stored something: %+v", resp)
	}
	user := []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}, {Type: "client-id"}}
	if r := alterQuota(c, false, user, set("producer_byte_rate", 1024), set("request_percentage", 50)); r.ErrorCode != 0 {
		t.Fatalf("alter: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	resp := describe(true, kmsg.DescribeClientQuotasRequestComponent{EntityType: "user", MatchType: 0, Match: kmsg.StringPtr("alice")},
		kmsg.DescribeClientQuotasRequestComponent{EntityType: "client-id", MatchType: 1})
	if resp.ErrorCode != 0 || len(resp.Entries) != 1 || len(resp.Entries[0].Values) != 2 ||
		resp.Entries[0].Entity[1].Name != nil || resp.Entries[0].Values[0].Key != "producer_byte_rate" || resp.Entries[0].Values[0].Value != 1024 {
		t.Fatalf("describe alice/<default>: %+v", resp)
	}
	if resp := describe(true, kmsg.DescribeClientQuotasRequestComponent{EntityType: "user", MatchType: 2}); len(resp.Entries) != 0 {
		t.Fatalf("strict user-only filter matched a user+client entity: %+v", resp.Entries)
	}
	for name, cs := range map[string][]kmsg.DescribeClientQuotasRequestComponent{
		"unknown type":   {{EntityType: "topic", MatchType: 2}},
		"exact, no name": {{EntityType: "user", MatchType: 0}},
		"unknown match":  {{EntityType: "user", MatchType: 7}},
		"type twice":     {{EntityType: "user", MatchType: 2}, {EntityType: "user", MatchType: 1}},
		"ip with user":   {{EntityType: "ip", MatchType: 2}, {EntityType: "user", MatchType: 2}},
		"ip not an ip":   {{EntityType: "ip", MatchType: 0, Match: kmsg.StringPtr("example.com")}},
	} {
		if resp := describe(false, cs...); resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil {
			t.Errorf("%s: code %d, want INVALID_REQUEST", name, resp.ErrorCode)
		}
	}
}

func TestAlterClientQuotasWithoutStore(t *testing.T) {
	c := newTestServer(t).dial(t)
	r := alterQuota(c, false, clientEntity(nil), set("producer_byte_rate", 1))
	if r.ErrorCode != kerr.UnknownServerError.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "no quota store") {
		t.Fatalf("no store: %d %v", r.ErrorCode, r.ErrorMessage)
	}
}

// A produce over the quota answers at once with throttle_time_ms, and the
// connection's next request is not read before that time has passed.
func TestProduceOverQuotaMutesTheConnection(t *testing.T) {
	ts := quotaServer(t)
	c := ts.dial(t) // client id "test"
	if r := alterQuota(c, false, clientEntity(kmsg.StringPtr("test")), set("producer_byte_rate", 2000)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	data := batch(t, records.BatchOptions{}, strings.Repeat("x", 1000))
	start := time.Now()
	resp := do[*kmsg.ProduceResponse](c, produceReq("muted", 0, 1, data), 9)
	answered := time.Since(start)
	want := time.Duration(len(data)) * time.Second / 2000
	if resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.ThrottleMillis < int32(want.Milliseconds())-5 || resp.ThrottleMillis > int32(want.Milliseconds())+5 {
		t.Fatalf("throttle %d ms for %d bytes at 2000 B/s, want about %d", resp.ThrottleMillis, len(data), want.Milliseconds())
	}
	if answered > want/2 {
		t.Fatalf("the throttled produce was answered after %v: it should be answered at once", answered)
	}
	do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3)
	if next := time.Since(start); next < time.Duration(resp.ThrottleMillis)*time.Millisecond-10*time.Millisecond {
		t.Fatalf("the next request was served %v after the produce, before the throttle time of %d ms", next, resp.ThrottleMillis)
	}
	// Another client id on its own connection is not held.
	other := ts.dial(t)
	other.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID("other"))
	if r := do[*kmsg.ProduceResponse](other, produceReq("muted", 0, 1, data), 9); r.ThrottleMillis != 0 {
		t.Fatalf("client id other throttled %d ms", r.ThrottleMillis)
	}
}

// A consumer over its quota is throttled; a follower's fetch never is.
func TestFetchQuotaSparesFollowers(t *testing.T) {
	ts := quotaServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "fq", batch(t, records.BatchOptions{}, strings.Repeat("y", 5000)))
	if r := alterQuota(c, false, clientEntity(nil), set("consumer_byte_rate", 1000)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	follower := ts.dial(t)
	req := fetchReq("fq", 0, 0, 0, 1)
	req.ReplicaID = 2
	if r := do[*kmsg.FetchResponse](follower, req, 11); r.ThrottleMillis != 0 {
		t.Fatalf("a follower fetch was throttled %d ms", r.ThrottleMillis)
	}
	r := do[*kmsg.FetchResponse](c, fetchReq("fq", 0, 0, 0, 1), 11)
	if r.ThrottleMillis < 4000 || len(r.Topics) != 1 || len(r.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("consumer fetch of 5 kB at 1000 B/s: throttle %d ms, %+v", r.ThrottleMillis, r.Topics)
	}
	// On another connection of the same client id, the debt answers an
	// empty response at once.
	c2 := ts.dial(t)
	start := time.Now()
	r = do[*kmsg.FetchResponse](c2, fetchReq("fq", 0, 0, 0, 1), 11)
	if r.ThrottleMillis <= 0 || len(r.Topics) != 0 || time.Since(start) > time.Second {
		t.Fatalf("fetch while owing: throttle %d ms, %d topics, after %v", r.ThrottleMillis, len(r.Topics), time.Since(start))
	}
}

func withClientID(c *client, id string) *client {
	c.f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
	return c
}

// tinyShare is a request_percentage no request fits in (a microsecond of
// handler time a second): every request counted against it earns the
// longest request throttle, one window.
const tinyShare = 0.0001

// A request over its entity's request_percentage is answered at once with
// throttle_time_ms, and the connection's next request is not read before
// it passes; exempt ApiVersions carries none; another client id is not
// throttled at all.
func TestRequestQuotaMutesTheConnection(t *testing.T) {
	ts := quotaServer(t)
	admin := withClientID(ts.dial(t), "admin")
	if r := alterQuota(admin, false, clientEntity(kmsg.StringPtr("test")), set("request_percentage", tinyShare)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	c := ts.dial(t) // client id "test"
	start := time.Now()
	m := do[*kmsg.MetadataResponse](c, kmsg.NewPtrMetadataRequest(), 9)
	answered := time.Since(start)
	if m.ThrottleMillis != int32(quota.RequestWindow.Milliseconds()) {
		t.Fatalf("metadata over request_percentage=%v: throttle %d ms, want %d", tinyShare, m.ThrottleMillis, quota.RequestWindow.Milliseconds())
	}
	if answered > quota.RequestWindow/2 {
		t.Fatalf("the throttled request was answered after %v: it should be answered at once", answered)
	}
	v := do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3)
	if next := time.Since(start); next < time.Duration(m.ThrottleMillis)*time.Millisecond-10*time.Millisecond {
		t.Fatalf("the next request was served %v after the first, before its throttle time of %d ms", next, m.ThrottleMillis)
	}
	if v.ThrottleMillis != 0 {
		t.Fatalf("ApiVersions (exempt) throttled %d ms", v.ThrottleMillis)
	}
	other := withClientID(ts.dial(t), "other")
	for range 20 {
		if r := do[*kmsg.MetadataResponse](other, kmsg.NewPtrMetadataRequest(), 9); r.ThrottleMillis != 0 {
			t.Fatalf("client id other throttled %d ms", r.ThrottleMillis)
		}
	}
}

// The throttle time is the larger of what the byte rate and the request
// time earned.
func TestRequestAndByteThrottlesTakeTheLarger(t *testing.T) {
	ts := quotaServer(t)
	admin := withClientID(ts.dial(t), "admin")
	for id, bytes := range map[string]float64{"bytes-win": 500, "time-wins": 1 << 30} {
		if r := alterQuota(admin, false, clientEntity(kmsg.StringPtr(id)), set("producer_byte_rate", bytes), set("request_percentage", tinyShare)); r.ErrorCode != 0 {
			t.Fatal(r.ErrorCode)
		}
	}
	data := batch(t, records.BatchOptions{}, strings.Repeat("z", 1000))
	byteThrottle := int32(time.Duration(len(data)) * time.Second / 500 / time.Millisecond)
	r := do[*kmsg.ProduceResponse](withClientID(ts.dial(t), "bytes-win"), produceReq("both", 0, 1, data), 9)
	if r.Topics[0].Partitions[0].ErrorCode != 0 || r.ThrottleMillis < byteThrottle-5 || r.ThrottleMillis > byteThrottle+5 {
		t.Fatalf("byte rate's throttle larger: %d ms, want about %d", r.ThrottleMillis, byteThrottle)
	}
	r = do[*kmsg.ProduceResponse](withClientID(ts.dial(t), "time-wins"), produceReq("both", 0, 1, data), 9)
	if r.Topics[0].Partitions[0].ErrorCode != 0 || r.ThrottleMillis != int32(quota.RequestWindow.Milliseconds()) {
		t.Fatalf("request time's throttle larger: %d ms, want %d", r.ThrottleMillis, quota.RequestWindow.Milliseconds())
	}
}

// A Fetch's long poll is not handler time; a follower's Fetch is exempt.
func TestRequestQuotaLeavesOutParkedTime(t *testing.T) {
	ts := quotaServer(t)
	admin := withClientID(ts.dial(t), "admin")
	produceOne(admin, 9, "lp", batch(t, records.BatchOptions{}, "one"))
	if r := alterQuota(admin, false, clientEntity(kmsg.StringPtr("poller")), set("request_percentage", 10)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	if r := alterQuota(admin, false, clientEntity(kmsg.StringPtr("test")), set("request_percentage", tinyShare)); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	// 400 ms parked would be 4 s of a 10% share, throttled a whole window.
	start := time.Now()
	r := do[*kmsg.FetchResponse](withClientID(ts.dial(t), "poller"), fetchReq("lp", 0, 1, 400, 1), 11)
	if waited := time.Since(start); waited < 350*time.Millisecond {
		t.Fatalf("the fetch did not wait in the purgatory (%v)", waited)
	}
	if r.ThrottleMillis >= int32(quota.RequestWindow.Milliseconds())/2 {
		t.Fatalf("a 400 ms long poll at 10%%: throttled %d ms, as if the wait were handler time", r.ThrottleMillis)
	}
	follower := ts.dial(t) // client id "test", held to tinyShare
	req := fetchReq("lp", 0, 0, 0, 1)
	req.ReplicaID = 2
	if r := do[*kmsg.FetchResponse](follower, req, 11); r.ThrottleMillis != 0 {
		t.Fatalf("a follower fetch was throttled %d ms", r.ThrottleMillis)
	}
}

func TestRequestQuotaExemptions(t *testing.T) {
	follower := kmsg.NewPtrFetchRequest()
	follower.ReplicaID = 1
	consumer := kmsg.NewPtrFetchRequest()
	consumer.ReplicaID = -1
	consumerOFLE := kmsg.NewPtrOffsetForLeaderEpochRequest()
	consumerOFLE.SetVersion(4)
	followerOFLE := kmsg.NewPtrOffsetForLeaderEpochRequest()
	followerOFLE.SetVersion(4)
	followerOFLE.ReplicaID = 1
	for _, tc := range []struct {
		key    int16
		req    kmsg.Request
		exempt bool
	}{
		{4, kmsg.NewPtrLeaderAndISRRequest(), true},
		{5, kmsg.NewPtrStopReplicaRequest(), true},
		{6, kmsg.NewPtrUpdateMetadataRequest(), true},
		{7, kmsg.NewPtrControlledShutdownRequest(), true},
		{17, kmsg.NewPtrSASLHandshakeRequest(), true},
		{18, kmsg.NewPtrApiVersionsRequest(), true},
		{36, kmsg.NewPtrSASLAuthenticateRequest(), true},
		{1, follower, true},
		{1, consumer, false},
		{0, kmsg.NewPtrProduceRequest(), false},
		{3, kmsg.NewPtrMetadataRequest(), false},
		{23, consumerOFLE, false},
		{23, followerOFLE, true}, // shares the fetcher's connection
		{49, kmsg.NewPtrAlterClientQuotasRequest(), false},
	} {
		if got := requestQuotaExempt(tc.key, tc.req); got != tc.exempt {
			t.Errorf("%s: exempt %v, want %v", kmsg.NameForKey(tc.key), got, tc.exempt)
		}
	}
}

// BenchmarkRequestQuotaMetadata is a Metadata round trip over loopback
// with no request quota (the listener reads no clock), one on another
// client id (timed and resolved), and one on this client id too large to
// throttle (timed, resolved and counted); compare ns/op and allocs/op.
func BenchmarkRequestQuotaMetadata(b *testing.B) {
	for _, bc := range []struct {
		name  string
		table quota.Table
	}{
		{"no-quota", quota.Table{}},
		{"other-entity", quota.Table{{Client: quota.Named("other")}: {quota.RequestPercentage: 1}}},
		{"this-entity", quota.Table{{Client: quota.Named("test")}: {quota.RequestPercentage: 1e6}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := quota.NewManager()
			m.Replace(bc.table)
			c := newTestServer(b, func(c *Config) { c.Quotas = m }).dial(b)
			req := kmsg.NewPtrMetadataRequest()
			do[*kmsg.MetadataResponse](c, req, 9)
			b.ReportAllocs()
			for b.Loop() {
				if r := do[*kmsg.MetadataResponse](c, req, 9); r.ThrottleMillis != 0 {
					b.Fatalf("throttled %d ms", r.ThrottleMillis)
				}
			}
		})
	}
}
