package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func parseJSONSchema(t testing.TB, text string, refs ...ParsedReference) *jsonSchema {
	t.Helper()
	s, err := jsonSchemaType{}.Parse(text, refs)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return s.(*jsonSchema)
}

func obj(extra string, props ...string) string {
	s := `{"type":"object","properties":{` + strings.Join(props, ",") + `}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const closed = `"additionalProperties":false`

// jsonCompatCases are (old, new) pairs with the rule each direction
// reports: backward is the first incompatible difference when the new
// schema reads old data ("" when compatible), forward the same for the
// old schema reading new data. Verdicts follow Confluent's
// SchemaDiff.COMPATIBLE_CHANGES and its diff classes.
var jsonCompatCases = []struct {
	name              string
	old, new          string
	backward, forward string // rule@path, or "" for compatible
}{
	{"identical", obj("", `"a":{"type":"string"}`), obj("", `"a":{"type":"string"}`), "", ""},
	{"open model: property added", obj("", `"a":{"type":"string"}`), obj("", `"a":{"type":"string"}`, `"b":{"type":"integer"}`),
		"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL@#/properties/b", ""},
	{"open model: required property added", obj("", `"a":{"type":"string"}`), obj(`"required":["b"]`, `"a":{"type":"string"}`, `"b":{"type":"integer"}`),
		"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL@#/properties/b", ""},
	{"open model: property with empty schema added", obj(""), obj("", `"b":{}`), "", ""},
	{"closed model: optional property added", obj(closed, `"a":{"type":"string"}`), obj(closed, `"a":{"type":"string"}`, `"b":{"type":"integer"}`),
		"", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL@#/properties/b"},
	{"closed model: required property added", obj(closed), obj(closed+`,"required":["b"]`, `"b":{"type":"integer"}`),
		"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL@#/properties/b", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL@#/properties/b"},
	{"closed model: required property with default added", obj(closed), obj(closed+`,"required":["b"]`, `"b":{"type":"integer","default":0}`),
		"", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL@#/properties/b"},
	{"closed model: property false removed", obj(closed, `"a":false`), obj(closed), "", ""},
	{"partially open: added property covered", obj(`"additionalProperties":{"type":"string"}`), obj(`"additionalProperties":{"type":"string"}`, `"b":{"type":"string"}`),
		"", ""},
	{"partially open: added property not covered", obj(`"additionalProperties":{"type":"string"}`), obj(`"additionalProperties":{"type":"string"}`, `"b":{"type":"integer"}`),
		"TYPE_CHANGED@#/properties/b", "TYPE_CHANGED@#/properties/b"},
	{"pattern properties cover", obj(`"patternProperties":{"^x_":{"type":"string"}}`), obj(`"patternProperties":{"^x_":{"type":"string"}}`, `"x_b":{"type":"string"}`),
		"", ""},
	{"required added", obj("", `"a":{"type":"string"}`), obj(`"required":["a"]`, `"a":{"type":"string"}`),
		"REQUIRED_ATTRIBUTE_ADDED@#/required/a", ""},
	{"required with default added", obj("", `"a":{"type":"string"}`), obj(`"required":["a"]`, `"a":{"type":"string","default":"x"}`),
		"", ""},
	{"additionalProperties closed", obj(""), obj(closed), "ADDITIONAL_PROPERTIES_REMOVED@#/additionalProperties", ""},
	{"additionalProperties narrowed to a schema", obj(""), obj(`"additionalProperties":{"type":"string"}`),
		"ADDITIONAL_PROPERTIES_NARROWED@#/additionalProperties", ""},
	{"integer widened to number", obj("", `"n":{"type":"integer"}`), obj("", `"n":{"type":"number"}`),
		"", "TYPE_NARROWED@#/properties/n"},
	{"string to integer", obj("", `"n":{"type":"string"}`), obj("", `"n":{"type":"integer"}`),
		"TYPE_CHANGED@#/properties/n", "TYPE_CHANGED@#/properties/n"},
	{"type made nullable", obj("", `"n":{"type":"string"}`), obj("", `"n":{"type":["string","null"]}`),
		"", "TYPE_CHANGED@#/properties/n"},
	{"enum extended", `{"enum":["a","b"]}`, `{"enum":["a","b","c"]}`, "", "ENUM_ARRAY_NARROWED@#/enum"},
	{"enum changed", `{"enum":["a","b"]}`, `{"enum":["a","c"]}`, "ENUM_ARRAY_CHANGED@#/enum", "ENUM_ARRAY_CHANGED@#/enum"},
	{"const changed", `{"const":1}`, `{"const":2}`, "ENUM_ARRAY_CHANGED@#/const", "ENUM_ARRAY_CHANGED@#/const"},
	{"oneOf branch added", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`,
		"", "SUM_TYPE_NARROWED@#/"},
	{"anyOf branch changed", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"},{"type":"boolean"}]}`,
		"COMBINED_TYPE_SUBSCHEMAS_CHANGED@#/", "COMBINED_TYPE_SUBSCHEMAS_CHANGED@#/"},
	{"allOf to anyOf", `{"allOf":[{"type":"string"},{"maxLength":3}]}`, `{"anyOf":[{"type":"string"},{"maxLength":3}]}`,
		"", "COMBINED_TYPE_CHANGED@#/"},
	{"allOf member added", `{"allOf":[{"type":"string"}]}`, `{"allOf":[{"type":"string"},{"maxLength":3}]}`,
		"PRODUCT_TYPE_EXTENDED@#/", ""},
	{"plain to oneOf including it", `{"type":"string"}`, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`,
		"", "TYPE_CHANGED@#/"},
	{"maxLength decreased", `{"type":"string","maxLength":10}`, `{"type":"string","maxLength":5}`,
		"MAX_LENGTH_DECREASED@#/maxLength", ""},
	{"minLength added", `{"type":"string"}`, `{"type":"string","minLength":2}`, "MIN_LENGTH_ADDED@#/minLength", ""},
	{"pattern changed", `{"type":"string","pattern":"^a"}`, `{"type":"string","pattern":"^b"}`,
		"PATTERN_CHANGED@#/pattern", "PATTERN_CHANGED@#/pattern"},
	{"maximum added", `{"type":"number"}`, `{"type":"number","maximum":10}`, "MAXIMUM_ADDED@#/maximum", ""},
	{"minimum lowered", `{"type":"number","minimum":5}`, `{"type":"number","minimum":1}`, "", "MINIMUM_INCREASED@#/minimum"},
	{"multipleOf reduced", `{"type":"number","multipleOf":4}`, `{"type":"number","multipleOf":2}`, "", "MULTIPLE_OF_EXPANDED@#/multipleOf"},
	{"array items type changed", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"integer"}}`,
		"TYPE_CHANGED@#/items", "TYPE_CHANGED@#/items"},
	{"maxItems removed", `{"type":"array","maxItems":3}`, `{"type":"array"}`, "", "MAX_ITEMS_ADDED@#/maxItems"},
	{"uniqueItems added", `{"type":"array"}`, `{"type":"array","uniqueItems":true}`, "UNIQUE_ITEMS_ADDED@#/uniqueItems", ""},
	{"tuple item added to closed", `{"type":"array","items":[{"type":"string"}],"additionalItems":false}`,
		`{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`,
		"", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL@#/items/1"},
	{"description and title changed", `{"type":"string","title":"a","description":"x"}`, `{"type":"string","title":"b","description":"y"}`, "", ""},
	{"anything to empty schema", `{"type":"string"}`, `{}`, "", "TYPE_CHANGED@#/"},
	{"local $ref followed", `{"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`,
		`{"definitions":{"s":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/s"}}}`,
		"TYPE_CHANGED@#/properties/a", "TYPE_CHANGED@#/properties/a"},
	{"recursive schema", `{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"v":{"type":"number"},"next":{"$ref":"#"}}}`, "", "TYPE_NARROWED@#/properties/v"},
	{"type with enum: enum dropped", `{"type":"string","enum":["red"]}`, `{"type":"string"}`, "", "TYPE_CHANGED@#/"},
	{"allOf member dropped", `{"allOf":[{"type":"string"},{"maxLength":3}]}`, `{"type":"string"}`, "", "TYPE_CHANGED@#/"},
	{"unevaluatedProperties false added", obj(""), obj(`"unevaluatedProperties":false`),
		"UNEVALUATED_PROPERTIES_REMOVED@#/unevaluatedProperties", ""},
	{"unevaluatedProperties schema covers an added property", obj(`"unevaluatedProperties":{"type":"string"}`),
		obj(`"unevaluatedProperties":{"type":"string"}`, `"b":{"type":"string"}`), "", ""},
	{"minContains increased", `{"type":"array","contains":{"type":"string"},"minContains":1}`, `{"type":"array","contains":{"type":"string"},"minContains":2}`,
		"MIN_CONTAINS_INCREASED@#/minContains", ""},
	{"not narrowed", `{"not":{"type":"string"}}`, `{"not":{"type":"string","maxLength":3}}`, "", "NOT_TYPE_EXTENDED@#/not"},
}

