package protobuf

import (
	"strings"
	"testing"
)

func TestCanonicalIgnoresLayoutCommentsAndOrder(t *testing.T) {
	base := `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "confluent/meta.proto";
option java_package = "com.example.shop";
option go_package = "example.com/shop";

// An order.
message Order {
  string id = 1;
  repeated Line lines = 2 [deprecated = true, (confluent.field_meta).doc = "lines"];
  google.protobuf.Timestamp placed = 3;
  map<string, Line> by_sku = 4;
  oneof payment { string card = 5; string iban = 6; }
  reserved 10, 12 to 14;
  message Line { string sku = 1; int32 qty = 2; }
  enum State { NEW = 0; PAID = 1; SHIPPED = 2; }
}
`
	variants := map[string]string{
		"whitespace and comments": `syntax="proto3";package shop;
/* block */ import "google/protobuf/timestamp.proto"; import "confluent/meta.proto";
option java_package="com.example.shop"; option go_package="example.com/shop";
message Order{string id=1;// trailing
repeated Line lines=2[deprecated=true,(confluent.field_meta).doc="lines"];google.protobuf.Timestamp placed=3;
map<string,Line> by_sku=4;oneof payment{string card=5;string iban=6;}reserved 10,12 to 14;
message Line{string sku=1;int32 qty=2;}enum State{NEW=0;PAID=1;SHIPPED=2;}}`,
		"option, import, field and enum value order": `syntax = "proto3";
package shop;
import "confluent/meta.proto";
import "google/protobuf/timestamp.proto";
option go_package = "example.com/shop";
option java_package = "com.example.shop";
message Order {
  reserved 12 to 14, 10;
  oneof payment { string iban = 6; string card = 5; }
  map<string, .shop.Order.Line> by_sku = 4;
  .google.protobuf.Timestamp placed = 3;
  repeated Order.Line lines = 2 [(confluent.field_meta).doc = "lines", deprecated = true];
  string id = 1;
  enum State { NEW = 0; SHIPPED = 2; PAID = 1; }
  message Line { int32 qty = 2; string sku = 1; }
}`,
	}
	want := mustParse(t, base, nil).Canonical()
	for name, text := range variants {
		if got := mustParse(t, text, nil).Canonical(); got != want {
			t.Errorf("%s: canonical form differs:\n--- got\n%s\n--- want\n%s", name, got, want)
		}
	}
	// The normalized form is itself a schema with the same normalized form.
	if again := mustParse(t, want, nil).Canonical(); again != want {
		t.Errorf("canonical form is not stable when parsed again:\n%s\n---\n%s", again, want)
	}
}

