package api

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/ferry-mq/ferry/server"
)

const (
	orderJSONSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",` +
		`"properties":{"id":{"type":"integer"},"item":{"type":"string"},"note":{"type":["string","null"]}},"required":["id","item"]}`
	keyJSONSchema = `{"type":"string","maxLength":16}`
)

func jsonSchemaBody(field, schema string) string {
	b, _ := json.Marshal(schema)
	return `{"schemaType":"JSON",` + field + `:` + string(b) + `}`
}

// TestJSONSchemaRoutes: JSON schemas registered, answered with their
// type, referenced across subjects, listed, and checked with the JSON
// rules in verbose form; AVRO answers carry no schemaType, as Confluent's.
func TestJSONSchemaRoutes(t *testing.T) {
	e := newSchemaEnv(t)
	e.do(t, "GET", "/schemas/types", "", "").wantJSON(t, `["AVRO","JSON","PROTOBUF"]`)
	addr := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	a := e.do(t, "POST", "/subjects/address/versions", srType, jsonSchemaBody(`"schema"`, addr))
	var reg struct{ ID int }
	a.decode(t, &reg)
	if a.status != 200 {
		t.Fatalf("register: %d %s", a.status, a.body)
	}
	e.do(t, "GET", "/subjects/address/versions/1", "", "").wantJSON(t,
		fmt.Sprintf(`{"subject":"address","version":1,"id":%d,"schemaType":"JSON","schema":%s}`, reg.ID, mustQuote(addr)))
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", reg.ID), "", "").wantJSON(t,
		fmt.Sprintf(`{"schemaType":"JSON","schema":%s}`, mustQuote(addr)))
	avroID := e.register(t, "orders-value", orderV1)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", avroID), "", "").wantJSON(t, fmt.Sprintf(`{"schema":%s}`, mustQuote(orderV1)))

	person := `{"type":"object","properties":{"home":{"$ref":"address.json#"}}}`
	withRef := strings.TrimSuffix(jsonSchemaBody(`"schema"`, person), "}") +
		`,"references":[{"name":"address.json","subject":"address","version":1}]}`
	a = e.do(t, "POST", "/subjects/person/versions", srType, withRef)
	var pid struct{ ID int }
	a.decode(t, &pid)
	if a.status != 200 {
		t.Fatalf("register with reference: %d %s", a.status, a.body)
	}
	e.do(t, "GET", "/subjects/address/versions/1/referencedby", "", "").wantJSON(t, fmt.Sprintf(`[%d]`, pid.ID))
	e.do(t, "DELETE", "/subjects/address/versions/1", "", "").wantError(t, 422, 42206)
	e.do(t, "DELETE", "/subjects/address", "", "").wantError(t, 422, 42206)
	// A reference the body does not declare does not resolve.
	e.do(t, "POST", "/subjects/dangling/versions", srType, jsonSchemaBody(`"schema"`, person)).wantError(t, 422, 42201)

	var list []map[string]any
	a = e.do(t, "GET", "/schemas?subjectPrefix=a", "", "")
	a.decode(t, &list)
	if len(list) != 1 || list[0]["subject"] != "address" || list[0]["schemaType"] != "JSON" {
		t.Fatalf("GET /schemas?subjectPrefix=a: %s", a.body)
	}
	a = e.do(t, "GET", "/schemas?limit=2&offset=1", "", "")
	a.decode(t, &list)
	if len(list) != 2 || list[0]["subject"] != "orders-value" || list[1]["subject"] != "person" {
		t.Fatalf("GET /schemas page: %s", a.body)
	}
	e.do(t, "GET", "/schemas?limit=-1", "", "").wantError(t, 400, 400)

	// Verbose compatibility names the rule and the path.
	bad := `{"type":"object","properties":{"city":{"type":"integer"}},"required":["city"]}`
	a = e.do(t, "POST", "/compatibility/subjects/address/versions/latest?verbose=true", srType, jsonSchemaBody(`"schema"`, bad))
	var compat struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	a.decode(t, &compat)
	if compat.IsCompatible || len(compat.Messages) == 0 || !strings.Contains(compat.Messages[0], "TYPE_CHANGED") ||
		!strings.Contains(compat.Messages[0], "#/properties/city") {
		t.Fatalf("verbose compatibility: %s", a.body)
	}
	e.do(t, "POST", "/subjects/address/versions", srType, jsonSchemaBody(`"schema"`, bad)).wantError(t, 409, 409)

	// normalize=true registers the canonical form: sorted keys, no spaces.
	a = e.do(t, "POST", "/subjects/norm/versions?normalize=true", srType, jsonSchemaBody(`"schema"`, `{ "type": "string", "maxLength": 3 }`))
	if a.status != 200 {
		t.Fatalf("normalize: %d %s", a.status, a.body)
	}
	if raw := e.do(t, "GET", "/subjects/norm/versions/1/schema", "", ""); string(raw.body) != `{"maxLength":3,"type":"string"}` {
		t.Fatalf("normalized schema stored as %s", raw.body)
	}
	e.do(t, "POST", "/subjects/p/versions", srType, `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message {"}`).wantError(t, 422, 42201)
	e.do(t, "POST", "/subjects/j/versions", srType, jsonSchemaBody(`"schema"`, `{"type":"nope"}`)).wantError(t, 422, 42201)
}

