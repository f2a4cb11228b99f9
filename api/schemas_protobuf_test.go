package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/ferry-mq/ferry/schemaregistry/protobuf"
	"github.com/ferry-mq/ferry/server"
)

const (
	moneyProto = "syntax = \"proto3\";\npackage shop;\n\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n"
	// orderProto imports moneyProto from another subject; its second
	// message (Audit) is what the serde writes with message indexes [1].
	orderProto = "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\n\n" +
		"message Order {\n  string id = 1;\n  Money total = 2;\n  repeated string tags = 3;\n}\n\n" +
		"message Audit {\n  string who = 1;\n  int32 step = 2;\n}\n"
	keyProto = "syntax = \"proto3\";\npackage shop;\nmessage OrderKey { string id = 1; }\n"
)

// protoSerde registers id for dynamicpb messages of one message of a schema.
func protoSerde(t *testing.T, f *protobuf.File, id int, name string) (*sr.Serde, protoreflect.MessageDescriptor) {
	t.Helper()
	md, err := f.MessageByName(name)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := f.MessageIndexes(name)
	if err != nil {
		t.Fatal(err)
	}
	var s sr.Serde
	s.Register(id, &dynamicpb.Message{},
		sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
		sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }),
		sr.Index(indexes...))
	return &s, md
}

