package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

func TestApiVersionsAdvertisesTheTable(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
		resp := do[*kmsg.ApiVersionsResponse](c, req, v)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		checkAdvertised(t, resp.ApiKeys)
	}
}

// checkAdvertised: a single node without a transaction coordinator
// advertises every API of the table but the inter-broker and transaction
// ones.
func checkAdvertised(t *testing.T, keys []kmsg.ApiVersionsResponseApiKey) {
	t.Helper()
	var served []api
	for _, a := range apis {
		if !a.interBroker && !txnAPIs[a.key] {
			served = append(served, a)
		}
	}
	if len(keys) != len(served) {
		t.Fatalf("advertised %d keys, the table serves %d", len(keys), len(served))
	}
	for i, k := range keys {
		a := served[i]
		if k.ApiKey != a.key || k.MinVersion != a.min || k.MaxVersion != a.max {
			t.Fatalf("advertised %+v, table has %d %d-%d", k, a.key, a.min, a.max)
		}
	}
	for _, k := range keys {
		if txnAPIs[k.ApiKey] {
			t.Fatalf("transaction API %d advertised", k.ApiKey)
		}
	}
}

// A version above what this broker serves gets Kafka's KIP-511 answer:
// v0, UNSUPPORTED_VERSION and ApiVersions' range alone, which a client
// retries at (so the retry's answer, with the features, is what it uses).
func TestApiVersionsUnsupportedVersionGetsV0Answer(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	for _, v := range []int16{6, 7, 127} {
		// Hand-built header: a v6+ request body is not what matters.
		frame := binary.BigEndian.AppendUint16(nil, apiVersionsKey)
		frame = binary.BigEndian.AppendUint16(frame, uint16(v))
		frame = binary.BigEndian.AppendUint32(frame, uint32(v))
		frame = append(frame, 0, 4, 't', 'e', 's', 't', 0, 0, 0) // client id, tags, body
		_, err := c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...))
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		c.recv(int32(v), resp)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: error %d, want UNSUPPORTED_VERSION", v, resp.ErrorCode)
		}
		if k := resp.ApiKeys; len(k) != 1 || k[0].ApiKey != apiVersionsKey || k[0].MinVersion != 0 || k[0].MaxVersion != 5 {
			t.Fatalf("v%d: keys %+v, want ApiVersions' range 0–5 alone", v, k)
		}
	}
}

// KIP-1242: a v5 request naming this cluster and broker, or neither, gets
// the ranges; naming another broker or cluster gets REBOOTSTRAP_REQUIRED
// and no ranges; naming one of the two, INVALID_REQUEST. The connection
// stays open after each.
func TestApiVersionsV5ChecksTheExpectedBroker(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	cluster, node := ts.broker.ClusterID(), ts.broker.BrokerID()
	other := cluster + "-other"
	for _, tc := range []struct {
		name    string
		cluster *string
		node    int32
		want    int16
	}{
		{"neither", nil, -1, 0},
		{"this broker", &cluster, node, 0},
		{"another node", &cluster, node + 1, kerr.RebootstrapRequired.Code},
		{"another cluster", &other, node, kerr.RebootstrapRequired.Code},
		{"cluster alone", &cluster, -1, kerr.InvalidRequest.Code},
		{"node alone", nil, node, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp := do[*kmsg.ApiVersionsResponse](c, req, 5)
		if resp.ErrorCode != tc.want {
			t.Fatalf("%s: error %d, want %d", tc.name, resp.ErrorCode, tc.want)
		}
		if hasKeys := len(resp.ApiKeys) > 0; hasKeys != (tc.want == 0) {
			t.Fatalf("%s: error %d with %d ranges", tc.name, resp.ErrorCode, len(resp.ApiKeys))
		}
		if tc.want == 0 && !slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
			return k.ApiKey == apiVersionsKey && k.MaxVersion == 5
		}) {
			t.Fatalf("%s: ApiVersions' own range is not 0–5: %+v", tc.name, resp.ApiKeys)
		}
	}
}

