package protobuf

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// splitConfluent takes a record value apart as a Confluent deserializer
// does: magic byte 0, the schema id (4 bytes, big-endian), the message
// indexes, the message.
func splitConfluent(t *testing.T, b []byte) (id int, indexes []int, payload []byte) {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not Confluent framing: %x", b)
	}
	id = int(binary.BigEndian.Uint32(b[1:5]))
	indexes, n, err := DecodeIndexes(b[5:])
	if err != nil {
		t.Fatalf("DecodeIndexes: %v", err)
	}
	return id, indexes, b[5+n:]
}

// TestSerdeInterop has franz-go's sr Serde frame messages that
// google.golang.org/protobuf serialized (dynamicpb, no generated code), and
// reads them back with DecodeIndexes and ToJSON; then the other way round.
func TestSerdeInterop(t *testing.T) {
	f := mustParse(t, nestedSchema, nil)
	inner, err := f.MessageByName("acme.Second.Other.Deep")
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := f.MessageIndexes("acme.Second.Other.Deep")
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(42, &dynamicpb.Message{},
		sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
		sr.DecodeFn(func(b []byte, v any) error { return proto.Unmarshal(b, v.(*dynamicpb.Message)) }),
		sr.Index(indexes...),
	)
	msg := dynamicpb.NewMessage(inner)
	msg.Set(inner.Fields().ByName("b"), protoreflect.ValueOfBool(true))
	record, err := serde.Encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	id, got, payload := splitConfluent(t, record)
	if id != 42 || len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("sr framed id %d indexes %v, want 42 [1 1 0]", id, got)
	}
	js, err := f.ToJSON(got, payload, 1024)
	if err != nil {
		t.Fatalf("ToJSON: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil || out["b"] != true {
		t.Fatalf("ToJSON = %s, %v; want {\"b\":true}", js, err)
	}

	// ferry's framing of REST-produced JSON, read by sr's deserializer.
	bin, err := f.FromJSON("acme.Second.Other.Deep", []byte(`{"b":true}`))
	if err != nil {
		t.Fatal(err)
	}
	framed := append([]byte{0, 0, 0, 0, 42}, EncodeIndexes(indexes)...)
	framed = append(framed, bin...)
	decoded := dynamicpb.NewMessage(inner)
	if err := serde.Decode(framed, decoded); err != nil {
		t.Fatalf("sr could not decode ferry's framing: %v", err)
	}
	if !decoded.Get(inner.Fields().ByName("b")).Bool() {
		t.Fatal("sr decoded b = false")
	}
}

// TestSerdeFirstMessageShortcut checks the one-byte [0] form that
// Confluent's serializers write for the first message.
func TestSerdeFirstMessageShortcut(t *testing.T) {
	f := mustParse(t, nestedSchema, nil)
	first, _ := f.MessageByName("acme.First")
	var serde sr.Serde
	serde.Register(7, &dynamicpb.Message{},
		sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }),
		sr.Index(0),
	)
	msg := dynamicpb.NewMessage(first)
	msg.Set(first.Fields().ByName("a"), protoreflect.ValueOfInt32(-5))
	record, err := serde.Encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if record[5] != 0 {
		t.Fatalf("index bytes %x, want the single 0", record[5:])
	}
	_, indexes, payload := splitConfluent(t, record)
	js, err := f.ToJSON(indexes, payload, 1024)
	var out map[string]any
	if err != nil || json.Unmarshal(js, &out) != nil || out["a"] != float64(-5) {
		t.Fatalf("ToJSON = %s, %v; want {\"a\":-5}", js, err)
	}
}
