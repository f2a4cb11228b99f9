package protobuf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoregistry"
)

func TestParseErrors(t *testing.T) {
	deep := p3 + strings.Repeat("message M {", MaxDepth+1) + strings.Repeat("}", MaxDepth+1)
	var many strings.Builder
	many.WriteString(p3)
	for i := 0; i <= MaxTypes; i++ {
		fmt.Fprintf(&many, "enum E%d{A%d=0;}", i, i)
	}
	cases := []struct {
		name   string
		text   string
		deps   map[string]string
		expect []string // all must appear in the error
	}{
		{"empty", "", nil, []string{"empty"}},
		{"too large", p3 + "// " + strings.Repeat("x", MaxSchemaBytes), nil, []string{"bytes", "more than"}},
		{"syntax error with position", p3 + "message M {\n  int32 a = ;\n}", nil, []string{"schema.proto:3:", "syntax error"}},
		{"unknown type", p3 + "message M { Missing a = 1; }", nil, []string{"Missing"}},
		{"duplicate field number", p3 + "message M { int32 a = 1; int32 b = 1; }", nil, []string{"1"}},
		{"import without a reference", p3 + "import \"other.proto\"; message M {}", nil, []string{"other.proto", "reference"}},
		{"broken reference", p3 + "import \"dep.proto\"; message M {}", map[string]string{"dep.proto": "message {"}, []string{"dep.proto"}},
		{"nesting too deep", deep, nil, []string{"deeper than"}},
		{"nesting in a reference", p3 + "import \"d.proto\";", map[string]string{"d.proto": deep}, []string{"d.proto", "deeper than"}},
		{"too many types", many.String(), nil, []string{"more than", "messages and enums"}},
		{"editions", "edition = \"2023\"; message M { int32 a = 1; }", nil, []string{"proto2 and proto3"}},
		{"literal that crashes the lexer", "\"\\\xab", nil, []string{"malformed", "schema.proto"}},
		{"unknown syntax", "syntax = \"proto4\"; message M {}", nil, []string{"syntax", "proto2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.text, c.deps)
			if err == nil {
				t.Fatalf("Parse succeeded: %v", f.Canonical())
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not wrap ErrInvalidSchema", err)
			}
			for _, want := range c.expect {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestParseTooManyReferences(t *testing.T) {
	deps := map[string]string{}
	for i := 0; i <= MaxImports; i++ {
		deps[fmt.Sprintf("d%d.proto", i)] = p3
	}
	if _, err := Parse(p3+"message M {}", deps); err == nil || !strings.Contains(err.Error(), "referenced schemas") {
		t.Fatalf("Parse with %d references: err = %v", len(deps), err)
	}
}

func TestParseImportsAcrossDeps(t *testing.T) {
	deps := map[string]string{
		"common/money.proto": p3 + "package common; message Money { string currency = 1; int64 units = 2; }",
		"shop/line.proto": p3 + `package shop; import "common/money.proto";
			message Line { string sku = 1; common.Money price = 2; }`,
	}
	text := p3 + `package shop;
		import "shop/line.proto";
		import "google/protobuf/timestamp.proto";
		import "confluent/meta.proto";
		import "confluent/type/decimal.proto";
		message Order {
			option (confluent.message_meta).doc = "an order";
			repeated Line lines = 1;
			google.protobuf.Timestamp placed = 2;
			confluent.type.Decimal total = 3 [(confluent.field_meta).params = {key: "precision", value: "10"}];
		}`
	f := mustParse(t, text, deps)
	want := []string{"shop/line.proto", "google/protobuf/timestamp.proto", "confluent/meta.proto", "confluent/type/decimal.proto"}
	if got := f.Imports(); !slices.Equal(got, want) {
		t.Errorf("Imports() = %q, want %q", got, want)
	}
	for _, imp := range want[1:] {
		if !IsBuiltinImport(imp) {
			t.Errorf("IsBuiltinImport(%q) = false", imp)
		}
	}
	if IsBuiltinImport("shop/line.proto") || IsBuiltinImport("google/protobuf/nope.proto") {
		t.Error("IsBuiltinImport accepts a path Parse cannot resolve alone")
	}
	md, err := f.MessageByName("shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	price := md.Fields().ByName("lines").Message().Fields().ByName("price").Message()
	if price.FullName() != "common.Money" {
		t.Errorf("lines.price resolves to %s, want common.Money (through two references)", price.FullName())
	}
	if f.Package() != "shop" || f.Syntax() != "proto3" {
		t.Errorf("Package, Syntax = %q, %q", f.Package(), f.Syntax())
	}
}

func TestParseDependencyMayUseTheMainFileName(t *testing.T) {
	deps := map[string]string{"schema.proto": p3 + "package d; message D { int32 x = 1; }"}
	f := mustParse(t, p3+"import \"schema.proto\"; message M { d.D d = 1; }", deps)
	if got := f.Imports(); !slices.Equal(got, []string{"schema.proto"}) {
		t.Errorf("Imports() = %q", got)
	}
}

func TestParseProto2Features(t *testing.T) {
	f := mustParse(t, p2+`package legacy;
		message M {
			required string id = 1;
			optional int32 n = 2 [default = 7];
			optional group G = 3 { optional int32 x = 1; }
			extensions 100 to 199;
		}
		extend M { optional string note = 100; }`, nil)
	if got := f.MessageNames(); !slices.Equal(got, []string{"legacy.M"}) {
		t.Errorf("MessageNames() = %q: a group body is not a message of the text", got)
	}
}

func TestParseReusesWellKnownDescriptors(t *testing.T) {
	f := mustParse(t, orderSchema, nil)
	imps := f.Descriptor().Imports()
	for i := 0; i < imps.Len(); i++ {
		imp := imps.Get(i).FileDescriptor
		global, err := protoregistry.GlobalFiles.FindFileByPath(imp.Path())
		if err != nil || global != imp {
			t.Errorf("%s was rebuilt instead of reused", imp.Path())
		}
	}
}
