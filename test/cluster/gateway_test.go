package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// The HTTP gateway on a cluster: every node takes produce for every
// partition (forwarding to the leaders the records of partitions it does
// not lead) and serves reads of every partition (from its in-sync replica,
// else from the leader).

// createAssigned creates topic with one partition per assignment entry,
// the replicas as given, and waits until every replica is in sync and every
// live broker's HTTP view names the leaders.
func createAssigned(t testing.TB, nodes []*harness.Node, topic string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	_, br := brokerClient(t, nodes[0])
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), br)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s on %v: %v %+v", topic, assignment, err, resp)
	}
	harness.WaitFor(t, topic+" has all its replicas in sync on every node's view", 30*time.Second, func() bool {
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			var info topicView
			if getJSONQuiet(n.URL+"/topics/"+topic, &info) != nil || len(info.Partitions) != len(assignment) {
				return false
			}
			for _, p := range info.Partitions {
				if p.Leader != assignment[p.Partition][0] || !sameSet(p.ISR, assignment[p.Partition]) {
					return false
				}
			}
		}
		return true
	})
}

type topicView struct {
	Partitions []struct {
		Partition     int32   `json:"partition"`
		Leader        int32   `json:"leader"`
		ISR           []int32 `json:"isr"`
		HighWatermark int64   `json:"high_watermark"`
		Local         bool    `json:"local"`
	} `json:"partitions"`
}

type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

func httpPost(t testing.TB, url, contentType, body string) httpAnswer {
	t.Helper()
	a, err := post(url, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// post is httpPost for goroutines other than the test's.
func post(url, contentType, body string) (httpAnswer, error) {
	res, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		return httpAnswer{}, fmt.Errorf("POST %s: %w", url, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return httpAnswer{status: res.StatusCode, header: res.Header, body: data}, nil
}

type producedOffset struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	ErrorCode *int   `json:"error_code"`
	Error     string `json:"error"`
}

// produceOK posts body and returns the answer's offsets, failing the test
// on anything but 200 without per-record errors.
func produceOK(t testing.TB, url, contentType, body string) []producedOffset {
	t.Helper()
	a := httpPost(t, url, contentType, body)
	var out struct{ Offsets []producedOffset }
	if a.status != http.StatusOK || json.Unmarshal(a.body, &out) != nil {
		t.Fatalf("POST %s (%s): %d %s", url, contentType, a.status, a.body)
	}
	for _, o := range out.Offsets {
		if o.ErrorCode != nil || o.Offset < 0 {
			t.Fatalf("POST %s (%s): a record failed: %s", url, contentType, a.body)
		}
	}
	return out.Offsets
}

// httpRecord is a record as GET …/records renders it.
type httpRecord struct {
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Key           json.RawMessage   `json:"key"`
	KeyEncoding   string            `json:"key_encoding"`
	Value         json.RawMessage   `json:"value"`
	ValueEncoding string            `json:"value_encoding"`
	Headers       map[string]string `json:"headers"`
}

// bytesOf is the stored bytes an answer's key or value stands for.
func bytesOf(t testing.TB, raw json.RawMessage, encoding string) []byte {
	t.Helper()
	switch encoding {
	case "":
		if string(raw) == "null" {
			return nil
		}
		return raw
	case "string":
		var s string
		json.Unmarshal(raw, &s)
		return []byte(s)
	case "base64":
		var s string
		json.Unmarshal(raw, &s)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("encoding %q", encoding)
	return nil
}

// readHTTP reads partition p of topic from node over HTTP from offset 0
// until it has want records (a follower's high watermark may be a fetch
// behind the leader's), within 20 s.
func readHTTP(t testing.TB, node *harness.Node, topic string, p int32, want int) []httpRecord {
	t.Helper()
	var got []httpRecord
	deadline := time.Now().Add(20 * time.Second)
	for next := int64(0); len(got) < want && time.Now().Before(deadline); {
		url := fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=%d&max_records=10000&timeout_ms=500", node.URL, topic, p, next)
		res, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, res.StatusCode, data)
		}
		var answer struct {
			Records    []httpRecord `json:"records"`
			NextOffset int64        `json:"next_offset"`
		}
		if err := json.Unmarshal(data, &answer); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, data)
		}
		got = append(got, answer.Records...)
		next = answer.NextOffset
	}
	if len(got) != want {
		t.Fatalf("%s: partition %d of %s: %d records over HTTP, want %d", node.URL, p, topic, len(got), want)
	}
	return got
}

// kafkaRecord is what a Kafka consumer reads, for comparison.
type kafkaRecord struct {
	offset     int64
	key, value string
}

// readKafka reads every partition of topic from its start with franz-go
// until partition p has want[p] records, within 30 s.
func readKafka(t testing.TB, nodes []*harness.Node, topic string, want map[int32]int) map[int32][]kafkaRecord {
	t.Helper()
	from := map[int32]kgo.Offset{}
	for p := range want {
		from[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32][]kafkaRecord{}
	done := func() bool {
		for p, n := range want {
			if len(got[p]) < n {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], kafkaRecord{r.Offset, string(r.Key), string(r.Value)})
		})
	}
	for p, n := range want {
		if len(got[p]) != n {
			t.Fatalf("partition %d of %s: %d records over Kafka, want %d", p, topic, len(got[p]), n)
		}
	}
	return got
}

