package protobuf

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// explicitEntrySchema is the shape Confluent's serializers register when
// they build the schema from a compiled descriptor: each map field is a
// repeated field of a nested message marked map_entry.
const explicitEntrySchema = `syntax = "proto3";
package p;

message TestMap {
  repeated TestMapEntry test_map = 1 [deprecated = true];
  Other o = 2;

  message TestMapEntry {
    option map_entry = true;
  
    string key = 1;
    Other value = 2;
  }
  message Other {
    int32 x = 1;
  }
}
`

const mapFieldSchema = `syntax = "proto3";
package p;
message TestMap {
  map<string, Other> test_map = 1 [deprecated = true];
  Other o = 2;
  message Other { int32 x = 1; }
}
`

func TestExplicitMapEntriesAreMapFields(t *testing.T) {
	explicit := mustParse(t, explicitEntrySchema, nil)
	declared := mustParse(t, mapFieldSchema, nil)
	if explicit.Canonical() != declared.Canonical() {
		t.Errorf("normalized forms differ:\n%s\n---\n%s", explicit.Canonical(), declared.Canonical())
	}
	if p := append(Check(explicit, declared), Check(declared, explicit)...); len(p) != 0 {
		t.Errorf("explicit map entry and map field are incompatible: %v", p)
	}
	// The registered text counts the entry message; the map field's text
	// does not.
	if got, _ := explicit.MessageIndexes("p.TestMap.Other"); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("explicit text: MessageIndexes(Other) = %v, want [0 1]", got)
	}
	if got, _ := declared.MessageIndexes("p.TestMap.Other"); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("map text: MessageIndexes(Other) = %v, want [0 0]", got)
	}
	if got := explicit.MessageNames(); !slices.Equal(got, []string{"p.TestMap", "p.TestMap.TestMapEntry", "p.TestMap.Other"}) {
		t.Errorf("MessageNames() = %q", got)
	}
	bin, err := explicit.FromJSON("p.TestMap", []byte(`{"testMap":{"a":{"x":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	js, err := explicit.ToJSON(nil, bin, 1024)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	if m, ok := out["testMap"].(map[string]any); !ok || m["a"] == nil {
		t.Errorf("ToJSON = %s, want testMap as a JSON object", js)
	}
	if md, err := explicit.messageAt([]int{0, 1}); err != nil || md.FullName() != "p.TestMap.Other" {
		t.Errorf("messageAt([0 1]) = %v, %v", md, err)
	}
}

func TestExplicitMapEntryInAReference(t *testing.T) {
	f := mustParse(t, p3+`import "maps.proto"; message M { p.TestMap m = 1; }`, map[string]string{"maps.proto": explicitEntrySchema})
	md, _ := f.MessageByName("M")
	if !md.Fields().ByName("m").Message().Fields().ByName("test_map").IsMap() {
		t.Error("the referenced schema's explicit map entry did not become a map field")
	}
}

func TestMalformedMapEntryStillRefused(t *testing.T) {
	bad := strings.Replace(explicitEntrySchema, "Other value = 2;", "Other value = 2;\n    int32 extra = 3;", 1)
	if _, err := Parse(bad, nil); err == nil || !strings.Contains(err.Error(), "map_entry") {
		t.Fatalf("a map entry with a third field: %v", err)
	}
}