// TestFranzGoSerdeProtobuf: franz-go's sr client registers Protobuf
// schemas (one importing another subject's file), its Serde frames
// dynamicpb messages with Confluent's message indexes, the broker
// validates keys and values over the Kafka protocol (INVALID_RECORD) and
// HTTP (422), format=protobuf reads the serde's records, and the serde
// decodes what REST produce wrote.
func TestFranzGoSerdeProtobuf(t *testing.T) {
	reg := newTestRegistry(t, nil)
	e := newTestEnv(t, func(sc *server.Config, c *Config) { c.Schemas = reg; sc.ValueValidator = reg })
	addr := startKafka(t, e.broker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(e.url))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 1, Configs: map[string]string{
		server.CfgValueSchemaValidation: "true", server.CfgKeySchemaValidation: "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSchema(ctx, "shop-money", sr.Schema{Schema: moneyProto, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	refs := []sr.SchemaReference{{Name: "shop/money.proto", Subject: "shop-money", Version: 1}}
	value, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf, References: refs})
	if err != nil {
		t.Fatal(err)
	}
	key, err := cl.CreateSchema(ctx, "orders-key", sr.Schema{Schema: keyProto, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByID(ctx, value.ID)
	if err != nil || got.Type != sr.TypeProtobuf || got.Schema != orderProto || len(got.References) != 1 || got.References[0] != refs[0] {
		t.Fatalf("SchemaByID: %+v %v", got, err)
	}
	if ss, err := cl.LookupSchema(ctx, "orders-value", sr.Schema{Schema: orderProto, Type: sr.TypeProtobuf, References: refs}); err != nil || ss.Version != 1 || ss.ID != value.ID {
		t.Fatalf("LookupSchema: %+v %v", ss, err)
	}
	if ids, err := cl.SchemaReferences(ctx, "shop-money", 1); err != nil || len(ids) != 1 || ids[0].ID != value.ID {
		t.Fatalf("referencedby: %+v %v", ids, err)
	}
	e.do(t, "DELETE", "/subjects/shop-money/versions/1", "", "").wantError(t, 422, 42206)

	f, err := protobuf.Parse(orderProto, map[string]string{"shop/money.proto": moneyProto})
	if err != nil {
		t.Fatal(err)
	}
	kf, err := protobuf.Parse(keyProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	auditSerde, audit := protoSerde(t, f, value.ID, "shop.Audit")
	orderSerde, order := protoSerde(t, f, value.ID, "shop.Order")
	keySerde, orderKey := protoSerde(t, kf, key.ID, "shop.OrderKey")

	k := dynamicpb.NewMessage(orderKey)
	k.Set(orderKey.Fields().ByName("id"), protoreflect.ValueOfString("o1"))
	kb := keySerde.MustEncode(k)
	a := dynamicpb.NewMessage(audit)
	a.Set(audit.Fields().ByName("who"), protoreflect.ValueOfString("ann"))
	a.Set(audit.Fields().ByName("step"), protoreflect.ValueOfInt32(3))
	ab := auditSerde.MustEncode(a)
	if ab[5] != 2 || ab[6] != 2 {
		t.Fatalf("serde framed Audit with index bytes %x, want count 1 and index 1 (zigzag 02 02)", ab[5:7])
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: kb, Value: ab}).FirstErr(); err != nil {
		t.Fatalf("producing a serde-encoded Audit: %v", err)
	}
	// Refused over Kafka: a value whose proto3 string is not UTF-8,
	// indexes past the schema's messages, a key whose bytes do not decode,
	// an unknown id. Nothing is written. (A known field with another wire
	// type is an unknown field to Protobuf decoders, so that passes.)
	wrongWire := append(append([]byte{}, ab[:7]...), 0x0a, 0x01, 0xff)
	badIndex := append(append([]byte{}, ab[:5]...), 2, 6)
	badKey := append(append([]byte{}, kb[:6]...), 0x0a, 0x09, 'o')
	unknown := []byte{0, 0, 0, 0x7f, 0, 0}
	for name, rec := range map[string]*kgo.Record{
		"string not UTF-8":   {Topic: "orders", Key: kb, Value: wrongWire},
		"index past the end": {Topic: "orders", Key: kb, Value: badIndex},
		"truncated key":      {Topic: "orders", Key: badKey, Value: ab},
		"unknown id":         {Topic: "orders", Key: kb, Value: unknown},
	} {
		if err := kc.ProduceSync(ctx, rec).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("%s: %v, want INVALID_RECORD", name, err)
		}
	}
	// Refused over HTTP: the same bytes as binary records, value and key.
	b64 := base64.StdEncoding.EncodeToString
	e.do(t, "POST", "/topics/orders", typeRestBinary, fmt.Sprintf(`{"records":[{"key":%q,"value":%q}]}`, b64(kb), b64(wrongWire))).wantError(t, 422, codeInvalidRecord)
	e.do(t, "POST", "/topics/orders", typeRestBinary, fmt.Sprintf(`{"records":[{"key":%q,"value":%q}]}`, b64(badKey), b64(ab))).wantError(t, 422, codeInvalidRecord)

	// REST produce with key_schema_id and value_schema_id (the first
	// message, Order, as Confluent's REST Proxy encodes), decoded by the serde.
	httpBody := fmt.Sprintf(`{"key_schema_id":%d,"value_schema_id":%d,"records":[{"key":{"id":"o2"},"value":{"id":"o2","total":{"currency":"EUR","units":"12"},"tags":["a","b"]},"partition":0}]}`, key.ID, value.ID)
	if a := e.do(t, "POST", "/topics/orders", typeRestProtobuf, httpBody); a.status != 200 {
		t.Fatalf("HTTP produce: %d %s", a.status, a.body)
	}
	fetched := consumeAll(t, addr, "orders", 2)
	decodedAudit := dynamicpb.NewMessage(audit)
	if err := auditSerde.Decode(fetched[0].Value, decodedAudit); err != nil || decodedAudit.Get(audit.Fields().ByName("who")).String() != "ann" {
		t.Fatalf("serde decode of the Kafka-produced value: %v %v", decodedAudit, err)
	}
	decodedOrder := dynamicpb.NewMessage(order)
	if err := orderSerde.Decode(fetched[1].Value, decodedOrder); err != nil {
		t.Fatalf("serde decode of the HTTP-produced value: %v", err)
	}
	total := decodedOrder.Get(order.Fields().ByName("total")).Message()
	if decodedOrder.Get(order.Fields().ByName("id")).String() != "o2" || total.Get(total.Descriptor().Fields().ByName("units")).Int() != 12 ||
		decodedOrder.Get(order.Fields().ByName("tags")).List().Len() != 2 {
		t.Fatalf("HTTP-produced Order decoded as %v", decodedOrder)
	}
	decodedKey := dynamicpb.NewMessage(orderKey)
	if err := keySerde.Decode(fetched[1].Key, decodedKey); err != nil || decodedKey.Get(orderKey.Fields().ByName("id")).String() != "o2" {
		t.Fatalf("serde decode of the HTTP-produced key: %v %v", decodedKey, err)
	}
	// format=protobuf reads both: the serde's Audit through its indexes.
	var read struct {
		Records []struct {
			Key           json.RawMessage
			KeyEncoding   string `json:"key_encoding"`
			Value         json.RawMessage
			ValueEncoding string `json:"value_encoding"`
			ValueSchemaID int    `json:"value_schema_id"`
		}
	}
	r := e.do(t, "GET", "/kafka/orders/partitions/0/records?format=protobuf", "", "")
	r.decode(t, &read)
	if len(read.Records) != 2 || read.Records[0].ValueEncoding != "protobuf" || read.Records[0].ValueSchemaID != value.ID ||
		string(read.Records[0].Value) != `{"who":"ann","step":3}` || string(read.Records[0].Key) != `{"id":"o1"}` ||
		!strings.Contains(string(read.Records[1].Value), `"units":"12"`) {
		t.Fatalf("format=protobuf read: %s", r.body)
	}
}