func TestProduceFetchRoundTripAcrossVersions(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	want := []string{}
	next := int64(0)
	for _, pv := range []int16{0, 3, 7, 8, 9, 10, 11} {
		vals := []string{fmt.Sprintf("v%d-a", pv), fmt.Sprintf("v%d-b", pv)}
		p := produceOne(c, pv, "rt", batch(t, records.BatchOptions{Codec: records.Snappy}, vals...))
		if p.ErrorCode != 0 || p.BaseOffset != next {
			t.Fatalf("produce v%d: error %d base %d, want 0 and %d", pv, p.ErrorCode, p.BaseOffset, next)
		}
		next += 2
		want = append(want, vals...)
	}
	for _, fv := range []int16{4, 5, 7, 10, 11, 12} {
		resp := do[*kmsg.FetchResponse](c, fetchReq("rt", 0, 0, 0, 1), fv)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != next || p.LastStableOffset != next || fv >= 5 && p.LogStartOffset != 0 {
			t.Fatalf("fetch v%d: %+v", fv, p)
		}
		if fv >= 11 && p.PreferredReadReplica != -1 {
			t.Fatalf("fetch v%d: preferred read replica %d", fv, p.PreferredReadReplica)
		}
		if got := fetchValues(t, p, 0); !slices.Equal(got, want) {
			t.Fatalf("fetch v%d: %q, want %q", fv, got, want)
		}
	}
}

func TestFetchOutOfRangeAndUnknown(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "oor", batch(t, records.BatchOptions{}, "x"))
	resp := do[*kmsg.FetchResponse](c, fetchReq("oor", 0, 5, 1000, 1), 12)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 1 {
		t.Fatalf("fetch past the end: %+v", p)
	}
	resp = do[*kmsg.FetchResponse](c, fetchReq("nope", 0, 0, 1000, 1), 12)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("fetch unknown topic: %+v", p)
	}
}

func TestFetchLongPollsUntilDataArrives(t *testing.T) {
	ts := newTestServer(t)
	c, other := ts.dial(t), ts.dial(t)
	produceOne(c, 9, "lp", batch(t, records.BatchOptions{}, "first"))
	start := time.Now()
	corr := c.send(withVersion(fetchReq("lp", 0, 1, 10_000, 1), 12))
	time.AfterFunc(200*time.Millisecond, func() {
		// another connection, so the waiting one stays blocked in its fetch
		other.send(withVersion(produceReq("lp", 0, 1, batch(t, records.BatchOptions{}, "second")), 9))
	})
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.recv(corr, resp)
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("fetch returned after %v: it did not wake on the produce", took)
	}
	if got := fetchValues(t, resp.Topics[0].Partitions[0], 1); !slices.Equal(got, []string{"second"}) {
		t.Fatalf("got %q", got)
	}
	// an empty fetch waits MaxWaitMillis and answers with no records
	start = time.Now()
	resp = do[*kmsg.FetchResponse](c, fetchReq("lp", 0, 2, 300, 1), 12)
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("empty fetch returned after %v, before MaxWaitMillis", took)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 2 {
		t.Fatalf("empty fetch: %+v", p)
	}
}

func withVersion[R kmsg.Request](r R, v int16) R {
	r.SetVersion(v)
	return r
}

func TestFetchMaxBytesKIP74(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	big := string(make([]byte, 10_000))
	for i := 0; i < 3; i++ {
		produceOne(c, 9, "kip74", batch(t, records.BatchOptions{}, big))
	}
	req := fetchReq("kip74", 0, 0, 0, 1)
	req.MaxBytes = 100
	req.Topics[0].Partitions[0].PartitionMaxBytes = 100
	resp := do[*kmsg.FetchResponse](c, req, 12)
	if got := fetchValues(t, resp.Topics[0].Partitions[0], 0); len(got) != 1 {
		t.Fatalf("got %d records, want exactly the first batch", len(got))
	}
}

func TestProduceAcksZeroSendsNoResponse(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	c.send(withVersion(produceReq("acks0", 0, 0, batch(t, records.BatchOptions{}, "fire", "forget")), 9))
	// The next response on the connection answers the next request.
	resp := do[*kmsg.ListOffsetsResponse](c, listOffsetsReq("acks0", -1), 7)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 2 {
		t.Fatalf("latest offset after acks=0 produce: %+v", p)
	}
}

func TestProduceAcksZeroErrorClosesConnection(t *testing.T) {
	ts := newTestServerWith(t, func(c *server.Config) { c.AutoCreateTopics = false })
	c := ts.dial(t)
	c.send(withVersion(produceReq("missing", 0, 0, batch(t, records.BatchOptions{}, "x")), 9))
	c.expectClosed()
	stillServes(t, ts)
}

