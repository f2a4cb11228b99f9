package api

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/kafka"
)

const (
	orderAvro = `{"type":"record","name":"Order","namespace":"shop","fields":[` +
		`{"name":"id","type":"long"},{"name":"item","type":"string"},` +
		`{"name":"note","type":["null","string"],"default":null},` +
		`{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"qty","type":"int"}]}},"default":[]}]}`
	keyAvro = `"string"`
)

// startKafka serves the Kafka protocol over the env's broker.
func startKafka(t *testing.T, b *server.Broker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	groups, err := group.New(b, group.Config{Logger: testLogger(), OffsetsTopicPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kafka.New(b, groups, kafka.Config{Addr: ln.Addr().String(), AdvertisedAddr: ln.Addr().String(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	go ks.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ks.Shutdown(ctx)
		groups.Close()
	})
	return ln.Addr().String()
}

// consumeOne reads the first record of partition 0 with franz-go.
func consumeOne(t *testing.T, addr, topic string) []byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record on %s within 20s: %v", topic, fetches.Errors())
		}
		if recs := fetches.Records(); len(recs) > 0 {
			return recs[0].Value
		}
	}
}

func avroBody(keySchema, valueSchema string, valueID int, recs ...string) string {
	var parts []string
	if keySchema != "" {
		parts = append(parts, `"key_schema":`+mustQuote(keySchema))
	}
	if valueSchema != "" {
		parts = append(parts, `"value_schema":`+mustQuote(valueSchema))
	}
	if valueID != 0 {
		parts = append(parts, fmt.Sprintf(`"value_schema_id":%d`, valueID))
	}
	parts = append(parts, `"records":[`+strings.Join(recs, ",")+`]`)
	return "{" + strings.Join(parts, ",") + "}"
}

