package api

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/records"
)

type groupsEnv struct {
	*testEnv
	groups *group.Coordinator
}

// newGroupsEnv is a gateway with a group coordinator (no initial rebalance
// delay, so HTTP consumers are assigned as soon as they subscribe).
func newGroupsEnv(t *testing.T, configure ...func(*Config)) *groupsEnv {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true, AdvertisedKafkaAddr: "localhost:9092"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	// Three offsets partitions, not 50: cheaper per test, still several.
	c, err := group.New(b, group.Config{Logger: logger, InitialRebalanceDelay: -1, TickInterval: 20 * time.Millisecond, OffsetsTopicPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Logger: logger, Groups: c, AdvertisedKafkaAddr: "localhost:9092"}
	for _, f := range configure {
		f(&cfg)
	}
	g, err := New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); c.Close(); b.Close() })
	return &groupsEnv{testEnv: &testEnv{broker: b, url: srv.URL}, groups: c}
}

func (e *groupsEnv) produce(t *testing.T, topic string, partition int32, n int, headers ...records.Header) {
	t.Helper()
	var recs []server.ProduceRecord
	for i := 0; i < n; i++ {
		recs = append(recs, server.ProduceRecord{Partition: partition, Record: records.Record{
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, partition, i)), Headers: headers}})
	}
	if _, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: topic, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

func (e *groupsEnv) get(t *testing.T, path, accept, body string) answer {
	t.Helper()
	contentType := ""
	if body != "" {
		contentType = typeRestV2
	}
	return e.request(t, http.MethodGet, path, map[string]string{"Accept": accept, "Content-Type": contentType}, body)
}

type createdInstance struct {
	InstanceID string `json:"instance_id"`
	BaseURI    string `json:"base_uri"`
}

func (e *groupsEnv) newInstance(t *testing.T, groupName, body string) createdInstance {
	t.Helper()
	a := e.do(t, http.MethodPost, "/consumers/"+groupName, typeRestV2, body)
	var ci createdInstance
	a.decode(t, &ci)
	if a.status != 200 || ci.InstanceID == "" || !strings.HasSuffix(ci.BaseURI, "/consumers/"+groupName+"/instances/"+ci.InstanceID) {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	return ci
}

func (e *groupsEnv) subscribe(t *testing.T, groupName, id, topics string) {
	t.Helper()
	a := e.do(t, http.MethodPost, "/consumers/"+groupName+"/instances/"+id+"/subscription", typeRestV2, `{"topics":`+topics+`}`)
	if a.status != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", a.status, a.body)
	}
}

// readAll polls an instance until it has n records (or fails).
func (e *groupsEnv) readAll(t *testing.T, groupName, id, accept string, n int) []restRecord {
	t.Helper()
	var got []restRecord
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		a := e.get(t, "/consumers/"+groupName+"/instances/"+id+"/records?timeout=500", accept, "")
		if a.status != 200 {
			t.Fatalf("records: %d %s", a.status, a.body)
		}
		var batch []restRecord
		a.decode(t, &batch)
		got = append(got, batch...)
	}
	if len(got) != n {
		t.Fatalf("read %d records, want %d", len(got), n)
	}
	return got
}