const gatewaySchema = `{"type":"record","name":"Item","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`

// Three brokers, a topic of 3 partitions with 2 replicas each, so every
// node lacks one partition and leads one: each node in turn takes produce
// in every body format (POST /kafka/{t} JSON, REST Proxy v2 json, binary
// and Avro) for every partition; keyed records land in the partition the
// key's murmur2 hash names whichever node took them; then every partition
// is read back from every node over HTTP and over the Kafka protocol:
// offsets dense from 0, the same records everywhere, each at the offset
// its produce answered.
func TestGatewayProducesAndReadsOnEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "anynode"
	assignment := [][]int32{{1, 2}, {2, 3}, {3, 1}}
	createAssigned(t, nodes, topic, assignment, nil)

	// The schema is registered once, on node 1: the cluster's registry is
	// the replicated _schemas topic, so every node knows its id.
	a := httpPost(t, nodes[0].URL+"/subjects/"+topic+"-value/versions", "application/vnd.schemaregistry.v1+json",
		fmt.Sprintf(`{"schema":%q}`, gatewaySchema))
	var reg struct{ ID int }
	if a.status != http.StatusOK || json.Unmarshal(a.body, &reg) != nil {
		t.Fatalf("register on %s: %d %s", nodes[0].URL, a.status, a.body)
	}
	schemaID := reg.ID

	// want[partition][offset] is the stored value produce answered for it.
	want := map[int32]map[int64]string{}
	record := func(offsets []producedOffset, values []string) {
		t.Helper()
		if len(offsets) != len(values) {
			t.Fatalf("%d offsets for %d records", len(offsets), len(values))
		}
		for i, o := range offsets {
			if want[o.Partition] == nil {
				want[o.Partition] = map[int64]string{}
			}
			if prev, dup := want[o.Partition][o.Offset]; dup {
				t.Fatalf("offset %d of partition %d answered twice: %q and %q", o.Offset, o.Partition, prev, values[i])
			}
			want[o.Partition][o.Offset] = values[i]
		}
	}
	for i, n := range nodes {
		// POST /kafka/{t}: string keys, stored as their bytes, partitioned by murmur2.
		var recs, values []string
		var keys [][]byte
		for k := range 6 {
			key := fmt.Sprintf("n%d-key%d", i, k)
			recs = append(recs, fmt.Sprintf(`{"key":%q,"value":{"node":%d,"k":%d}}`, key, i, k))
			values = append(values, fmt.Sprintf(`{"node":%d,"k":%d}`, i, k))
			keys = append(keys, []byte(key))
		}
		offsets := produceOK(t, n.URL+"/kafka/"+topic, "application/json", `{"records":[`+strings.Join(recs, ",")+`]}`)
		for k, o := range offsets {
			if wantP := records.PartitionForKey(keys[k], 3); o.Partition != wantP {
				t.Fatalf("node %d put key %q in partition %d, murmur2 says %d", i+1, keys[k], o.Partition, wantP)
			}
		}
		record(offsets, values)

		// REST Proxy v2, JSON embedded: one record per partition, explicitly.
		recs, values = nil, nil
		for p := range 3 {
			recs = append(recs, fmt.Sprintf(`{"partition":%d,"value":{"rest":%d,"p":%d}}`, p, i, p))
			values = append(values, fmt.Sprintf(`{"rest":%d,"p":%d}`, i, p))
		}
		record(produceOK(t, n.URL+"/topics/"+topic, "application/vnd.kafka.json.v2+json", `{"records":[`+strings.Join(recs, ",")+`]}`), values)

		// REST Proxy v2, binary embedded.
		recs, values = nil, nil
		for p := range 3 {
			v := fmt.Sprintf("bin-%d-%d\x00\xff", i, p)
			recs = append(recs, fmt.Sprintf(`{"partition":%d,"value":%q}`, p, base64.StdEncoding.EncodeToString([]byte(v))))
			values = append(values, v)
		}
		record(produceOK(t, n.URL+"/topics/"+topic, "application/vnd.kafka.binary.v2+json", `{"records":[`+strings.Join(recs, ",")+`]}`), values)

		// Avro, stored in Confluent's wire format: by the id registered on
		// node 1, and on the other nodes with the schema inline, which each
		// node looks up through the shared _schemas topic.
		recs, values = nil, nil
		for p := range 3 {
			recs = append(recs, fmt.Sprintf(`{"partition":%d,"value":{"id":%d,"name":"avro-%d"}}`, p, 10*i+p, i))
			values = append(values, "avro:"+strconv.Itoa(10*i+p))
		}
		schemaRef := fmt.Sprintf(`"value_schema_id":%d`, schemaID)
		if i > 0 {
			schemaRef = fmt.Sprintf(`"value_schema":%q`, gatewaySchema)
		}
		url := n.URL + "/topics/" + topic
		a := httpPost(t, url, "application/vnd.kafka.avro.v2+json", fmt.Sprintf(`{%s,"records":[%s]}`, schemaRef, strings.Join(recs, ",")))
		var avro struct {
			ValueSchemaID int `json:"value_schema_id"`
			Offsets       []producedOffset
		}
		if a.status != http.StatusOK || json.Unmarshal(a.body, &avro) != nil || avro.ValueSchemaID != schemaID {
			t.Fatalf("POST %s (Avro, %s): %d %s; want 200 with value_schema_id %d", url, schemaRef, a.status, a.body, schemaID)
		}
		record(avro.Offsets, values)
	}

	counts := map[int32]int{}
	for p, offs := range want {
		counts[p] = len(offs)
		for off := range int64(len(offs)) {
			if _, ok := offs[off]; !ok {
				t.Fatalf("partition %d: offsets answered are not dense from 0: %v", p, offs)
			}
		}
	}
	if len(counts) != 3 {
		t.Fatalf("records reached partitions %v, want all 3", counts)
	}
	// Every node renders every partition alike, and holds what was answered.
	var reference map[int32][]httpRecord
	for _, n := range nodes {
		got := map[int32][]httpRecord{}
		for p := range int32(3) {
			got[p] = readHTTP(t, n, topic, p, counts[p])
			for k, rec := range got[p] {
				v := bytesOf(t, rec.Value, rec.ValueEncoding)
				stored := want[p][int64(k)]
				if rec.Offset != int64(k) || !matchesStored(v, stored, schemaID) {
					t.Fatalf("%s partition %d offset %d: read %q at %d, produce answered %q", n.URL, p, k, v, rec.Offset, stored)
				}
			}
		}
		if reference == nil {
			reference = got
		} else if !equalReads(reference, got) {
			t.Fatalf("%s reads differently from %s", n.URL, nodes[0].URL)
		}
	}
	fromKafka := readKafka(t, nodes, topic, counts)
	for p, recs := range fromKafka {
		for k, r := range recs {
			if r.offset != int64(k) || !matchesStored([]byte(r.value), want[p][int64(k)], schemaID) {
				t.Fatalf("Kafka: partition %d offset %d holds %q, produce answered %q", p, r.offset, r.value, want[p][int64(k)])
			}
		}
	}
	t.Logf("%v records per partition, read alike from 3 nodes over HTTP and over Kafka", counts)
}

