package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

type testEnv struct {
	broker  *server.Broker
	gateway *Gateway
	url     string
}

func newTestEnv(t testing.TB, mutate ...func(*server.Config, *Config)) *testEnv {
	t.Helper()
	bcfg := server.Config{DataDir: t.TempDir(), AutoCreateTopics: true}
	acfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AdvertisedKafkaAddr: "localhost:9092"}
	for _, m := range mutate {
		m(&bcfg, &acfg)
	}
	b, err := server.Open(bcfg, acfg.Logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(b, acfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); b.Close() })
	return &testEnv{broker: b, gateway: g, url: srv.URL}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (e *testEnv) do(t *testing.T, method, path, contentType, body string) answer {
	t.Helper()
	return e.request(t, method, path, map[string]string{"Content-Type": contentType}, body)
}

// request sends one request with the given headers (empty values are left out).
func (e *testEnv) request(t *testing.T, method, path string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: data}
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
}

// wantError checks status and error_code of a JSON error answer.
func (a answer) wantError(t *testing.T, status, code int) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(a.body, &e); err != nil || a.status != status || e.ErrorCode != code || e.Message == "" {
		t.Fatalf("got %d %s, want %d with error_code %d", a.status, a.body, status, code)
	}
}

func (e *testEnv) readAll(t *testing.T, topic string, partition int) readAnswer {
	t.Helper()
	a := e.do(t, "GET", fmt.Sprintf("/kafka/%s/partitions/%d/records?offset=0", topic, partition), "", "")
	if a.status != 200 {
		t.Fatalf("read: %d %s", a.status, a.body)
	}
	var ra readAnswer
	a.decode(t, &ra)
	return ra
}

func TestProduceSingleJSONValue(t *testing.T) {
	e := newTestEnv(t)
	a := e.do(t, "POST", "/kafka/orders", typeJSON, `{ "id": 1, "items": [ "a", "b" ] }`)
	var got producedOffsets
	a.decode(t, &got)
	if a.status != 200 || len(got.Offsets) != 1 || got.Offsets[0].Offset != 0 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	ra := e.readAll(t, "orders", 0)
	if len(ra.Records) != 1 || string(ra.Records[0].Value) != `{"id":1,"items":["a","b"]}` || ra.Records[0].ValueEncoding != "" {
		t.Fatalf("stored value: %s", e.do(t, "GET", "/kafka/orders/partitions/0/records", "", "").body)
	}
	if ra.NextOffset != 1 || ra.HighWatermark != 1 {
		t.Fatalf("next %d hw %d", ra.NextOffset, ra.HighWatermark)
	}
}

func TestProduceBatchEncodingsAndOrder(t *testing.T) {
	e := newTestEnv(t)
	if a := e.do(t, "POST", "/topics", typeJSON, `{"name":"b","partitions":3}`); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	keyPart := records.PartitionForKey([]byte("user-1"), 3)
	other, third := (keyPart+1)%3, (keyPart+2)%3
	body := fmt.Sprintf(`{"records":[
		{"key":"user-1","value":{"n":1},"headers":{"h":"v"},"timestamp":1700000000000},
		{"key":42,"value":"text","partition":%d},
		{"value":[1,2],"partition":%d},
		{"key":"user-1","value":null}]}`, other, third)
	a := e.do(t, "POST", "/kafka/b", typeJSON, body)
	var got producedOffsets
	a.decode(t, &got)
	if a.status != 200 || len(got.Offsets) != 4 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if got.Offsets[0].Partition != keyPart || got.Offsets[3].Partition != keyPart ||
		got.Offsets[3].Offset != got.Offsets[0].Offset+1 || got.Offsets[1].Partition != other || got.Offsets[2].Partition != third {
		t.Fatalf("offsets in request order: %+v (user-1 belongs on %d)", got.Offsets, keyPart)
	}
	recs := e.readAll(t, "b", int(keyPart)).Records
	r0 := recs[got.Offsets[0].Offset]
	if string(r0.Key) != `"user-1"` || r0.KeyEncoding != encodingString || string(r0.Value) != `{"n":1}` ||
		r0.Headers["h"] != "v" || r0.Timestamp != 1700000000000 {
		t.Fatalf("record 0 read back as %+v", r0)
	}
	if r3 := recs[got.Offsets[3].Offset]; string(r3.Value) != "null" {
		t.Fatalf("null value read back as %s", r3.Value)
	}
	r1 := e.readAll(t, "b", int(other)).Records[got.Offsets[1].Offset]
	if string(r1.Key) != "42" || string(r1.Value) != `"text"` {
		t.Fatalf("non-string key and string value: %+v", r1)
	}
}