func TestRestConsumerLifecycle(t *testing.T) {
	e := newGroupsEnv(t)
	e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 2})
	e.produce(t, "t", 0, 3, records.Header{Key: "h", Value: []byte("v")})
	e.produce(t, "t", 1, 2)

	ci := e.newInstance(t, "g", `{"name":"c1","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`)
	if ci.InstanceID != "c1" {
		t.Fatalf("instance id %q", ci.InstanceID)
	}
	base := "/consumers/g/instances/c1"
	e.get(t, base+"/records", typeRestJSON, "").wantError(t, http.StatusConflict, codeIllegalState)
	e.subscribe(t, "g", "c1", `["t"]`)
	var sub struct{ Topics []string }
	e.get(t, base+"/subscription", "", "").decode(t, &sub)
	if len(sub.Topics) != 1 || sub.Topics[0] != "t" {
		t.Fatalf("subscription %v", sub)
	}
	recs := e.readAll(t, "g", "c1", typeRestJSON, 5)
	var first restRecord
	for _, r := range recs {
		if r.Partition == 0 && r.Offset == 0 {
			first = r
		}
	}
	if string(first.Value) != `{"p":0,"i":0}` || string(first.Key) != `"k0"` || first.Timestamp <= 0 ||
		len(first.Headers) != 1 || *first.Headers[0].Value != "v" {
		t.Fatalf("record: %+v", first)
	}
	var asg struct{ Partitions []restPartition }
	e.get(t, base+"/assignments", "", "").decode(t, &asg)
	if len(asg.Partitions) != 2 {
		t.Fatalf("assignments %+v", asg)
	}

	// Commit everything consumed (no body), then read committed offsets.
	if a := e.do(t, http.MethodPost, base+"/offsets", typeRestV2, ""); a.status != 200 {
		t.Fatalf("commit: %d %s", a.status, a.body)
	}
	var offs struct{ Offsets []group.CommittedOffset }
	e.get(t, base+"/offsets", "", `{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}`).decode(t, &offs)
	if len(offs.Offsets) != 2 || offs.Offsets[0].Offset != 3 || offs.Offsets[1].Offset != 2 {
		t.Fatalf("committed: %+v", offs)
	}
	// An explicit commit names the last record consumed; offset+1 is stored.
	if a := e.do(t, http.MethodPost, base+"/offsets", typeRestV2, `{"offsets":[{"topic":"t","partition":0,"offset":0}]}`); a.status != 200 {
		t.Fatalf("explicit commit: %d %s", a.status, a.body)
	}
	e.get(t, base+"/offsets", "", `{"partitions":[{"topic":"t","partition":0}]}`).decode(t, &offs)
	if offs.Offsets[0].Offset != 1 {
		t.Fatalf("explicit commit stored %d, want 1", offs.Offsets[0].Offset)
	}

	if a := e.do(t, http.MethodDelete, base, "", ""); a.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	e.get(t, base+"/records", typeRestJSON, "").wantError(t, http.StatusNotFound, codeConsumerNotFound)
	e.do(t, http.MethodDelete, base, "", "").wantError(t, http.StatusNotFound, codeConsumerNotFound)

	// A new instance of the group resumes from the committed offsets.
	e.newInstance(t, "g", `{"name":"c2","format":"json"}`)
	e.subscribe(t, "g", "c2", `["t"]`)
	recs = e.readAll(t, "g", "c2", typeRestJSON, 2) // partition 0 from 1; partition 1 is done
	for _, r := range recs {
		if r.Partition != 0 || r.Offset < 1 {
			t.Fatalf("resumed at %d:%d", r.Partition, r.Offset)
		}
	}
}

func TestRestConsumerErrorsAndFormats(t *testing.T) {
	e := newGroupsEnv(t)
	e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 1})
	e.produce(t, "t", 0, 1)
	e.newInstance(t, "g", `{"name":"b","format":"binary","auto.offset.reset":"earliest"}`)
	e.do(t, http.MethodPost, "/consumers/g", typeRestV2, `{"name":"b"}`).wantError(t, http.StatusConflict, codeConsumerExists)
	e.do(t, http.MethodPost, "/consumers/g", typeRestV2, `{"format":"avro"}`).wantError(t, http.StatusUnprocessableEntity, codeInvalidConsumer)
	e.do(t, http.MethodPost, "/consumers/g", typeRestV2, `{"auto.offset.reset":"sometimes"}`).wantError(t, http.StatusUnprocessableEntity, codeInvalidConsumer)
	e.do(t, http.MethodPost, "/consumers/g/instances/nobody/subscription", typeRestV2, `{"topics":["t"]}`).
		wantError(t, http.StatusNotFound, codeConsumerNotFound)
	e.subscribe(t, "g", "b", `["t"]`)
	e.get(t, "/consumers/g/instances/b/records", typeRestJSON, "").wantError(t, http.StatusNotAcceptable, codeFormatMismatch)
	recs := e.readAll(t, "g", "b", typeRestBinary, 1)
	var v []byte
	var s string
	json.Unmarshal(recs[0].Value, &s)
	v, _ = base64.StdEncoding.DecodeString(s)
	if string(v) != `{"p":0,"i":0}` {
		t.Fatalf("binary value %s", recs[0].Value)
	}
	e.do(t, http.MethodPost, "/consumers/g/instances/b/offsets", typeRestV2, `{"offsets":[{"topic":"nope","partition":0,"offset":1}]}`).
		wantError(t, http.StatusNotFound, codeTopicNotFound)
}

