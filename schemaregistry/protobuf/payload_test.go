package protobuf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

const orderSchema = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/any.proto";
message Order {
  string id = 1;
  repeated Line lines = 2;
  google.protobuf.Timestamp placed = 3;
  State state = 4;
  map<string, int64> tags = 5;
  oneof payment { string card = 6; bytes token = 7; }
  google.protobuf.Any extra = 8;
  Node tree = 9;
  message Line { string sku = 1; int32 qty = 2; }
  enum State { NEW = 0; PAID = 1; }
}
message Node { Node child = 1; string label = 2; }
`

// newOrder builds a filled Order as a producer would, without generated code.
func newOrder(t testing.TB, f *File) *dynamicpb.Message {
	t.Helper()
	md, err := f.MessageByName("shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	fields := md.Fields()
	m := dynamicpb.NewMessage(md)
	m.Set(fields.ByName("id"), protoreflect.ValueOfString("o-1"))
	lines := m.Mutable(fields.ByName("lines")).List()
	line := dynamicpb.NewMessage(fields.ByName("lines").Message())
	line.Set(line.Descriptor().Fields().ByName("sku"), protoreflect.ValueOfString("apple"))
	line.Set(line.Descriptor().Fields().ByName("qty"), protoreflect.ValueOfInt32(3))
	lines.Append(protoreflect.ValueOfMessage(line))
	placed := m.Mutable(fields.ByName("placed")).Message()
	placed.Set(placed.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1700000000))
	m.Set(fields.ByName("state"), protoreflect.ValueOfEnum(1))
	m.Mutable(fields.ByName("tags")).Map().Set(protoreflect.ValueOfString("vip").MapKey(), protoreflect.ValueOfInt64(1))
	m.Set(fields.ByName("card"), protoreflect.ValueOfString("4111"))
	return m
}

func TestToJSONRendersTheMessage(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	payload, err := proto.Marshal(newOrder(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate([]int{0}, payload); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	js, err := f.ToJSON([]int{0}, payload, 1<<20)
	if err != nil {
		t.Fatalf("ToJSON: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatalf("ToJSON gave invalid JSON %s: %v", js, err)
	}
	want := map[string]any{
		"id":     "o-1",
		"lines":  []any{map[string]any{"sku": "apple", "qty": float64(3)}},
		"placed": "2023-11-14T22:13:20Z",
		"state":  "PAID",
		"tags":   map[string]any{"vip": "1"},
		"card":   "4111",
	}
	for k, v := range want {
		gj, _ := json.Marshal(got[k])
		wj, _ := json.Marshal(v)
		if string(gj) != string(wj) {
			t.Errorf("%s = %s, want %s (all: %s)", k, gj, wj, js)
		}
	}
}

func TestToJSONEmitsDefaults(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	js, err := f.ToJSON([]int{0}, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Confluent's JsonFormat printer includes default values of fields
	// without presence; messages and oneofs stay out.
	for _, want := range []string{`"id":`, `"state":`, `"lines":`, `"tags":`} {
		if !strings.Contains(strings.ReplaceAll(string(js), " ", ""), want) {
			t.Errorf("ToJSON of an empty Order = %s, missing %s", js, want)
		}
	}
	if strings.Contains(string(js), "placed") || strings.Contains(string(js), "card") {
		t.Errorf("ToJSON of an empty Order = %s, has an unset message or oneof", js)
	}
}

func TestFromJSONRoundTrip(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	in := `{"id":"o-2","lines":[{"sku":"pear","qty":2}],"state":"PAID","token":"AAE=","extra":{"@type":"type.googleapis.com/shop.Order.Line","sku":"x"}}`
	bin, err := f.FromJSON("shop.Order", []byte(in))
	if err != nil {
		t.Fatalf("FromJSON: %v", err)
	}
	js, err := f.ToJSON([]int{0}, bin, 1<<20)
	if err != nil {
		t.Fatalf("ToJSON: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if got["id"] != "o-2" || got["state"] != "PAID" || got["token"] != "AAE=" {
		t.Errorf("round trip = %s", js)
	}
	if extra, _ := got["extra"].(map[string]any); extra["sku"] != "x" {
		t.Errorf("Any did not round trip: %s", js)
	}
	// A nested message by its name, and by its name inside the package.
	if _, err := f.FromJSON("Order.Line", []byte(`{"sku":"a"}`)); err != nil {
		t.Errorf("FromJSON(Order.Line): %v", err)
	}
}

func TestFromJSONRejects(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	cases := map[string]struct{ name, js string }{
		"unknown field":     {"shop.Order", `{"nope":1}`},
		"wrong type":        {"shop.Order", `{"id":5}`},
		"bad enum":          {"shop.Order", `{"state":"LOST"}`},
		"not JSON":          {"shop.Order", `{"id":`},
		"two oneof members": {"shop.Order", `{"card":"1","token":"AA=="}`},
		"unknown message":   {"shop.Nope", `{}`},
	}
	for name, c := range cases {
		if _, err := f.FromJSON(c.name, []byte(c.js)); err == nil {
			t.Errorf("%s: FromJSON(%s) succeeded", name, c.js)
		}
	}
}

func TestValidateRejectsBadPayloads(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	good, _ := proto.Marshal(newOrder(t, f))
	p2f := mustParse(t, p2+"message R { required int32 a = 1; }", nil)
	if err := p2f.Validate(nil, nil); err == nil {
		t.Error("proto2 message without its required field validated")
	}
	cases := map[string][]byte{
		"truncated":            good[:len(good)-1],
		"bad tag":              {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"field number zero":    {0x00, 0x01},
		"length past the end":  {0x0a, 0x7f, 'a'},
		"nested not a message": protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte{0xff}),
		"invalid utf-8":        protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff\xfe"),
		"depth bomb":           nestNodes(MaxPayloadDepth + 5),
		"message count bomb":   manyLines(MaxPayloadMessages + 1),
	}
	for name, b := range cases {
		err := f.Validate([]int{0}, b)
		if err == nil {
			t.Errorf("%s: Validate accepted %d bytes", name, len(b))
		} else if !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: error %v does not wrap ErrBadPayload", name, err)
		}
	}
	if err := f.Validate([]int{7}, good); !errors.Is(err, ErrBadIndexes) {
		t.Errorf("Validate with index 7: %v, want ErrBadIndexes", err)
	}
	// Unknown fields come from newer writers and are kept, as Confluent's
	// deserializer keeps them.
	withUnknown := protowire.AppendVarint(protowire.AppendTag(slicesClone(good), 99, protowire.VarintType), 1)
	if err := f.Validate([]int{0}, withUnknown); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// nestNodes builds Order{tree: Node{child: Node{child: …}}} depth deep.
func nestNodes(depth int) []byte {
	var inner []byte
	for i := 0; i < depth; i++ {
		inner = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), inner)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), inner)
}

// manyLines builds an Order with n empty lines: two bytes each.
func manyLines(n int) []byte { return repeatedEmpty(2, n) }

// repeatedEmpty is n empty messages in field num.
func repeatedEmpty(num protowire.Number, n int) []byte {
	b := make([]byte, 0, 2*n)
	for i := 0; i < n; i++ {
		b = protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), nil)
	}
	return b
}

func TestToJSONRefusesOutputOverBudget(t *testing.T) {
	long := strings.Repeat("V", 1000)
	f := mustParse(t, p3+"message M { repeated E e = 1; } enum E { Z = 0; "+long+" = 1; }", nil)
	// 10,000 packed values of one byte each render as 10,000 long names.
	var packed []byte
	for i := 0; i < 10000; i++ {
		packed = append(packed, 1)
	}
	payload := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), packed)
	if _, err := f.ToJSON(nil, payload, 1<<20); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("ToJSON of %d bytes that render to ~10 MB: err = %v", len(payload), err)
	}
	if js, err := f.ToJSON(nil, payload, 20<<20); err != nil || len(js) < 10_000_000 {
		t.Fatalf("ToJSON within a budget that fits: %d bytes, %v", len(js), err)
	}
}

func TestJSONBoundIsAnUpperBound(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	msg := newOrder(t, f)
	payload, _ := proto.Marshal(msg)
	js, err := f.ToJSON(nil, payload, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	bound, ok, err := jsonBound(msg, 1<<20, f.resolver)
	if err != nil || !ok || bound < len(js) {
		t.Fatalf("bound %d (ok %v) below the real size %d", bound, ok, len(js))
	}
	if _, err := f.ToJSON(nil, payload, len(js)-1); err == nil {
		t.Error("ToJSON fitted a budget smaller than its output")
	}
}

func TestToJSONRefusesWideMessageBomb(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(p3 + "message M { repeated W ws = 1; } message E {} message W {")
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&sb, " E f%d = %d;", i, i)
	}
	sb.WriteString(" }")
	f := mustParse(t, sb.String(), nil)
	// 10,000 empty W: 20 KB on the wire and 20 KB of JSON, but protojson
	// would visit 20 million unset fields.
	payload := repeatedEmpty(1, 10000)
	start := time.Now()
	_, err := f.ToJSON(nil, payload, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "fields") {
		t.Fatalf("ToJSON of a wide-message bomb: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %v", d)
	}
}

// TestValidateWideMessageIsLinear: protocompile's descriptors find a field
// by number with a linear scan; decoding must not depend on that, or a
// payload of a 20,000-field message costs 20,000 times more per tag.
func TestValidateWideMessageIsLinear(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(p3 + "message Wide {")
	for i := 1; i <= 20000; i++ {
		num := i
		if num >= 19000 {
			num += 1000 // 19000-19999 are reserved for the implementation
		}
		fmt.Fprintf(&sb, " int32 f%d = %d;", num, num)
	}
	sb.WriteString(" }")
	wide := mustParse(t, sb.String(), nil)
	narrow := mustParse(t, p3+"message Narrow { int32 f21000 = 21000; }", nil)
	var payload []byte
	for len(payload) < 256<<10 {
		payload = protowire.AppendVarint(protowire.AppendTag(payload, 21000, protowire.VarintType), 1)
	}
	elapsed := func(f *File) time.Duration {
		start := time.Now()
		for i := 0; i < 3; i++ {
			if err := f.Validate(nil, payload); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	n, w := elapsed(narrow), elapsed(wide)
	if w > 50*n+100*time.Millisecond {
		t.Errorf("Validate on a 20,000-field message took %v, on a one-field message %v", w, n)
	}
}