func firstIncompatible(reader, writer *jsonSchema) string {
	for _, d := range compareJSONSchemas(writer.model, reader.model) {
		if !d.compatible() {
			return string(d.kind) + "@" + d.path
		}
	}
	return ""
}

func TestJSONSchemaCompatibilityTable(t *testing.T) {
	for _, tc := range jsonCompatCases {
		o, n := parseJSONSchema(t, tc.old), parseJSONSchema(t, tc.new)
		if got := firstIncompatible(n, o); got != tc.backward {
			t.Errorf("%s: backward (new reads old) = %q, want %q", tc.name, got, tc.backward)
		}
		if got := firstIncompatible(o, n); got != tc.forward {
			t.Errorf("%s: forward (old reads new) = %q, want %q", tc.name, got, tc.forward)
		}
		// The levels follow from the two directions.
		b, f := tc.backward == "", tc.forward == ""
		for level, want := range map[string]bool{None: true, Backward: b, BackwardTransitive: b, Forward: f,
			ForwardTransitive: f, Full: b && f, FullTransitive: b && f} {
			if got := len(n.Incompatibilities(level, o)) == 0; level != None && got != want {
				t.Errorf("%s: %s compatible = %v, want %v", tc.name, level, got, want)
			}
		}
	}
}

func TestJSONSchemaVerboseMessage(t *testing.T) {
	o := parseJSONSchema(t, obj(closed, `"a":{"type":"string"}`))
	n := parseJSONSchema(t, obj(closed))
	msgs := n.Incompatibilities(Backward, o)
	if len(msgs) != 1 {
		t.Fatalf("messages: %q", msgs)
	}
	want := `{errorType:"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", description:"The new schema has a closed content model and is missing a property or item present at path '#/properties/a' in the old schema"}`
	if msgs[0] != want {
		t.Fatalf("message\n got %s\nwant %s", msgs[0], want)
	}
}