func protoBody(schema string, extra ...string) string {
	b, _ := json.Marshal(schema)
	return `{"schemaType":"PROTOBUF","schema":` + string(b) + strings.Join(extra, "") + `}`
}

// TestProtobufIdentityAndCompatibility over HTTP: without normalize=true a
// reordered schema is another schema (Confluent keeps the written order),
// with it the sorted form is registered and found; each compatibility
// level gives Confluent's verdict with a verbose message naming the rule
// and the path.
func TestProtobufIdentityAndCompatibility(t *testing.T) {
	e := newSchemaEnv(t)
	idOf := func(a answer) int {
		t.Helper()
		var reg struct{ ID int }
		a.decode(t, &reg)
		if a.status != 200 {
			t.Fatalf("%d %s", a.status, a.body)
		}
		return reg.ID
	}
	written := "syntax = \"proto3\";\nmessage M {\n  int32 b = 2;\n  string a = 1; // comment\n}\n"
	relaid := "syntax = \"proto3\"; message M { int32 b = 2; string a = 1; }"
	sorted := "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n  int32 b = 2;\n}\n"
	e.do(t, "PUT", "/config/p", srType, `{"compatibility":"NONE"}`)
	id1 := idOf(e.do(t, "POST", "/subjects/p/versions", srType, protoBody(written)))
	if id := idOf(e.do(t, "POST", "/subjects/p/versions", srType, protoBody(relaid))); id != id1 {
		t.Fatalf("layout and comments only: id %d, want %d", id, id1)
	}
	if a := e.do(t, "POST", "/subjects/p", srType, protoBody(sorted)); a.status != 404 {
		t.Fatalf("lookup of the field-sorted text without normalize: %d %s, want 404 (another schema for Confluent)", a.status, a.body)
	}
	if a := e.do(t, "POST", "/subjects/p?normalize=true", srType, protoBody(written)); a.status != 404 {
		t.Fatalf("normalized lookup of a schema registered in written order: %d %s, want 404", a.status, a.body)
	}
	id2 := idOf(e.do(t, "POST", "/subjects/p/versions", srType, protoBody(sorted)))
	if id2 == id1 {
		t.Fatal("the field-sorted text got the written text's id")
	}
	// normalize=true stores the sorted form: the written text registers as
	// version 2's schema, and a normalized lookup of any order finds it.
	if id := idOf(e.do(t, "POST", "/subjects/p/versions?normalize=true", srType, protoBody(written))); id != id2 {
		t.Fatalf("normalize=true of the written text: id %d, want the sorted one's %d", id, id2)
	}
	var found struct{ Version, ID int }
	a := e.do(t, "POST", "/subjects/p?normalize=true", srType, protoBody(relaid))
	a.decode(t, &found)
	if a.status != 200 || found.Version != 2 || found.ID != id2 {
		t.Fatalf("normalized lookup: %d %s", a.status, a.body)
	}
	if a := e.do(t, "POST", "/subjects/n/versions?normalize=true", srType, protoBody(written)); a.status != 200 {
		t.Fatalf("normalize=true: %d %s", a.status, a.body)
	}
	if raw := e.do(t, "GET", "/subjects/n/versions/1/schema", "", ""); !strings.Contains(string(raw.body), "string a = 1;\n  int32 b = 2;") || strings.Contains(string(raw.body), "comment") {
		t.Fatalf("normalize=true stored %q, want fields by number and no comment", raw.body)
	}

	// Levels: a field added to a oneof is BACKWARD-compatible but not
	// FORWARD (Confluent's ONEOF_FIELD_REMOVED for the old reader); a
	// scalar kind change breaks both.
	base := "syntax = \"proto3\";\nmessage M {\n  oneof o {\n    string a = 1;\n  }\n}\n"
	oneofAdded := "syntax = \"proto3\";\nmessage M {\n  oneof o {\n    string a = 1;\n    int32 b = 2;\n  }\n}\n"
	kindChanged := "syntax = \"proto3\";\nmessage M {\n  oneof o {\n    double a = 1;\n  }\n}\n"
	idOf(e.do(t, "POST", "/subjects/c/versions", srType, protoBody(base)))
	for _, tc := range []struct {
		level, schema string
		ok            bool
		rule          string
	}{
		{"BACKWARD", oneofAdded, true, ""},
		{"FORWARD", oneofAdded, false, "ONEOF_FIELD_REMOVED"},
		{"FULL", oneofAdded, false, "ONEOF_FIELD_REMOVED"},
		{"BACKWARD_TRANSITIVE", kindChanged, false, "FIELD_SCALAR_KIND_CHANGED"},
		{"FORWARD_TRANSITIVE", kindChanged, false, "FIELD_SCALAR_KIND_CHANGED"},
		{"FULL_TRANSITIVE", kindChanged, false, "FIELD_SCALAR_KIND_CHANGED"},
		{"NONE", kindChanged, true, ""},
	} {
		e.do(t, "PUT", "/config/c", srType, `{"compatibility":"`+tc.level+`"}`)
		a := e.do(t, "POST", "/compatibility/subjects/c/versions/latest?verbose=true", srType, protoBody(tc.schema))
		var compat struct {
			IsCompatible bool     `json:"is_compatible"`
			Messages     []string `json:"messages"`
		}
		a.decode(t, &compat)
		if compat.IsCompatible != tc.ok || (tc.rule != "" && (len(compat.Messages) == 0 || !strings.Contains(compat.Messages[0], tc.rule) || !strings.Contains(compat.Messages[0], "#/M"))) {
			t.Errorf("%s: %s", tc.level, a.body)
		}
		if !tc.ok {
			e.do(t, "POST", "/subjects/c/versions", srType, protoBody(tc.schema)).wantError(t, 409, 409)
		}
	}
	// The semantic diff (the admin page's) lists Confluent's differences,
	// each judged both ways, and the verdict per level.
	e.do(t, "PUT", "/config/c", srType, `{"compatibility":"BACKWARD"}`)
	idOf(e.do(t, "POST", "/subjects/c/versions", srType, protoBody(oneofAdded)))
	var diff struct {
		Compatibility map[string]bool
		Changes       []struct {
			Kind, Path, New   string
			Backward, Forward bool
		}
	}
	a = e.do(t, "GET", "/subjects/c/diff?from=1&to=2", "", "")
	a.decode(t, &diff)
	if len(diff.Changes) != 1 || diff.Changes[0].Kind != "ONEOF_FIELD_ADDED" || diff.Changes[0].Path != "#/M/o/2" || diff.Changes[0].New != "b" ||
		!diff.Changes[0].Backward || diff.Changes[0].Forward || !diff.Compatibility["BACKWARD"] || diff.Compatibility["FORWARD"] || diff.Compatibility["FULL"] {
		t.Fatalf("diff 1→2: %s", a.body)
	}
	a = e.do(t, "GET", "/subjects/c/diff?from=2&to=1", "", "")
	var back struct {
		Changes []struct{ Kind, Old, New string }
	}
	a.decode(t, &back)
	if len(back.Changes) != 1 || back.Changes[0].Kind != "ONEOF_FIELD_REMOVED" || back.Changes[0].Old != "b" || back.Changes[0].New != "" {
		t.Fatalf("diff 2→1: %s", a.body)
	}
	a = e.do(t, "POST", "/subjects/c/diff?from=2", srType, protoBody(kindChanged))
	a.decode(t, &diff)
	if len(diff.Changes) < 2 || diff.Compatibility["BACKWARD"] || diff.Compatibility["FORWARD"] || !diff.Compatibility["NONE"] {
		t.Fatalf("diff 2→candidate: %s", a.body)
	}
	e.do(t, "POST", "/subjects/c/versions", srType, protoBody("syntax = \"proto3\"; message M { string a = 1; string a = 2; }")).wantError(t, 422, 42201)
	e.do(t, "POST", "/subjects/c/versions", srType, protoBody("syntax = \"proto3\"; import \"other.proto\"; message M {}")).wantError(t, 422, 42201)
}