func listOffsetsReq(topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// listOffsetsTopic writes records stamped 1000, 5000 and 3000 to topic,
// offsets 0-2, for ListOffsets by timestamp; it answers the connection.
func listOffsetsTopic(t *testing.T, topic string) *client {
	t.Helper()
	c := newTestServer(t).dial(t)
	var b records.Builder
	for i, ts := range []int64{1000, 5000, 3000} {
		b.Add(records.Record{Value: []byte{byte(i)}, Timestamp: ts})
	}
	data, _ := b.AppendBatch(nil, records.BatchOptions{})
	produceOne(c, 9, topic, data)
	return c
}

func TestListOffsets(t *testing.T) {
	c := listOffsetsTopic(t, "lo")
	for _, tc := range []struct {
		v          int16
		ts         int64
		offset, at int64
	}{
		{1, -2, 0, -1}, {1, -1, 3, -1}, {2, -1, 3, -1}, {6, 2000, 1, 5000},
		{7, -3, 1, 5000}, {7, 9000, -1, -1}, {8, -4, 0, -1}, {9, -4, 0, -1}, {9, -5, -1, -1}, {9, -1, 3, -1},
	} {
		resp := do[*kmsg.ListOffsetsResponse](c, listOffsetsReq("lo", tc.ts), tc.v)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != tc.offset || p.Timestamp != tc.at {
			t.Fatalf("v%d ts %d: %+v, want offset %d timestamp %d", tc.v, tc.ts, p, tc.offset, tc.at)
		}
	}
}

func TestProduceRejectsBadBatches(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	data := batch(t, records.BatchOptions{}, "a", "b")
	data[len(data)-1] ^= 0xff // breaks the CRC
	if p := produceOne(c, 9, "bad", data); p.ErrorCode != kerr.CorruptMessage.Code || p.ErrorMessage == nil {
		t.Fatalf("bad CRC: %+v", p)
	}
	legacy := batch(t, records.BatchOptions{}, "a")
	legacy[16] = 1 // the magic byte: a message set in a v3+ request
	if p := produceOne(c, 3, "bad", legacy); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("magic 1 in produce v3: %+v", p)
	}
	if p := produceOne(c, 9, "bad", nil); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("no records: %+v", p)
	}
	resp := do[*kmsg.ProduceResponse](c, produceReq("bad", 0, 2, batch(t, records.BatchOptions{}, "a")), 9)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: %+v", p)
	}
	if p, _ := ts.broker.Partition("bad", 0); p.LogEndOffset() != 0 {
		t.Fatalf("log end %d after rejected batches, want 0", p.LogEndOffset())
	}
}

func initProducerID(t *testing.T, c *client) (int64, int16) {
	t.Helper()
	resp := do[*kmsg.InitProducerIDResponse](c, kmsg.NewPtrInitProducerIDRequest(), 4)
	if resp.ErrorCode != 0 || resp.ProducerID < 1 {
		t.Fatalf("init producer id: %+v", resp)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func TestIdempotentDuplicateGapAndEpoch(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	id, epoch := initProducerID(t, c)
	idem := func(seq int32, epoch int16, vals ...string) []byte {
		return batch(t, records.BatchOptions{ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq}, vals...)
	}
	first := idem(0, epoch, "a", "b", "c")
	if p := produceOne(c, 9, "idem", append([]byte(nil), first...)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first: %+v", p)
	}
	if p := produceOne(c, 9, "idem", first); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("duplicate: %+v, want its original offset 0", p)
	}
	if p := produceOne(c, 9, "idem", idem(5, epoch, "gap")); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %+v", p)
	}
	if p := produceOne(c, 9, "idem", idem(3, epoch, "d")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("next: %+v", p)
	}
	if p := produceOne(c, 9, "idem", idem(0, epoch+1, "e")); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Fatalf("new epoch: %+v", p)
	}
	if p := produceOne(c, 9, "idem", idem(4, epoch, "f")); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %+v", p)
	}
	if p, _ := ts.broker.Partition("idem", 0); p.LogEndOffset() != 5 {
		t.Fatalf("log end %d, want 5", p.LogEndOffset())
	}
	// a second producer gets a different id
	if id2, _ := initProducerID(t, c); id2 == id {
		t.Fatalf("producer id %d handed out twice", id)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "idem", Partitions: []int32{0}}}
	resp := do[*kmsg.DescribeProducersResponse](c, dp, 0)
	ap := resp.Topics[0].Partitions[0].ActiveProducers
	if len(ap) != 1 || ap[0].ProducerID != id || ap[0].ProducerEpoch != int32(epoch+1) || ap[0].LastSequence != 0 {
		t.Fatalf("describe producers: %+v", ap)
	}
}