func TestJSONSchemaParseRefusesBadInput(t *testing.T) {
	deep := strings.Repeat(`{"items":`, MaxJSONSchemaDepth+1) + `{}` + strings.Repeat(`}`, MaxJSONSchemaDepth+1)
	many := `{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, maxCombinedBranches+1), ",") + `]}`
	cases := map[string]string{
		"not JSON":           `{"type":`,
		"not an object":      `[1,2]`,
		"unknown type":       `{"type":"strin"}`,
		"bad regex":          `{"type":"string","pattern":"(("}`,
		"too deep":           deep,
		"too many branches":  many,
		"external ref":       `{"$ref":"https://example.com/x.json"}`,
		"file ref":           `{"$ref":"file:///etc/passwd"}`,
		"dangling local ref": `{"$ref":"#/definitions/nope"}`,
		"trailing data":      `{} {}`,
	}
	for name, text := range cases {
		if _, err := (jsonSchemaType{}).Parse(text, nil); err == nil || !errors.Is(err, ErrInvalidJSONSchema) {
			t.Errorf("%s: parse = %v, want ErrInvalidJSONSchema", name, err)
		}
	}
}

func TestJSONSchemaPayloads(t *testing.T) {
	s := parseJSONSchema(t, obj(`"required":["id"]`, `"id":{"type":"integer"}`, `"name":{"type":"string"}`))
	if err := s.ValidatePayload([]byte(`{"id":1,"name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"name":"x"}`, `{"id":"1"}`, `{"id":1.5}`, `not json`, `{"id":1} x`,
		strings.Repeat("[", MaxJSONPayloadDepth+1) + strings.Repeat("]", MaxJSONPayloadDepth+1)} {
		if err := s.ValidatePayload([]byte(bad)); err == nil {
			t.Errorf("payload %.40s accepted", bad)
		}
	}
	err := s.ValidatePayload([]byte(`{"id":"1"}`))
	if err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("error does not name the location: %v", err)
	}
	enc, err := s.EncodeJSON([]byte("{ \"id\": 7 }"))
	if err != nil || string(enc) != `{"id":7}` {
		t.Fatalf("encode: %s %v", enc, err)
	}
	if out, err := s.RenderJSON(enc, 5); err == nil {
		t.Fatalf("render past the budget: %s", out)
	}
}