func TestRestConsumersSplitPartitions(t *testing.T) {
	e := newGroupsEnv(t)
	e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 4})
	for p := int32(0); p < 4; p++ {
		e.produce(t, "t", p, 5)
	}
	e.newInstance(t, "g", `{"name":"a","format":"json","auto.offset.reset":"earliest"}`)
	e.newInstance(t, "g", `{"name":"b","format":"json","auto.offset.reset":"earliest"}`)
	e.subscribe(t, "g", "a", `["t"]`)
	e.subscribe(t, "g", "b", `["t"]`)
	seen := map[string]string{}
	for _, id := range []string{"a", "b"} {
		for _, r := range e.readAll(t, "g", id, typeRestJSON, 10) {
			key := fmt.Sprintf("%d:%d", r.Partition, r.Offset)
			if other, dup := seen[key]; dup {
				t.Fatalf("record %s read by %s and %s", key, other, id)
			}
			seen[key] = id
		}
	}
	// GET /groups and /groups/g show both members and their lag.
	var list struct{ Groups []group.GroupSummary }
	e.get(t, "/groups", "", "").decode(t, &list)
	if len(list.Groups) != 1 || list.Groups[0].Members != 2 || list.Groups[0].State != "Stable" {
		t.Fatalf("groups: %+v", list)
	}
	// Auto commit (the default) commits what a poll returned at the next poll.
	e.get(t, "/consumers/g/instances/a/records?timeout=0", typeRestJSON, "")
	var d groupDetail
	e.get(t, "/groups/g", "", "").decode(t, &d)
	if len(d.Members) != 2 || len(d.Members[0].Assignment) != 1 || len(d.Offsets) != 4 {
		t.Fatalf("group detail: %+v", d)
	}
	committed := 0
	for _, o := range d.Offsets {
		if o.Committed == 5 && o.Lag == 0 && o.HighWatermark == 5 {
			committed++
		}
	}
	if committed != 2 {
		t.Fatalf("offsets after a's auto commit: %+v", d.Offsets)
	}
	e.get(t, "/groups/nope", "", "").wantError(t, http.StatusNotFound, codeGroupNotFound)
}

func TestStreamSSE(t *testing.T) {
	e := newGroupsEnv(t)
	e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 2})
	e.produce(t, "t", 0, 3)
	e.produce(t, "t", 1, 3)
	res, err := http.Get(e.url + "/kafka/t/stream?group=s&from=earliest&max_duration=1s&heartbeat_ms=200&commit_interval_ms=100")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events, ids, comments := map[string]int{}, map[string]bool{}, 0
	sc := bufio.NewScanner(res.Body)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			events[event]++
		case strings.HasPrefix(line, "id: "):
			ids[strings.TrimPrefix(line, "id: ")] = true
		case strings.HasPrefix(line, "data: ") && event == "record":
			var r restRecord
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r); err != nil || r.Topic != "t" {
				t.Fatalf("record data %q: %v", line, err)
			}
		case strings.HasPrefix(line, ": "):
			comments++
		}
	}
	if events["consumer"] != 1 || events["record"] != 6 || len(ids) != 6 || !ids["1:2"] || comments == 0 {
		t.Fatalf("events %v ids %v comments %d", events, ids, comments)
	}
	// The stream committed what it sent and left the group.
	deadline := time.Now().Add(5 * time.Second)
	for {
		lag, _ := e.groups.Lag("s")
		d, _ := e.groups.Describe("s")
		if len(lag) == 2 && lag[0].Committed == 3 && lag[1].Committed == 3 && len(d.Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stream: lag %+v members %d", lag, len(d.Members))
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.get(t, "/kafka/t/stream", "", "").wantError(t, http.StatusBadRequest, codeBadParam)
	e.get(t, "/kafka/nope/stream?group=s", "", "").wantError(t, http.StatusNotFound, codeTopicNotFound)
}

func TestGroupRoutesWithoutCoordinator(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, http.MethodGet, "/groups", "", "").wantError(t, http.StatusServiceUnavailable, codeGroupsUnavailable)
	e.do(t, http.MethodPost, "/consumers/g", typeRestV2, `{}`).wantError(t, http.StatusServiceUnavailable, codeGroupsUnavailable)
}

// TestStreamAck: with commit_interval_ms=0 the stream commits nothing
// itself; the client acknowledges through the REST commit of its instance.
func TestStreamAck(t *testing.T) {
	e := newGroupsEnv(t)
	e.broker.CreateTopic(server.TopicSpec{Name: "t", Partitions: 1})
	e.produce(t, "t", 0, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/kafka/t/stream?group=ack&from=earliest&commit_interval_ms=0", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	var hello struct {
		BaseURI string `json:"base_uri"`
	}
	records := 0
	for records < 3 && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") && hello.BaseURI == "" {
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &hello)
		} else if strings.HasPrefix(line, "event: record") {
			records++
		}
	}
	if records != 3 || !strings.HasPrefix(hello.BaseURI, e.url+"/consumers/ack/instances/") {
		t.Fatalf("records %d, consumer %+v", records, hello)
	}
	// Acknowledge the first two records only.
	ack, err := http.Post(hello.BaseURI+"/offsets", typeRestV2, strings.NewReader(`{"offsets":[{"topic":"t","partition":0,"offset":1}]}`))
	if err != nil || ack.StatusCode != 200 {
		t.Fatalf("ack: %v %v", err, ack)
	}
	ack.Body.Close()
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, _ := e.groups.Describe("ack")
		if len(d.Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream's instance did not leave the group")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lag, _ := e.groups.Lag("ack")
	if len(lag) != 1 || lag[0].Committed != 2 {
		t.Fatalf("committed after ack: %+v", lag)
	}
}