func TestProduceRestProxyFormats(t *testing.T) {
	e := newTestEnv(t)
	a := e.do(t, "POST", "/topics/rp", typeRestJSON, `{"records":[{"key":"k","value":{"a":1}}]}`)
	var rp struct {
		Offsets []restProxyOffset `json:"offsets"`
	}
	a.decode(t, &rp)
	if a.status != 200 || len(rp.Offsets) != 1 || rp.Offsets[0].ErrorCode != nil {
		t.Fatalf("json.v2: %d %s", a.status, a.body)
	}
	bin := fmt.Sprintf(`{"records":[{"key":%q,"value":%q}]}`,
		base64.StdEncoding.EncodeToString([]byte("bk")), base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x01}))
	if a := e.do(t, "POST", "/kafka/rp", typeRestBinary, bin); a.status != 200 {
		t.Fatalf("binary.v2: %d %s", a.status, a.body)
	}
	recs := e.readAll(t, "rp", 0).Records
	if len(recs) != 2 {
		t.Fatalf("records %+v", recs)
	}
	// REST Proxy's JSON format serializes the key as JSON: it keeps its quotes.
	if string(recs[0].Key) != `"k"` || recs[0].KeyEncoding != "" {
		t.Fatalf("json.v2 key read back as %s (%s)", recs[0].Key, recs[0].KeyEncoding)
	}
	if recs[1].ValueEncoding != encodingBase64 || string(recs[1].Value) != `"/wAB"` || string(recs[1].Key) != `"bk"` {
		t.Fatalf("binary record read back as %+v", recs[1])
	}
	a = e.do(t, "POST", "/topics/rp", typeRestBinary, `{"records":[{"value":"***"}]}`)
	a.wantError(t, 400, codeMalformed)
	a = e.do(t, "POST", "/topics/rp", typeJSON, `{"records":[{"value":1}]}`)
	a.wantError(t, 415, codeUnsupportedType)
}

func TestProduceNDJSON(t *testing.T) {
	e := newTestEnv(t)
	a := e.do(t, "POST", "/kafka/nd", typeNDJSON, "{\"a\":1}\n\n  [2]  \n\"three\"")
	var got producedOffsets
	a.decode(t, &got)
	if a.status != 200 || len(got.Offsets) != 3 || got.Offsets[2].Offset != 2 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	recs := e.readAll(t, "nd", 0).Records
	if string(recs[1].Value) != "[2]" || string(recs[2].Value) != `"three"` {
		t.Fatalf("%+v", recs)
	}
	e.do(t, "POST", "/kafka/nd", typeNDJSON, "{\"ok\":1}\n{broken").wantError(t, 400, codeMalformed)
	if n := len(e.readAll(t, "nd", 0).Records); n != 3 {
		t.Fatalf("a rejected NDJSON body wrote records: %d", n)
	}
}