// TestJSONSchemaRegistry registers JSON schemas through the registry: the
// type is kept and answered, references across subjects resolve, a
// referenced version cannot be deleted, normalize stores the canonical
// form, and compatibility is checked with JSON rules.
func TestJSONSchemaRegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, _ := OpenEmbedded(dir)
	r, _ := New(store, Config{})
	addr := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	addrID, err := r.Register(ctx, "address", SchemaRequest{Schema: addr, SchemaType: "json"})
	if err != nil {
		t.Fatal(err)
	}
	person := `{"type":"object","properties":{"name":{"type":"string"},"home":{"$ref":"address.json"}}}`
	ref := []Reference{{Name: "address.json", Subject: "address", Version: 1}}
	pid, err := r.Register(ctx, "person", SchemaRequest{Schema: person, SchemaType: "JSON", References: ref})
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.GetVersion(ctx, "person", Latest, false)
	if err != nil || info.SchemaType != "JSON" || info.ID != pid || len(info.References) != 1 {
		t.Fatalf("get version: %+v %v", info, err)
	}
	if ids, err := r.ReferencedBy(ctx, "address", 1); err != nil || len(ids) != 1 || ids[0] != pid {
		t.Fatalf("referencedby: %v %v", ids, err)
	}
	if _, err := r.DeleteVersion(ctx, "address", 1, false); !errors.Is(err, ErrReferenceExists) {
		t.Fatalf("deleting a referenced version: %v", err)
	}
	// The referenced schema applies to payloads.
	parsed, _ := r.ParsedSchemaByID(ctx, pid)
	if err := parsed.ValidatePayload([]byte(`{"name":"a","home":{"city":"x"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := parsed.ValidatePayload([]byte(`{"name":"a","home":{}}`)); err == nil {
		t.Fatal("a payload missing the referenced schema's required property passed")
	}
	// Same schema, other spelling: same id; normalize stores the canonical form.
	again, err := r.Register(ctx, "address", SchemaRequest{Schema: "{ \"required\":[\"city\"], \"properties\":{\"city\":{\"type\":\"string\"}}, \"type\":\"object\" }", SchemaType: "JSON", Normalize: true})
	if err != nil || again != addrID {
		t.Fatalf("re-register: %d %v, want %d", again, err, addrID)
	}
	// An Avro schema with the same text is another schema.
	if _, err := r.Register(ctx, "address", SchemaRequest{Schema: addr}); err == nil {
		t.Fatal("an Avro registration of a JSON text was accepted")
	}
	// BACKWARD (the default): adding a required property to an open model breaks.
	_, err = r.Register(ctx, "address", SchemaRequest{Schema: `{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}`, SchemaType: "JSON"})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL") || !strings.Contains(err.Error(), "#/properties/zip") {
		t.Fatalf("incompatible registration: %v", err)
	}
	// A JSON schema may not reference an Avro one.
	if _, err := r.Register(ctx, "avro", SchemaRequest{Schema: `"string"`}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Register(ctx, "mixed", SchemaRequest{Schema: `{"$ref":"a.json"}`, SchemaType: "JSON", References: []Reference{{Name: "a.json", Subject: "avro", Version: 1}}})
	if !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("JSON referencing Avro: %v", err)
	}
	if _, err := r.Register(ctx, "p", SchemaRequest{Schema: `syntax = "proto3"; message M { int32 a = 1; }`, SchemaType: "PROTOBUF"}); err != nil {
		t.Fatalf("PROTOBUF: %v", err)
	}
	if _, err := r.Register(ctx, "p", SchemaRequest{Schema: `syntax = "proto3"; message {`, SchemaType: "PROTOBUF"}); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("a broken .proto: %v", err)
	}
	r.Close()

	// Reopened, the journal gives back the type.
	store, err = OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, _ = New(store, Config{})
	defer r.Close()
	st, err := r.SchemaByID(ctx, pid)
	if err != nil || st.Type != "JSON" {
		t.Fatalf("after reopen: %+v %v", st, err)
	}
	list, err := r.ListSchemas(ctx, ListSchemasOptions{})
	if err != nil || len(list) != 4 {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func FuzzParseJSONSchema(f *testing.F) {
	for _, tc := range jsonCompatCases {
		f.Add(tc.old)
	}
	f.Add(`{"$ref":"#"}`)
	f.Add(`{"properties":{"a":{"$ref":"#/properties/a"}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := jsonSchemaType{}.Parse(text, nil)
		if err != nil {
			return
		}
		// Whatever parses can be compared with itself and validated against.
		js := s.(*jsonSchema)
		if msgs := js.Incompatibilities(FullTransitive, js); len(msgs) != 0 {
			t.Fatalf("a schema is incompatible with itself: %q", msgs)
		}
		_ = js.ValidatePayload([]byte(text))
	})
}

// FuzzJSONSchemaPayload feeds arbitrary payloads to the broker's check and
// the read path's rendering: errors, never a panic or a runaway.
func FuzzJSONSchemaPayload(f *testing.F) {
	s := parseJSONSchema(f, `{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"}},"next":{"$ref":"#"}},"required":["id"]}`)
	for _, seed := range []string{`{"id":1}`, `{"id":1,"tags":["a"],"next":{"id":2}}`, `[`, `{"id":1e999}`, `"x"`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		err := s.ValidatePayload(payload)
		out, rerr := s.RenderJSON(payload, 1<<20)
		if err == nil && rerr != nil {
			t.Fatalf("a valid payload does not render: %v", rerr)
		}
		if rerr == nil && !json.Valid(out) {
			t.Fatalf("rendered %q is not JSON", out)
		}
	})
}

// TestJSONSchemaReferenceLocations: a reference resolves by its name
// against the referencing schema's location (its absolute $id, if any), or
// by the referenced schema's own absolute $id, transitively.
func TestJSONSchemaReferenceLocations(t *testing.T) {
	city := parseJSONSchema(t, `{"$id":"https://example.com/geo/city.json","type":"string","minLength":2}`)
	addr := parseJSONSchema(t, `{"type":"object","properties":{"city":{"$ref":"city.json"}},"required":["city"]}`,
		ParsedReference{Reference: Reference{Name: "city.json", Subject: "city", Version: 1}, Text: `…`, Schema: city})
	refs := []ParsedReference{{Reference: Reference{Name: "address.json", Subject: "address", Version: 1}, Schema: addr}}
	for name, text := range map[string]string{
		"relative name":        `{"properties":{"home":{"$ref":"address.json"}}}`,
		"name under an $id":    `{"$id":"https://example.com/people/person.json","properties":{"home":{"$ref":"address.json"}}}`,
		"name with a fragment": `{"properties":{"home":{"$ref":"address.json#/properties/city"}}}`,
	} {
		s, err := jsonSchemaType{}.Parse(text, refs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bad := `{"home":{"city":"x"}}`
		if name == "name with a fragment" {
			bad = `{"home":"x"}`
		}
		if err := s.ValidatePayload([]byte(bad)); err == nil {
			t.Errorf("%s: %s passed; the transitive reference's minLength was not applied", name, bad)
		}
	}
	// The referenced schema's own $id names it too.
	byID := []ParsedReference{{Reference: Reference{Name: "city", Subject: "city", Version: 1}, Schema: city}}
	s, err := jsonSchemaType{}.Parse(`{"$ref":"https://example.com/geo/city.json"}`, byID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidatePayload([]byte(`"x"`)); err == nil {
		t.Error("a reference by $id was not applied")
	}
	// A change inside a referenced schema is seen by the compatibility check.
	city2 := parseJSONSchema(t, `{"$id":"https://example.com/geo/city.json","type":"string","minLength":3}`)
	addr2 := parseJSONSchema(t, `{"type":"object","properties":{"city":{"$ref":"city.json"}},"required":["city"]}`,
		ParsedReference{Reference: Reference{Name: "city.json", Subject: "city", Version: 2}, Schema: city2})
	if got := firstIncompatible(addr2, addr); got != "MIN_LENGTH_INCREASED@#/properties/city/minLength" {
		t.Errorf("a narrowed referenced schema: %q", got)
	}
}

// TestJSONSchemaDiff: the registry's semantic diff lists JSON Schema's
// differences with a verdict per direction and level.
func TestJSONSchemaDiff(t *testing.T) {
	ctx := context.Background()
	store, _ := OpenEmbedded(t.TempDir())
	r, _ := New(store, Config{})
	defer r.Close()
	if _, err := r.Register(ctx, "s", SchemaRequest{SchemaType: "JSON", Schema: obj("", `"n":{"type":"integer"}`)}); err != nil {
		t.Fatal(err)
	}
	cand := SchemaRequest{SchemaType: "JSON", Schema: obj(`"required":["n"]`, `"n":{"type":"number"}`)}
	res, err := r.Diff(ctx, "s", Latest, 0, &cand)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]Change{}
	for _, c := range res.Changes {
		kinds[c.Kind+" "+c.Path] = c
	}
	widened, ok1 := kinds["TYPE_EXTENDED #/properties/n"]
	required, ok2 := kinds["REQUIRED_ATTRIBUTE_ADDED #/required/n"]
	if !ok1 || !ok2 || !widened.Backward || widened.Forward || required.Backward {
		t.Fatalf("changes: %+v", res.Changes)
	}
	if res.Compatibility[Backward] || res.Compatibility[Forward] || !res.Compatibility[None] {
		t.Fatalf("verdicts: %v", res.Compatibility)
	}
}