// TestRestConsumerSchemaFormats: REST Proxy v2 consumer instances with
// format protobuf, jsonschema and avro decode keys and values of their
// type through the registry; Accept must name the instance's format; a
// record of another type or not in wire format stays base64 and says so.
func TestRestConsumerSchemaFormats(t *testing.T) {
	reg := newTestRegistry(t, nil)
	e := newGroupsEnv(t, func(c *Config) { c.Schemas = reg })
	e.broker.CreateTopic(server.TopicSpec{Name: "mixed", Partitions: 1})
	produce := func(contentType, body string) {
		t.Helper()
		if a := e.do(t, "POST", "/topics/mixed", contentType, body); a.status != 200 {
			t.Fatalf("produce %s: %d %s", contentType, a.status, a.body)
		}
	}
	e.do(t, "PUT", "/config/mixed-value", srType, `{"compatibility":"NONE"}`) // three types, one subject
	produce(typeRestProtobuf, fmt.Sprintf(`{"key_schema":%s,"value_schema":%s,"records":[{"key":{"id":"k1"},"value":{"who":"ann","step":2},"partition":0}]}`,
		mustQuote(keyProto), mustQuote("syntax = \"proto3\";\nmessage Audit { string who = 1; int32 step = 2; }\n")))
	produce(typeRestJSONSchema, fmt.Sprintf(`{"value_schema":%s,"records":[{"value":{"id":1,"item":"pen"},"partition":0}]}`, mustQuote(orderJSONSchema)))
	produce(typeRestAvro, fmt.Sprintf(`{"value_schema":%s,"records":[{"value":{"id":2,"note":"ink"},"partition":0}]}`, mustQuote(orderV2)))
	produce(typeRestBinary, `{"records":[{"value":"cGxhaW4=","partition":0}]}`)

	want := map[string][]string{ // format → the four values as it renders them
		"protobuf":   {`{"who":"ann","step":2}`, "base64", "base64", "base64"},
		"jsonschema": {"base64", `{"id":1,"item":"pen"}`, "base64", "base64"},
		"avro":       {"base64", "base64", "", "base64"},
	}
	accept := map[string]string{"protobuf": typeRestProtobuf, "jsonschema": typeRestJSONSchema, "avro": typeRestAvro}
	for format, values := range want {
		groupName := "g-" + format
		ci := e.newInstance(t, groupName, `{"format":"`+format+`","auto.offset.reset":"earliest"}`)
		e.subscribe(t, groupName, ci.InstanceID, `["mixed"]`)
		e.get(t, "/consumers/"+groupName+"/instances/"+ci.InstanceID+"/records", typeRestBinary, "").wantError(t, http.StatusNotAcceptable, codeFormatMismatch)
		recs := e.readAll(t, groupName, ci.InstanceID, accept[format], 4)
		for i, v := range values {
			switch v {
			case "base64":
				if recs[i].ValueEncoding != encodingBase64 {
					t.Errorf("%s record %d: value %s encoding %q, want base64 (not of this format)", format, i, recs[i].Value, recs[i].ValueEncoding)
				}
			case "":
				if recs[i].ValueEncoding != "" || !strings.Contains(string(recs[i].Value), `"ink"`) {
					t.Errorf("%s record %d: %s %q", format, i, recs[i].Value, recs[i].ValueEncoding)
				}
			default:
				if string(recs[i].Value) != v || recs[i].ValueEncoding != "" {
					t.Errorf("%s record %d: value %s encoding %q, want %s", format, i, recs[i].Value, recs[i].ValueEncoding, v)
				}
			}
		}
		if format == "protobuf" && (string(recs[0].Key) != `{"id":"k1"}` || recs[0].KeyEncoding != "" || string(recs[1].Key) != "null") {
			t.Errorf("protobuf keys: %s %q, %s", recs[0].Key, recs[0].KeyEncoding, recs[1].Key)
		}
	}
	e.do(t, "POST", "/consumers/g", typeRestV2, `{"format":"thrift"}`).wantError(t, http.StatusUnprocessableEntity, codeInvalidConsumer)
}