func TestProduceErrorsWriteNothing(t *testing.T) {
	e := newTestEnv(t, func(b *server.Config, a *Config) {
		b.AutoCreateTopics = false
		b.MessageMaxBytes = 2048
		a.MaxRequestBytes = 8192
	})
	if a := e.do(t, "POST", "/topics", typeJSON, `{"name":"t","partitions":2}`); a.status != 201 {
		t.Fatal(string(a.body))
	}
	big := strings.Repeat("x", 3000)
	cases := []struct {
		name, path, ctype, body string
		status, code            int
	}{
		{"malformed json", "/kafka/t", typeJSON, `{"a":`, 400, codeMalformed},
		{"empty body", "/kafka/t", typeJSON, ``, 400, codeMalformed},
		{"empty records", "/kafka/t", typeJSON, `{"records":[]}`, 400, codeMalformed},
		{"bad record shape", "/kafka/t", typeJSON, `{"records":[{"partition":"one"}]}`, 400, codeMalformed},
		{"unknown topic", "/kafka/nope", typeJSON, `1`, 404, codeTopicNotFound},
		{"invalid topic name", "/kafka/bad%20name", typeJSON, `1`, 422, codeInvalidTopic},
		{"invalid partition", "/kafka/t", typeJSON, `{"records":[{"value":1,"partition":0},{"value":2,"partition":7}]}`, 404, codePartitionNotFound},
		{"negative partition", "/kafka/t", typeJSON, `{"records":[{"value":1,"partition":-3}]}`, 400, codeMalformed},
		{"record over message.max.bytes", "/kafka/t", typeJSON, `{"records":[{"value":1,"partition":1},{"value":"` + big + `","partition":0}]}`, 413, codeTooLarge},
		{"request over body limit", "/kafka/t", typeJSON, `"` + strings.Repeat("y", 9000) + `"`, 413, codeTooLarge},
		{"wrong content type", "/kafka/t", "text/plain", `1`, 415, codeUnsupportedType},
		{"garbled content type", "/kafka/t", "application/", `1`, 415, codeUnsupportedType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.do(t, "POST", c.path, c.ctype, c.body).wantError(t, c.status, c.code)
		})
	}
	for p := 0; p < 2; p++ {
		if n := len(e.readAll(t, "t", p).Records); n != 0 {
			t.Fatalf("partition %d has %d records after rejected requests", p, n)
		}
	}
}

func TestReadParametersAndErrors(t *testing.T) {
	e := newTestEnv(t)
	var lines bytes.Buffer
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&lines, "%d\n", i)
	}
	if a := e.do(t, "POST", "/kafka/r", typeNDJSON, lines.String()); a.status != 200 {
		t.Fatal(string(a.body))
	}
	var ra readAnswer
	e.do(t, "GET", "/kafka/r/partitions/0/records?offset=5&max_records=3", "", "").decode(t, &ra)
	if len(ra.Records) != 3 || ra.Records[0].Offset != 5 || string(ra.Records[2].Value) != "7" || ra.NextOffset != 8 {
		t.Fatalf("offset 5, 3 records: %+v", ra)
	}
	e.do(t, "GET", "/kafka/r/partitions/0/records?offset=latest&timeout_ms=10", "", "").decode(t, &ra)
	if len(ra.Records) != 0 || ra.NextOffset != 20 || ra.HighWatermark != 20 {
		t.Fatalf("latest: %+v", ra)
	}
	e.do(t, "GET", "/kafka/r/partitions/0/records?offset=99", "", "").wantError(t, 416, codeOffsetOutOfRange)
	e.do(t, "GET", "/kafka/r/partitions/x/records", "", "").wantError(t, 400, codeBadParam)
	e.do(t, "GET", "/kafka/r/partitions/3/records", "", "").wantError(t, 404, codePartitionNotFound)
	e.do(t, "GET", "/kafka/none/partitions/0/records", "", "").wantError(t, 404, codeTopicNotFound)
	e.do(t, "GET", "/kafka/r/partitions/0/records?max_records=0", "", "").wantError(t, 400, codeBadParam)
	e.do(t, "GET", "/kafka/r/partitions/0/records?timeout_ms=99999999", "", "").wantError(t, 400, codeBadParam)
	e.do(t, "GET", "/kafka/r/partitions/0/records?offset=-4", "", "").wantError(t, 400, codeBadParam)
}