func TestCanonicalKeepsWhatIsSignificant(t *testing.T) {
	base := p3 + "package p; message A { int32 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }"
	same := mustParse(t, base, nil).Canonical()
	changes := map[string]string{
		"field renamed":        p3 + "package p; message A { int32 y = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"field number":         p3 + "package p; message A { int32 x = 3; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"field type":           p3 + "package p; message A { int64 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"field label":          p3 + "package p; message A { optional int32 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"message order":        p3 + "package p; message B {} message A { int32 x = 1; E e = 2; } enum E { Z = 0; O = 1; }",
		"message renamed":      p3 + "package p; message A2 { int32 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"enum value renamed":   p3 + "package p; message A { int32 x = 1; E e = 2; } message B {} enum E { Z = 0; ONE = 1; }",
		"package":              p3 + "package q; message A { int32 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"option":               p3 + "package p; option java_package = \"x\"; message A { int32 x = 1; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"syntax":               p2 + "package p; message A { optional int32 x = 1; optional E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"json name":            p3 + "package p; message A { int32 x = 1 [json_name = \"ex\"]; E e = 2; } message B {} enum E { Z = 0; O = 1; }",
		"field moved in oneof": p3 + "package p; message A { oneof o { int32 x = 1; } E e = 2; } message B {} enum E { Z = 0; O = 1; }",
	}
	for name, text := range changes {
		if got := mustParse(t, text, nil).Canonical(); got == same {
			t.Errorf("%s: canonical form unchanged, but Confluent holds it significant:\n%s", name, got)
		}
	}
}

func TestCanonicalText(t *testing.T) {
	f := mustParse(t, p2+`package m;
message Money {
  reserved 20000, 5000 to 6000;
  reserved "old";
  optional int64 cents = 1 [default = 7];
  map<string, Money> parts = 3;
  extensions 30000 to max;
  oneof kind { string code = 5; int32 num = 4; }
  enum Unit { reserved 2 to 3; NONE = 0; CENTS = 1; }
}`, nil)
	want := `package m;

message Money {
  reserved 5000 to 6000;
  reserved 20000;
  reserved "old";

  optional int64 cents = 1 [default = 7];
  map<string, .m.Money> parts = 3;

  oneof kind {
    int32 num = 4;
    string code = 5;
  }

  extensions 30000 to max;

  enum Unit {
    reserved 2 to 3;
    NONE = 0;
    CENTS = 1;
  }
}
`
	if got := f.Canonical(); got != want {
		t.Errorf("Canonical() =\n%s\nwant\n%s", got, want)
	}
}

// TestCanonicalExoticConstructsAreStable: groups (in oneofs and extends),
// defaults with escapes, repeated and message-valued custom options, maps
// of the message itself and services all survive a parse of their
// normalized form unchanged and compatible.
func TestCanonicalExoticConstructsAreStable(t *testing.T) {
	schemas := []string{
		p2 + `package x; message M { oneof o { group G = 1 { optional int32 a = 1; } string s = 2; } extensions 10 to 20; }
			extend M { optional group E = 10 { optional int32 b = 1; } }`,
		p2 + `message M { optional bytes b = 1 [default = "\001\377a\"b"]; optional string s = 2 [default = "tab\there"];
			optional double d = 3 [default = inf]; optional float f = 4 [default = -1e10]; optional E e = 5 [default = B]; }
			enum E { A = 0; B = 1; }`,
		p3 + `package y; import "google/protobuf/descriptor.proto";
			extend google.protobuf.FieldOptions { repeated string tags = 5001; Rule rule = 5002; }
			message Rule { int32 min = 1; repeated string names = 2; }
			message M { string a = 1 [(tags) = "x", (tags) = "y", (rule) = { min: 3 names: ["a", "b"] }]; }`,
		p3 + `service S { rpc A (M) returns (stream M) { option deprecated = true; } } message M { map<int32, M> m = 1; }`,
	}
	for _, text := range schemas {
		f := mustParse(t, text, nil)
		canonical := f.Canonical()
		again := mustParse(t, canonical, nil)
		if again.Canonical() != canonical {
			t.Errorf("unstable:\n%s\n---\n%s", canonical, again.Canonical())
		}
		if problems := append(Check(f, again), Check(again, f)...); len(problems) > 0 {
			t.Errorf("normalized form incompatible with its schema: %v\n%s", problems, canonical)
		}
		if strings.Contains(canonical, "message E") {
			t.Errorf("a group body is written as a message:\n%s", canonical)
		}
	}
}

// Confluent's identity without normalize=true keeps the written order of
// imports, fields, oneofs and enum values; layout and comments still do
// not count, and text in normalized order reads the same both ways.
func TestWrittenKeepsDeclarationOrder(t *testing.T) {
	parse := func(text string) *File {
		t.Helper()
		f, err := Parse(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	sorted := parse(`syntax = "proto3";
import "google/protobuf/duration.proto";
import "google/protobuf/timestamp.proto";
message M { string a = 1; int32 b = 2; oneof o { string c = 3; string d = 4; } google.protobuf.Timestamp t = 5; google.protobuf.Duration du = 6; }
enum E { X = 0; Y = 1; Z = 2; }`)
	relaid := parse(`syntax = "proto3"; // comments and layout
import "google/protobuf/duration.proto";   import "google/protobuf/timestamp.proto";
message M {
  string a = 1;
  int32 b = 2; oneof o { string c = 3; string d = 4; }
  google.protobuf.Timestamp t = 5; /* x */ google.protobuf.Duration du = 6;
}
enum E { X = 0; Y = 1; Z = 2; }`)
	reordered := map[string]*File{
		"fields": parse(`syntax = "proto3";
import "google/protobuf/duration.proto";
import "google/protobuf/timestamp.proto";
message M { int32 b = 2; string a = 1; oneof o { string c = 3; string d = 4; } google.protobuf.Timestamp t = 5; google.protobuf.Duration du = 6; }
enum E { X = 0; Y = 1; Z = 2; }`),
		"oneof members": parse(`syntax = "proto3";
import "google/protobuf/duration.proto";
import "google/protobuf/timestamp.proto";
message M { string a = 1; int32 b = 2; oneof o { string d = 4; string c = 3; } google.protobuf.Timestamp t = 5; google.protobuf.Duration du = 6; }
enum E { X = 0; Y = 1; Z = 2; }`),
		"imports": parse(`syntax = "proto3";
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message M { string a = 1; int32 b = 2; oneof o { string c = 3; string d = 4; } google.protobuf.Timestamp t = 5; google.protobuf.Duration du = 6; }
enum E { X = 0; Y = 1; Z = 2; }`),
		"enum values": parse(`syntax = "proto3";
import "google/protobuf/duration.proto";
import "google/protobuf/timestamp.proto";
message M { string a = 1; int32 b = 2; oneof o { string c = 3; string d = 4; } google.protobuf.Timestamp t = 5; google.protobuf.Duration du = 6; }
enum E { X = 0; Z = 2; Y = 1; }`),
	}
	if sorted.Written() != sorted.Canonical() {
		t.Fatalf("text in normalized order: Written\n%s\ndiffers from Canonical\n%s", sorted.Written(), sorted.Canonical())
	}
	if relaid.Written() != sorted.Written() {
		t.Fatalf("layout and comments changed the written form:\n%s\nvs\n%s", relaid.Written(), sorted.Written())
	}
	for name, f := range reordered {
		if f.Written() == sorted.Written() {
			t.Errorf("%s reordered: same written form, want different (Confluent keeps the order without normalize)", name)
		}
		if f.Canonical() != sorted.Canonical() {
			t.Errorf("%s reordered: canonical form changed:\n%s", name, f.Canonical())
		}
	}
}