func TestIdempotenceSurvivesRestart(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	id, epoch := initProducerID(t, c)
	opts := records.BatchOptions{ProducerID: id, ProducerEpoch: epoch}
	produceOne(c, 9, "other", batch(t, records.BatchOptions{}, "x"))
	for seq := int32(0); seq < 10; seq += 2 {
		opts.BaseSequence = seq
		produceOne(c, 9, "idem", batch(t, opts, "a", "b"))
	}
	ts.restart(t)
	c = ts.dial(t)
	opts.BaseSequence = 8
	if p := produceOne(c, 9, "idem", batch(t, opts, "a", "b")); p.ErrorCode != 0 || p.BaseOffset != 8 {
		t.Fatalf("retried batch after restart: %+v, want offset 8", p)
	}
	opts.BaseSequence = 12
	if p := produceOne(c, 9, "idem", batch(t, opts, "gap")); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: %+v", p)
	}
	if id2, _ := initProducerID(t, c); id2 <= id {
		t.Fatalf("producer id %d after restart, want above %d", id2, id)
	}
}

func TestMetadata(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "m", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{0, 1, 4, 5, 8, 10, 12} {
		req := kmsg.NewPtrMetadataRequest()
		if v > 0 {
			req.Topics = nil // all topics
		}
		resp := do[*kmsg.MetadataResponse](c, req, v)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != ts.addr {
			t.Fatalf("v%d brokers %+v", v, resp.Brokers)
		}
		i := slices.IndexFunc(resp.Topics, func(mt kmsg.MetadataResponseTopic) bool { return *mt.Topic == "m" })
		if i < 0 || len(resp.Topics[i].Partitions) != 3 || resp.Topics[i].IsInternal {
			t.Fatalf("v%d topics %+v", v, resp.Topics)
		}
		if v >= 10 && resp.Topics[i].TopicID == [16]byte{} {
			t.Fatalf("v%d: no topic id", v)
		}
	}
	ask := func(v int16, name string, allow bool) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
		req.AllowAutoTopicCreation = allow
		return do[*kmsg.MetadataResponse](c, req, v).Topics[0]
	}
	if mt := ask(12, "nope", false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", mt)
	}
	if mt := ask(12, "bad name!", true); mt.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %+v", mt)
	}
	if mt := ask(3, "auto3", false); mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
		t.Fatalf("v3 auto-create: %+v", mt)
	}
	if mt := ask(9, "auto9", true); mt.ErrorCode != 0 || len(mt.Partitions) != 1 {
		t.Fatalf("v9 auto-create: %+v", mt)
	}
}