func TestTopicRoutes(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"a","partitions":2,"configs":{"retention.ms":"60000"}}`)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"a"}`).wantError(t, 409, codeTopicExists)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"a/b"}`).wantError(t, 422, codeInvalidTopic)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"c","partitions":-5}`).wantError(t, 422, codeInvalidPartitions)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"c","replication_factor":3}`).wantError(t, 422, codeInvalidReplication)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"c","configs":{"retention.ms":"x"}}`).wantError(t, 422, codeInvalidConfig)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"c","surprise":1}`).wantError(t, 400, codeMalformed)
	e.do(t, "POST", "/topics", "text/xml", `<topic/>`).wantError(t, 415, codeUnsupportedType)

	var names []string
	e.do(t, "GET", "/topics", "", "").decode(t, &names)
	if strings.Join(names, ",") != "a" {
		t.Fatalf("topics %v", names)
	}
	var info server.TopicInfo
	e.do(t, "GET", "/topics/a", "", "").decode(t, &info)
	if len(info.Partitions) != 2 || info.Partitions[1].Leader != 0 || len(info.Partitions[1].ISR) != 1 {
		t.Fatalf("describe: %+v", info)
	}
	if v := configOf(info, "retention.ms"); v.Value != "60000" || v.IsDefault {
		t.Fatalf("retention.ms %+v", v)
	}
	e.do(t, "POST", "/topics/a/partitions", typeJSON, `{"partitions":5}`).decode(t, &info)
	if len(info.Partitions) != 5 {
		t.Fatalf("after add: %d partitions", len(info.Partitions))
	}
	e.do(t, "POST", "/topics/a/partitions", typeJSON, `{"partitions":2}`).wantError(t, 422, codeInvalidPartitions)
	e.do(t, "PUT", "/topics/a/configs", typeJSON, `{"configs":{"retention.ms":null,"retention.bytes":1048576}}`).decode(t, &info)
	if v := configOf(info, "retention.ms"); !v.IsDefault {
		t.Fatalf("retention.ms should be back to default: %+v", v)
	}
	if v := configOf(info, "retention.bytes"); v.Value != "1048576" {
		t.Fatalf("retention.bytes %+v", v)
	}
	e.do(t, "PUT", "/topics/a/configs", typeJSON, `{"configs":{"bogus":"1"}}`).wantError(t, 422, codeInvalidConfig)
	e.do(t, "PUT", "/topics/a/configs", typeJSON, `{}`).wantError(t, 400, codeMalformed)
	if a := e.do(t, "DELETE", "/topics/a", "", ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	e.do(t, "GET", "/topics/a", "", "").wantError(t, 404, codeTopicNotFound)
	e.do(t, "DELETE", "/topics/a", "", "").wantError(t, 404, codeTopicNotFound)
	e.do(t, "GET", "/nowhere", "", "").wantError(t, 404, codeNotFound)
	e.do(t, "PATCH", "/topics", "", "").wantError(t, 405, codeMethodNotAllowed)
}

func configOf(info server.TopicInfo, name string) server.ConfigEntry {
	for _, c := range info.Configs {
		if c.Name == name {
			return c
		}
	}
	return server.ConfigEntry{}
}

func TestClusterRoutes(t *testing.T) {
	e := newTestEnv(t)
	var health map[string]string
	e.do(t, "GET", "/healthz", "", "").decode(t, &health)
	if health["status"] != "ok" {
		t.Fatal(health)
	}
	var brokers struct {
		Brokers []brokerInfo `json:"brokers"`
	}
	e.do(t, "GET", "/brokers", "", "").decode(t, &brokers)
	if len(brokers.Brokers) != 1 || brokers.Brokers[0].Port != 9092 || brokers.Brokers[0].Host != "localhost" {
		t.Fatalf("brokers %+v", brokers)
	}
	var cluster map[string]any
	e.do(t, "GET", "/cluster", "", "").decode(t, &cluster)
	if id, _ := cluster["cluster_id"].(string); len(id) < 16 {
		t.Fatalf("cluster %v", cluster)
	}
}

// An HTTP produce is acks=all: a topic asking for more in-sync replicas
// than the partition has answers 503 with error_code 50302 and stores
// nothing.
func TestProduceNeedsMinInsyncReplicas(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "strict", Partitions: 1,
		Configs: map[string]string{server.CfgMinInsyncReplicas: "2"}}); err != nil {
		t.Fatal(err)
	}
	e.do(t, "POST", "/kafka/strict", "application/json", `{"id":1}`).wantError(t, http.StatusServiceUnavailable, codeNotEnoughReplicas)
	if p, _ := e.broker.Partition("strict", 0); p.LogEndOffset() != 0 {
		t.Fatalf("log end %d after a refused produce", p.LogEndOffset())
	}
}
