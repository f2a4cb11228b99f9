package e2e

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
)

// TestProtobufEndToEnd on the ferry binary: franz-go's sr client registers
// a .proto importing another subject's file; a topic validating keys and
// values takes the Serde's dynamicpb records over Kafka and REST produce's
// over HTTP, refuses bad Protobuf on both listeners (INVALID_RECORD, 422);
// franz-go reads and the Serde decodes both; HTTP reads with
// format=protobuf and a REST Proxy consumer with format protobuf render
// them as Protobuf JSON.
func TestProtobufEndToEnd(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(node.URL))
	if err != nil {
		t.Fatal(err)
	}
	const (
		money = "syntax = \"proto3\";\npackage shop;\nmessage Money { string currency = 1; int64 units = 2; }\n"
		order = "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\nmessage Order { string id = 1; Money total = 2; }\nmessage Note { string text = 1; }\n"
		key   = "syntax = \"proto3\";\npackage shop;\nmessage Key { string id = 1; }\n"
	)
	mustPost(t, node.URL+"/topics", "application/json",
		`{"name":"pb","partitions":1,"configs":{"confluent.value.schema.validation":"true","confluent.key.schema.validation":"true"}}`, 201)
	if _, err := cl.CreateSchema(ctx, "shop-money", sr.Schema{Schema: money, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	value, err := cl.CreateSchema(ctx, "pb-value", sr.Schema{Schema: order, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "shop/money.proto", Subject: "shop-money", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	keySchema, err := cl.CreateSchema(ctx, "pb-key", sr.Schema{Schema: key, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := restCall(t, http.MethodDelete, node.URL+"/subjects/shop-money/versions/1", "", "", ""); status != 422 || !strings.Contains(string(body), "42206") {
		t.Fatalf("deleting the imported version: %d %s", status, body)
	}

	f, err := protobuf.Parse(order, map[string]string{"shop/money.proto": money})
	if err != nil {
		t.Fatal(err)
	}
	kf, err := protobuf.Parse(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	serde := func(f *protobuf.File, id int, name string) (*sr.Serde, protoreflect.MessageDescriptor) {
		md, err := f.MessageByName(name)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := f.MessageIndexes(name)
		if err != nil {
			t.Fatal(err)
		}
		var s sr.Serde
		s.Register(id, &dynamicpb.Message{},
			sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
			sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }),
			sr.Index(idx...))
		return &s, md
	}
	noteSerde, noteDesc := serde(f, value.ID, "shop.Note")
	orderSerde, orderDesc := serde(f, value.ID, "shop.Order")
	keySerde, keyDesc := serde(kf, keySchema.ID, "shop.Key")
	k := dynamicpb.NewMessage(keyDesc)
	k.Set(keyDesc.Fields().ByName("id"), protoreflect.ValueOfString("k1"))
	n := dynamicpb.NewMessage(noteDesc)
	n.Set(noteDesc.Fields().ByName("text"), protoreflect.ValueOfString("fragile"))
	kb, nb := keySerde.MustEncode(k), noteSerde.MustEncode(n)

	kc := franz(t, node, kgo.ProducerLinger(0))
	if err := kc.ProduceSync(ctx, &kgo.Record{Topic: "pb", Key: kb, Value: nb}).FirstErr(); err != nil {
		t.Fatalf("the Serde's record: %v", err)
	}
	notUTF8 := append(append([]byte{}, nb[:7]...), 0x0a, 0x01, 0xff)
	truncated := append(append([]byte{}, nb[:7]...), 0x0a, 0x09, 'x')
	for name, rec := range map[string]*kgo.Record{
		"value string not UTF-8": {Topic: "pb", Key: kb, Value: notUTF8},
		"value truncated":        {Topic: "pb", Key: kb, Value: truncated},
		"key of the value's id":  {Topic: "pb", Key: nb, Value: nb},
	} {
		if err := kc.ProduceSync(ctx, rec).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("%s: %v, want INVALID_RECORD", name, err)
		}
	}
	b64 := base64.StdEncoding.EncodeToString
	res, body, err := post(node.URL+"/kafka/pb", "application/vnd.kafka.binary.v2+json",
		fmt.Sprintf(`{"records":[{"key":%q,"value":%q}]}`, b64(kb), b64(truncated)))
	if err != nil || res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("HTTP binary with a truncated Protobuf value: %v %d %s", err, res.StatusCode, body)
	}
	mustPost(t, node.URL+"/kafka/pb", "application/vnd.kafka.protobuf.v2+json",
		fmt.Sprintf(`{"key_schema_id":%d,"value_schema_id":%d,"records":[{"key":{"id":"k2"},"value":{"id":"o2","total":{"currency":"NOK","units":"40"}}}]}`, keySchema.ID, value.ID), 200)

	recs := consumeFranz(t, node, "pb", 0, 2)
	gotNote := dynamicpb.NewMessage(noteDesc)
	if err := noteSerde.Decode(recs[0].Value, gotNote); err != nil || gotNote.Get(noteDesc.Fields().ByName("text")).String() != "fragile" {
		t.Fatalf("Serde decode of the Kafka record: %v %v", gotNote, err)
	}
	gotOrder := dynamicpb.NewMessage(orderDesc)
	if err := orderSerde.Decode(recs[1].Value, gotOrder); err != nil || gotOrder.Get(orderDesc.Fields().ByName("id")).String() != "o2" {
		t.Fatalf("Serde decode of the HTTP record: %v %v", gotOrder, err)
	}
	gotKey := dynamicpb.NewMessage(keyDesc)
	if err := keySerde.Decode(recs[1].Key, gotKey); err != nil || gotKey.Get(keyDesc.Fields().ByName("id")).String() != "k2" {
		t.Fatalf("Serde decode of the HTTP key: %v %v", gotKey, err)
	}

	status, data := restCall(t, http.MethodGet, node.URL+"/kafka/pb/partitions/0/records?format=protobuf", "", "", "")
	if status != 200 || !strings.Contains(string(data), `"value":{"text":"fragile"}`) || !strings.Contains(string(data), `"units":"40"`) ||
		!strings.Contains(string(data), `"key":{"id":"k1"}`) {
		t.Fatalf("format=protobuf: %d %s", status, data)
	}
	mustRest(t, 200, "POST", node.URL+"/consumers/pbg", `{"name":"c","format":"protobuf","auto.offset.reset":"earliest"}`)
	inst := node.URL + "/consumers/pbg/instances/c"
	mustRest(t, 204, "POST", inst+"/subscription", `{"topics":["pb"]}`)
	var got []struct {
		Key, Value    json.RawMessage
		ValueEncoding string `json:"value_encoding"`
	}
	for deadline := time.Now().Add(30 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		status, data := restCall(t, "GET", inst+"/records?timeout=1000", "", "application/vnd.kafka.protobuf.v2+json", "")
		if status != 200 {
			t.Fatalf("records: %d %s", status, data)
		}
		var batch []struct {
			Key, Value    json.RawMessage
			ValueEncoding string `json:"value_encoding"`
		}
		if err := json.Unmarshal(data, &batch); err != nil {
			t.Fatal(err)
		}
		got = append(got, batch...)
	}
	if len(got) != 2 || string(got[0].Value) != `{"text":"fragile"}` || string(got[1].Key) != `{"id":"k2"}` || got[1].ValueEncoding != "" {
		t.Fatalf("REST consumer with format protobuf: %+v", got)
	}
}