type avroAnswer struct {
	KeySchemaID   *int `json:"key_schema_id"`
	ValueSchemaID *int `json:"value_schema_id"`
	Offsets       []struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"offsets"`
}

// TestAvroProduceThenConsumeWithKafkaClient: records POSTed as Avro are
// read by a Kafka client in Confluent's wire format and decode with the
// registered schema.
func TestAvroProduceThenConsumeWithKafkaClient(t *testing.T) {
	e := newSchemaEnv(t)
	addr := startKafka(t, e.broker)
	recs := []string{
		`{"key":"k1","value":{"id":1,"item":"book","note":{"string":"gift"},"lines":[{"qty":2}]}}`,
		`{"key":"k2","value":{"id":2,"item":"pen"}}`,
		`{"value":{"id":3,"item":"ink","note":null,"lines":[]},"partition":0}`,
	}
	a := e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody(keyAvro, orderAvro, 0, recs...))
	var ans avroAnswer
	a.decode(t, &ans)
	if a.status != 200 || ans.ValueSchemaID == nil || ans.KeySchemaID == nil || len(ans.Offsets) != 3 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	// The inline schemas were registered under the topic's subjects.
	e.do(t, "GET", "/subjects", "", "").wantJSON(t, `["orders-key","orders-value"]`)
	// By id, through REST Proxy's path, with no schema text.
	a = e.do(t, "POST", "/topics/orders", typeRestAvro, avroBody("", "", *ans.ValueSchemaID, `{"value":{"id":4,"item":"cap"},"partition":0}`))
	if a.status != 200 {
		t.Fatalf("produce by id: %d %s", a.status, a.body)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	codec, err := goavro.NewCodec(orderAvro)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	items := map[string]bool{}
	for len(items) < 4 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before the deadline", items)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != *ans.ValueSchemaID {
				t.Fatalf("value %x is not Confluent wire format with schema id %d", r.Value, *ans.ValueSchemaID)
			}
			native, rest, err := codec.NativeFromBinary(r.Value[5:])
			if err != nil || len(rest) != 0 {
				t.Fatalf("decode %x: %v", r.Value, err)
			}
			m := native.(map[string]any)
			items[m["item"].(string)] = true
			if m["item"] == "book" {
				want := map[string]any{"id": int64(1), "item": "book", "note": map[string]any{"string": "gift"}, "lines": []any{map[string]any{"qty": int32(2)}}}
				if !reflect.DeepEqual(m, want) {
					t.Fatalf("decoded %v, want %v", m, want)
				}
				if r.Key[0] != 0 || int(binary.BigEndian.Uint32(r.Key[1:5])) != *ans.KeySchemaID || string(r.Key[6:]) != "k1" {
					t.Fatalf("key %x", r.Key)
				}
			}
		})
	}
}

func TestAvroProduceErrorsWriteNothing(t *testing.T) {
	e := newSchemaEnv(t)
	good := `{"value":{"id":1,"item":"book"}}`
	cases := []struct {
		body       string
		status     int
		code       int
		mentioning string
	}{
		{avroBody("", orderAvro, 0, good, `{"value":{"id":2,"item":7}}`), 422, codeInvalidRecord, "records[1].value"},
		{avroBody("", orderAvro, 0, good, `{"value":{"id":2,"item":"x","lines":[{"qty":"many"}]}}`), 422, codeInvalidRecord, "/lines/0/qty"},
		{avroBody("", orderAvro, 0, `{"value":{"id":2}}`), 422, codeInvalidRecord, "/item"},
		{avroBody("", orderAvro, 0, `{"value":{"id":2,"item":"x","colour":"red"}}`), 422, codeInvalidRecord, "colour"},
		{avroBody("", orderAvro, 0, `{"value":{"id":2,"item":"x","note":"bare"}}`), 422, codeInvalidRecord, "/note"},
		{avroBody("", orderAvro, 0, `{"key":"k","value":{"id":2,"item":"x"}}`), 422, 42201, "key_schema"},
		{avroBody("", "", 0, good), 422, 42201, "value_schema"},
		{avroBody("", "", 999, good), 404, 40403, "999"},
		{avroBody("", `{"type":"record"}`, 0, good), 422, 42201, "Invalid schema"},
		{`{"records":[]}`, 400, codeMalformed, "records"},
		{`{"records":`, 400, codeMalformed, "Avro produce"},
		// Counted before encoding/json builds a struct per item.
		{avroBody("", orderAvro, 0, slices.Repeat([]string{`{}`}, 100001)...), 413, codeTooLarge, "100000 records"},
	}
	for _, tc := range cases {
		a := e.do(t, "POST", "/kafka/orders", typeRestAvro, tc.body)
		a.wantError(t, tc.status, tc.code)
		if !strings.Contains(string(a.body), tc.mentioning) {
			t.Errorf("%s: answer %s does not mention %q", tc.body, a.body, tc.mentioning)
		}
	}
	// A schema incompatible with the registered one is refused with 409.
	e.do(t, "PUT", "/config/orders-value", srType, `{"compatibility":"FULL"}`)
	a := e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody("", `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`, 0, good))
	a.wantError(t, 409, 409)
	if info, err := e.broker.DescribeTopic("orders"); err == nil {
		for _, p := range info.Partitions {
			if p.HighWatermark != 0 {
				t.Fatalf("a refused request wrote records: %+v", info)
			}
		}
	}
	var ans avroAnswer
	e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody("", orderAvro, 0, good)).decode(t, &ans)
	if len(ans.Offsets) != 1 || ans.Offsets[0].Offset != 0 {
		t.Fatalf("first accepted record is not at offset 0: %+v", ans)
	}
}

func TestAvroProduceWithoutRegistry(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody("", orderAvro, 0, `{"value":{"id":1,"item":"x"}}`)).wantError(t, 503, codeUnavailable)
}

// BenchmarkAvroProduceHandler is BenchmarkProduceHandler's 10 records as
// Avro by schema id, for comparison in the same run.
func BenchmarkAvroProduceHandler(b *testing.B) {
	h := benchHandler(b)
	w := serve(h, "POST", "/subjects/bench-value/versions", body(benchAvroSchema))
	var reg struct{ ID int }
	json.Unmarshal(w.Body.Bytes(), &reg)
	var recs []string
	for i := 1; i <= 10; i++ {
		recs = append(recs, fmt.Sprintf(`{"key":null,"value":{"id":%d,"event":"page_view","path":"/products/%05d","agent":"wrk-benchmark/4.2"}}`, i, i*7919%100000))
	}
	reqBody := avroBody("", "", reg.ID, recs...)
	b.SetBytes(int64(len(reqBody)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httpRequest("POST", "/kafka/bench", typeRestAvro, reqBody)
		rw := serveRequest(h, req)
		if rw.Code != 200 {
			b.Fatalf("%d %s", rw.Code, rw.Body)
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
}

const benchAvroSchema = `{"type":"record","name":"Event","fields":[{"name":"id","type":"long"},{"name":"event","type":"string"},{"name":"path","type":"string"},{"name":"agent","type":"string"}]}`

func TestAvroReadFormat(t *testing.T) {
	e := newSchemaEnv(t)
	var ans avroAnswer
	e.do(t, "POST", "/kafka/orders", typeRestAvro, avroBody(keyAvro, orderAvro, 0,
		`{"key":"k1","value":{"id":1,"item":"book","note":{"string":"gift"}},"partition":0}`)).decode(t, &ans)
	e.do(t, "POST", "/kafka/orders", typeJSON, `{"records":[{"value":{"plain":true},"partition":0}]}`)
	var read struct {
		Records []struct {
			Key           json.RawMessage
			KeyEncoding   string `json:"key_encoding"`
			KeySchemaID   int    `json:"key_schema_id"`
			Value         json.RawMessage
			ValueEncoding string `json:"value_encoding"`
			ValueSchemaID int    `json:"value_schema_id"`
		}
		NextOffset int64 `json:"next_offset"`
	}
	a := e.do(t, "GET", "/kafka/orders/partitions/0/records?format=avro", "", "")
	a.decode(t, &read)
	if a.status != 200 || len(read.Records) != 2 || read.NextOffset != 2 {
		t.Fatalf("read: %d %s", a.status, a.body)
	}
	r0 := read.Records[0]
	if r0.ValueEncoding != "avro" || r0.ValueSchemaID != *ans.ValueSchemaID || r0.KeyEncoding != "avro" || r0.KeySchemaID != *ans.KeySchemaID || string(r0.Key) != `"k1"` {
		t.Fatalf("avro record: %s", a.body)
	}
	var value map[string]any
	json.Unmarshal(r0.Value, &value)
	if value["item"] != "book" || value["id"] != float64(1) || value["note"].(map[string]any)["string"] != "gift" {
		t.Fatalf("decoded value: %s", r0.Value)
	}
	if r1 := read.Records[1]; r1.ValueEncoding != "" || string(r1.Value) != `{"plain":true}` {
		t.Fatalf("a JSON record must pass through: %s", a.body)
	}
	plain := e.do(t, "GET", "/kafka/orders/partitions/0/records", "", "")
	if strings.Contains(string(plain.body), `"avro"`) {
		t.Fatalf("a read without format=avro decoded Avro: %s", plain.body)
	}
	e.do(t, "GET", "/kafka/nope/partitions/0/records?format=avro", "", "").wantError(t, 404, codeTopicNotFound)
}