// TestJSONSchemaProduceAndRead: REST Proxy's jsonschema content type
// registers the inline schemas, validates every record before writing,
// stores Confluent's framing, and format=jsonschema reads the JSON back.
func TestJSONSchemaProduceAndRead(t *testing.T) {
	e := newSchemaEnv(t)
	addr := startKafka(t, e.broker)
	req := func(records ...string) string {
		return fmt.Sprintf(`{"key_schema":%s,"value_schema":%s,"records":[%s]}`, mustQuote(keyJSONSchema), mustQuote(orderJSONSchema), strings.Join(records, ","))
	}
	// One bad record: nothing written, the error names the record and the field.
	a := e.do(t, "POST", "/topics/orders", typeRestJSONSchema, req(`{"key":"k1","value":{"id":1,"item":"book"}}`, `{"key":"k2","value":{"id":"two","item":"pen"}}`))
	a.wantError(t, 422, codeInvalidRecord)
	if !strings.Contains(string(a.body), "records[1].value") || !strings.Contains(string(a.body), "/id") {
		t.Fatalf("error does not name the record and field: %s", a.body)
	}
	e.do(t, "POST", "/topics/orders", typeRestJSONSchema, req(`{"key":"a-key-longer-than-sixteen","value":{"id":1,"item":"x"}}`)).wantError(t, 422, codeInvalidRecord)
	if info, err := e.broker.DescribeTopic("orders"); err == nil {
		for _, p := range info.Partitions {
			if p.HighWatermark != 0 {
				t.Fatalf("a refused request wrote records: %+v", info)
			}
		}
	}
	var ans avroAnswer
	a = e.do(t, "POST", "/topics/orders", typeRestJSONSchema, req(`{"key":"k1","value":{"id":1,"item":"book","note":null},"partition":0}`))
	a.decode(t, &ans)
	if a.status != 200 || ans.ValueSchemaID == nil || ans.KeySchemaID == nil {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	// By id, and a mismatched type is refused.
	byID := fmt.Sprintf(`{"value_schema_id":%d,"records":[{"value":{"id":2,"item":"pen"},"partition":0}]}`, *ans.ValueSchemaID)
	if a := e.do(t, "POST", "/kafka/orders", typeRestJSONSchema, byID); a.status != 200 {
		t.Fatalf("produce by id: %d %s", a.status, a.body)
	}
	avroID := e.register(t, "other-value", orderV1)
	e.do(t, "POST", "/kafka/orders", typeRestJSONSchema, fmt.Sprintf(`{"value_schema_id":%d,"records":[{"value":{"id":1}}]}`, avroID)).wantError(t, 422, 42201)

	raw := consumeOne(t, addr, "orders")
	if raw[0] != 0 || int(binary.BigEndian.Uint32(raw[1:5])) != *ans.ValueSchemaID || string(raw[5:]) != `{"id":1,"item":"book","note":null}` {
		t.Fatalf("stored value %q is not magic 0, id %d, JSON", raw, *ans.ValueSchemaID)
	}
	var read struct {
		Records []struct {
			Key           json.RawMessage
			KeyEncoding   string `json:"key_encoding"`
			Value         json.RawMessage
			ValueEncoding string `json:"value_encoding"`
			ValueSchemaID int    `json:"value_schema_id"`
		}
	}
	a = e.do(t, "GET", "/kafka/orders/partitions/0/records?format=jsonschema", "", "")
	a.decode(t, &read)
	if len(read.Records) != 2 || read.Records[0].ValueEncoding != "jsonschema" || read.Records[0].ValueSchemaID != *ans.ValueSchemaID ||
		string(read.Records[0].Value) != `{"id":1,"item":"book","note":null}` || string(read.Records[0].Key) != `"k1"` || read.Records[0].KeyEncoding != "jsonschema" {
		t.Fatalf("format=jsonschema read: %s", a.body)
	}
	// Protobuf: the schema's first message, framed with its message
	// indexes, and read back through the registry.
	proto := `{"value_schema":"syntax = \"proto3\"; message M { int32 a = 1; string b = 2; }","records":[{"value":{"a":7,"b":"x"}}]}`
	if a := e.do(t, "POST", "/topics/pb", typeRestProtobuf, proto); a.status != 200 {
		t.Fatalf("protobuf produce: %d %s", a.status, a.body)
	}
	e.do(t, "POST", "/topics/pb", typeRestProtobuf, `{"value_schema_id":999999,"records":[{"value":{"a":1}}]}`).wantError(t, 404, 40403)
	e.do(t, "POST", "/topics/pb", typeRestProtobuf, `{"value_schema":"syntax = \"proto3\"; message M { int32 a = 1; string b = 2; }","records":[{"value":{"nope":1}}]}`).wantError(t, 422, 42205)
	pb := e.do(t, "GET", "/kafka/pb/partitions/0/records?format=protobuf", "", "")
	if !strings.Contains(string(pb.body), `"a":7`) || !strings.Contains(string(pb.body), `"b":"x"`) {
		t.Fatalf("format=protobuf read: %s", pb.body)
	}
	// format=avro leaves JSON Schema records as the plain read renders them.
	a = e.do(t, "GET", "/kafka/orders/partitions/0/records?format=avro", "", "")
	a.decode(t, &read)
	if read.Records[0].ValueEncoding == "avro" || read.Records[0].ValueEncoding == "jsonschema" {
		t.Fatalf("format=avro decoded a JSON Schema record: %s", a.body)
	}
}

// TestFranzGoSerdeRoundTrip drives the registry with franz-go's sr client
// (register, fetch, references, compatibility) and its Serde with JSON
// encoders: a value encoded by the serde passes the broker's validation
// over the Kafka protocol and reads back through format=jsonschema; one
// produced over HTTP decodes with the serde; a value that breaks the
// schema is refused by the broker with INVALID_RECORD, keys as well as
// values.
func TestFranzGoSerdeRoundTrip(t *testing.T) {
	reg := newTestRegistry(t, nil)
	e := newTestEnv(t, func(sc *server.Config, c *Config) { c.Schemas = reg; sc.ValueValidator = reg })
	addr := startKafka(t, e.broker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(e.url))
	if err != nil {
		t.Fatal(err)
	}
	types, err := cl.SupportedTypes(ctx)
	if err != nil || !slices.Contains(types, sr.TypeJSON) || !slices.Contains(types, sr.TypeProtobuf) {
		t.Fatalf("supported types: %v %v", types, err)
	}
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 1, Configs: map[string]string{
		server.CfgValueSchemaValidation: "true", server.CfgKeySchemaValidation: "true"}}); err != nil {
		t.Fatal(err)
	}
	value, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderJSONSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	key, err := cl.CreateSchema(ctx, "orders-key", sr.Schema{Schema: keyJSONSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByID(ctx, value.ID)
	if err != nil || got.Type != sr.TypeJSON || got.Schema != orderJSONSchema {
		t.Fatalf("SchemaByID: %+v %v", got, err)
	}
	if ss, err := cl.SchemaByVersion(ctx, "orders-value", -1); err != nil || ss.ID != value.ID || ss.Type != sr.TypeJSON {
		t.Fatalf("SchemaByVersion: %+v %v", ss, err)
	}
	if ss, err := cl.LookupSchema(ctx, "orders-value", sr.Schema{Schema: orderJSONSchema, Type: sr.TypeJSON}); err != nil || ss.Version != 1 {
		t.Fatalf("LookupSchema: %+v %v", ss, err)
	}
	breaking := sr.Schema{Schema: `{"type":"object","properties":{"id":{"type":"string"}}}`, Type: sr.TypeJSON}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "orders-value", -1, breaking)
	if err != nil || res.Is || len(res.Messages) == 0 {
		t.Fatalf("CheckCompatibility: %+v %v", res, err)
	}

	type order struct {
		ID   int     `json:"id"`
		Item string  `json:"item"`
		Note *string `json:"note"`
	}
	var serde sr.Serde
	serde.Register(value.ID, order{}, sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	var keySerde sr.Serde
	keySerde.Register(key.ID, "", sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	v, err := serde.Encode(order{ID: 7, Item: "lamp"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keySerde.Encode("k7")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: k, Value: v}).FirstErr(); err != nil {
		t.Fatalf("producing a serde-encoded value: %v", err)
	}
	// A value that is JSON but breaks the schema, a key that breaks its
	// schema, and a value with an unknown id: refused, nothing written.
	badValue := append(append([]byte{0}, v[1:5]...), `{"id":"seven","item":"lamp"}`...)
	badKey, _ := keySerde.Encode(strings.Repeat("k", 20))
	unknown := append([]byte{0, 0, 0, 0x7f, 0}, `{}`...)
	for _, rec := range []*kgo.Record{{Topic: "orders", Key: k, Value: badValue}, {Topic: "orders", Key: badKey, Value: v}, {Topic: "orders", Value: unknown}} {
		err := kc.ProduceSync(ctx, rec).FirstErr()
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("producing key %q value %q: %v, want INVALID_RECORD", rec.Key, rec.Value, err)
		}
	}
	// HTTP produce into the same topic; the serde decodes what it wrote.
	httpBody := fmt.Sprintf(`{"key_schema_id":%d,"value_schema_id":%d,"records":[{"key":"k8","value":{"id":8,"item":"desk","note":"oak"},"partition":0}]}`, key.ID, value.ID)
	if a := e.do(t, "POST", "/topics/orders", typeRestJSONSchema, httpBody); a.status != 200 {
		t.Fatalf("HTTP produce: %d %s", a.status, a.body)
	}
	fetched := consumeAll(t, addr, "orders", 2)
	var first, second order
	if err := serde.Decode(fetched[0].Value, &first); err != nil || first.ID != 7 || first.Item != "lamp" {
		t.Fatalf("serde decode of the Kafka-produced value: %+v %v", first, err)
	}
	if err := serde.Decode(fetched[1].Value, &second); err != nil || second.ID != 8 || second.Note == nil || *second.Note != "oak" {
		t.Fatalf("serde decode of the HTTP-produced value: %+v %v", second, err)
	}
	var k8 string
	if err := keySerde.Decode(fetched[1].Key, &k8); err != nil || k8 != "k8" {
		t.Fatalf("serde decode of the HTTP-produced key: %q %v", k8, err)
	}
	a := e.do(t, "GET", "/kafka/orders/partitions/0/records?format=jsonschema", "", "")
	if a.status != 200 || !strings.Contains(string(a.body), `"value":{"id":7,"item":"lamp","note":null}`) {
		t.Fatalf("format=jsonschema read of the serde's value: %s", a.body)
	}
}

// consumeAll reads the first n records of partition 0 with franz-go.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records on %s within 20s: %v", len(out), n, topic, fetches.Errors())
		}
		out = append(out, fetches.Records()...)
	}
	return out
}