func TestAdminRequests(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	ct := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "adm", 2, 1
	v := "1000"
	topic.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: &v}}
	ct.Topics = []kmsg.CreateTopicsRequestTopic{topic}
	ct.ValidateOnly = true
	if r := do[*kmsg.CreateTopicsResponse](c, ct, 7); r.Topics[0].ErrorCode != 0 || slices.Contains(ts.broker.Topics(), "adm") {
		t.Fatalf("validate only: %+v", r.Topics[0])
	}
	ct.ValidateOnly = false
	r := do[*kmsg.CreateTopicsResponse](c, ct, 7)
	if r.Topics[0].ErrorCode != 0 || r.Topics[0].NumPartitions != 2 || r.Topics[0].TopicID == [16]byte{} {
		t.Fatalf("create: %+v", r.Topics[0])
	}
	if r := do[*kmsg.CreateTopicsResponse](c, ct, 2); r.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("create again: %+v", r.Topics[0])
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "adm", Count: 4}}
	if r := do[*kmsg.CreatePartitionsResponse](c, cp, 3); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partitions: %+v", r.Topics[0])
	}
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	seg := "2048"
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "adm",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			{Name: "segment.bytes", Op: kmsg.IncrementalAlterConfigOpSet, Value: &seg},
			{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpDelete}}}}
	if r := do[*kmsg.IncrementalAlterConfigsResponse](c, inc, 1); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("incremental alter: %+v", r.Resources[0])
	}
	inc.Resources[0].Configs[0].Op = kmsg.IncrementalAlterConfigOpAppend
	if r := do[*kmsg.IncrementalAlterConfigsResponse](c, inc, 1); r.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("append to a non-list config: %+v", r.Resources[0])
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "adm"},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}
	d := do[*kmsg.DescribeConfigsResponse](c, dc, 4)
	found := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range d.Resources[0].Configs {
		found[cfg.Name] = cfg
	}
	if s := found["segment.bytes"]; *s.Value != "2048" || s.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("segment.bytes: %+v", s)
	}
	if s := found["retention.ms"]; s.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms: %+v", s)
	}
	if d.Resources[1].ErrorCode != 0 || len(d.Resources[1].Configs) == 0 {
		t.Fatalf("broker configs: %+v", d.Resources[1])
	}
	// DeleteRecords up to the high watermark, then delete the topic
	produceOne(c, 9, "adm", batch(t, records.BatchOptions{}, "a", "b", "c"))
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "adm", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
	if r := do[*kmsg.DeleteRecordsResponse](c, dr, 2); r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[0].Partitions[0].LowWatermark != 3 {
		t.Fatalf("delete records: %+v", r.Topics[0].Partitions[0])
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	name := "adm"
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}
	if r := do[*kmsg.DeleteTopicsResponse](c, dt, 6); r.Topics[0].ErrorCode != 0 || slices.Contains(ts.broker.Topics(), "adm") {
		t.Fatalf("delete topic: %+v", r.Topics[0])
	}
	cl := do[*kmsg.DescribeClusterResponse](c, kmsg.NewPtrDescribeClusterRequest(), 1)
	if cl.ClusterID != ts.broker.ClusterID() || len(cl.Brokers) != 1 {
		t.Fatalf("describe cluster: %+v", cl)
	}
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	oe.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "m", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1}}}}
	produceOne(c, 9, "m", batch(t, records.BatchOptions{}, "a", "b"))
	if r := do[*kmsg.OffsetForLeaderEpochResponse](c, oe, 4); r.Topics[0].Partitions[0].EndOffset != 2 {
		t.Fatalf("offset for leader epoch: %+v", r.Topics[0].Partitions[0])
	}
	if r := do[*kmsg.InitProducerIDResponse](c, &kmsg.InitProducerIDRequest{TransactionalID: &name}, 4); r.ErrorCode == 0 {
		t.Fatalf("transactional init producer id accepted: %+v", r)
	}
}

// A franz-go client whose connection to the broker its metadata names
// reaches another cluster's broker at that address (a restarted pod, an
// address reused) is told so before it sends anything there: the other
// broker answers its ApiVersions v5 REBOOTSTRAP_REQUIRED, the client
// goes back to its seeds, and the record lands in the cluster it was
// meant for. Served at v4, that broker, which has a topic of the same
// name (staging beside production), would have taken the record.
func TestApiVersionsV5MisroutedClientRebootstraps(t *testing.T) {
	meant, other := newTestServer(t), newTestServer(t)
	if meant.broker.ClusterID() == other.broker.ClusterID() {
		t.Fatalf("both test clusters have the id %q", meant.broker.ClusterID())
	}
	createTopic(t, meant, "routed", 1)
	createTopic(t, other, "routed", 1)
	var dials atomic.Int32
	dialer := func(ctx context.Context, network, host string) (net.Conn, error) {
		// The first dial is the seed's; the second is the broker's own
		// connection, which ApiVersions v5 names the cluster and node on.
		if dials.Add(1) == 2 {
			host = other.addr
		}
		var d net.Dialer
		return d.DialContext(ctx, network, host)
	}
	logs := &kgoLog{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(meant.addr), kgo.Dialer(dialer), kgo.WithLogger(logs), kgo.DefaultProduceTopic("routed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v (client log: %v)", err, logs.lines)
	}
	if dials.Load() < 3 {
		t.Fatalf("%d dials: the misrouted connection was never opened, or never left", dials.Load())
	}
	if !logs.has("REBOOTSTRAP_REQUIRED") {
		t.Fatalf("the client was not told to rebootstrap: %v", logs.lines)
	}
	end := func(ts *testServer) int64 {
		p := do[*kmsg.ListOffsetsResponse](ts.dial(t), listOffsetsReq("routed", -1), 1).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("list offsets: error %d", p.ErrorCode)
		}
		return p.Offset
	}
	if n := end(other); n != 0 {
		t.Fatalf("the other cluster took %d records of the misrouted client", n)
	}
	if n := end(meant); n != 1 {
		t.Fatalf("the record's cluster has %d records, want 1", n)
	}
}