// matchesStored compares stored bytes with the value the test produced:
// Avro ones ("avro:<id>") by their wire format's schema id and the id
// field's zig-zag varint, the others byte for byte.
func matchesStored(stored []byte, produced string, schemaID int) bool {
	id, ok := strings.CutPrefix(produced, "avro:")
	if !ok {
		return string(stored) == produced
	}
	n, _ := strconv.Atoi(id)
	prefix := []byte{0, byte(schemaID >> 24), byte(schemaID >> 16), byte(schemaID >> 8), byte(schemaID)}
	return bytes.HasPrefix(stored, prefix) && len(stored) > 5 && stored[5] == byte(2*n) // ids < 64: one byte
}

func equalReads(a, b map[int32][]httpRecord) bool {
	for p := range a {
		if !slices.EqualFunc(a[p], b[p], func(x, y httpRecord) bool {
			return x.Offset == y.Offset && bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && x.ValueEncoding == y.ValueEncoding
		}) {
			return false
		}
	}
	return len(a) == len(b)
}

// A node that follows a partition serves the records its leader
// acknowledged as soon as the leader has: the leader answers a follower's
// fetch as soon as the high watermark moves past what that follower was
// told (Kafka's DelayedFetch case H). Before, a follower learned the high
// watermark only with the next append or after replica.fetch.wait.max.ms,
// here 25 s, so a long poll on the follower at the new offset waited out
// its own 10 s and answered nothing, after a POST answered 200.
func TestFollowerNodeServesWhatTheLeaderAcknowledged(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("replica.fetch.wait.max.ms=25000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := startCluster(t, 3, "--config", props)
	createAssigned(t, nodes, "tail", [][]int32{{1, 2, 3}}, nil)
	for i := range 3 {
		offsets := produceOK(t, nodes[0].URL+"/kafka/tail", "application/json", fmt.Sprintf(`{"records":[{"partition":0,"value":%d}]}`, i))
		for _, follower := range nodes[1:] {
			url := fmt.Sprintf("%s/kafka/tail/partitions/0/records?offset=%d&timeout_ms=10000", follower.URL, offsets[0].Offset)
			var answer struct {
				Records []httpRecord `json:"records"`
			}
			getJSON(t, url, &answer)
			if len(answer.Records) != 1 || string(answer.Records[0].Value) != strconv.Itoa(i) {
				t.Fatalf("GET %s after the leader acknowledged record %d: %+v", url, i, answer.Records)
			}
		}
	}
}
