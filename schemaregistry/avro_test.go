package schemaregistry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	for _, s := range []string{
		`"null"`, `"boolean"`, `"int"`, `"long"`, `"float"`, `"double"`, `"bytes"`, `"string"`,
		`{"type":"string"}`, `["null","string"]`,
		`{"type":"record","name":"R","fields":[]}`,
		`{"type":"error","name":"Oops","fields":[{"name":"why","type":"string"}]}`,
		`{"type":"record","name":"a.b.R","fields":[{"name":"x","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"y","type":"a.b.E"},{"name":"z","type":"E"}]}`,
		`{"type":"record","name":"R","namespace":"n","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":4}},{"name":"g","type":"n.F"}]}`,
		`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"],"default":null}]}`,
		`{"type":"record","name":"R","fields":[{"name":"m","type":{"type":"map","values":{"type":"array","items":"long"}},"default":{"k":[1,2]}}]}`,
		`{"type":"record","name":"R","fields":[{"name":"d","type":"double","default":-1.5e3},{"name":"b","type":"bytes","default":"\u00ff"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"o","type":"int","order":"descending","aliases":["p"]}]}`,
		`{"type":"bytes","logicalType":"decimal","precision":4,"scale":4}`,
		`{"type":"fixed","name":"D","size":16,"logicalType":"decimal","precision":38,"scale":9}`,
		`{"type":"int","logicalType":"date"}`, `{"type":"string","logicalType":"uuid"}`,
		`{"type":"long","logicalType":"some-future-type"}`,
		`{"type":"record","name":"R","fields":[{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]},"default":{"x":1}}]}`,
		// Fixed defaults are strings of exactly size code points 0-255.
		`{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":2},"default":"\u00ff\u0000"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":4},"default":"abcd"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"D","size":2,"logicalType":"decimal","precision":4,"scale":2},"default":"\u0001\u00f4"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"array","items":{"type":"fixed","name":"F","size":1}},"default":["\u00e9"]}]}`,
		`{"type":"record","name":"R","doc":"docs are fine","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"],"default":"B"}}]}`,
	} {
		if _, err := ParseAvro(s, nil); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct{ schema, says string }{
		{``, "not JSON"},
		{`{"type":`, "not JSON"},
		{`"int" "long"`, "trailing"},
		{`"integer"`, "unknown type"},
		{`42`, "not a number"},
		{`{"name":"R"}`, "no \"type\""},
		{`{"type":"record","name":"R"}`, "fields"},
		{`{"type":"record","fields":[]}`, "name"},
		{`{"type":"record","name":"1R","fields":[]}`, "invalid name"},
		{`{"type":"record","name":"int","fields":[]}`, "primitive"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}`, "twice"},
		{`{"type":"record","name":"R","fields":[{"name":"a"}]}`, "no \"type\""},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}`, "default"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":3000000000}]}`, "default"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"],"default":1}]}`, "default"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"fixed","name":"F","size":2},"default":"abc"}]}`, "default"},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"up"}]}`, "order"},
		{`{"type":"record","name":"R","fields":[{"name":"r","type":"R2"}]}`, "unknown type"},
		{`{"type":"record","name":"R","fields":[{"name":"x","type":{"type":"record","name":"R","fields":[]}}]}`, "defined twice"},
		{`{"type":"enum","name":"E","symbols":["A","A"]}`, "twice"},
		{`{"type":"enum","name":"E","symbols":["A","1"]}`, "invalid symbol"},
		{`{"type":"enum","name":"E","symbols":["A"],"default":"B"}`, "default"},
		{`{"type":"fixed","name":"F"}`, "size"},
		{`{"type":"fixed","name":"F","size":-1}`, "size"},
		{`{"type":"array"}`, "items"},
		{`{"type":"map"}`, "values"},
		{`["int","int"]`, "twice"},
		{`["null",["int"]]`, "union"},
		{`[]`, "at least one"},
		{`{"type":"record","name":"R","fields":[{"name":"d","type":"double","default":"NaN"}]}`, "default"},
		{`{"type":"bytes","logicalType":"decimal"}`, "precision"},
		{`{"type":"bytes","logicalType":"decimal","precision":2000000000,"scale":1000000000}`, "from 1 to 1000"},
		{`{"type":"bytes","logicalType":"decimal","precision":2,"scale":3}`, "scale"},
		{`{"type":"fixed","name":"D","size":2,"logicalType":"decimal","precision":10}`, "does not fit"},
		{`{"type":"string","logicalType":"decimal","precision":2}`, "bytes or fixed"},
	} {
		_, err := ParseAvro(tc.schema, nil)
		if err == nil || !errors.Is(err, ErrInvalidAvro) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", tc.schema, err, tc.says)
		}
	}
}

// TestNormalizedIdentity: the same schema however it is spelled has one
// normalized form; schemas that read data differently do not.
func TestNormalizedIdentity(t *testing.T) {
	same := [][]string{
		{`{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":"int"}]}`,
			`{ "fields": [ {"type": "int", "name": "x", "doc": "an x"} ], "name": "a.R", "type": "record", "doc": "a record" }`,
			`{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":{"type":"int"}}],"x-custom":1}`},
		{`{"type":"bytes","logicalType":"decimal","precision":10}`, `{"type":"bytes","logicalType":"decimal","precision":10,"scale":0}`},
		{`{"type":"record","name":"R","fields":[{"name":"x","type":"double","default":1}]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"double","default":1.0}]}`},
	}
	for _, group := range same {
		want := parseOrFail(t, group[0]).Normalized
		for _, s := range group[1:] {
			if got := parseOrFail(t, s).Normalized; got != want {
				t.Errorf("%s\nnormalizes to %s\nwant %s", s, got, want)
			}
		}
	}
	different := [][2]string{
		{`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`},
		{`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, `{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}`},
		{`{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, `"bytes"`},
		{`{"type":"long","logicalType":"timestamp-millis"}`, `{"type":"long","logicalType":"timestamp-micros"}`},
		{`{"type":"record","name":"R","fields":[{"name":"x","type":"int","default":1}]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"int","default":2}]}`},
		{`{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"int","aliases":["y"]}]}`},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["B","A"]}`},
		{`{"type":"record","name":"a.R","fields":[]}`, `{"type":"record","name":"b.R","fields":[]}`},
	}
	for _, pair := range different {
		if parseOrFail(t, pair[0]).Normalized == parseOrFail(t, pair[1]).Normalized {
			t.Errorf("%s and %s normalize alike", pair[0], pair[1])
		}
	}
}

func TestReferencedTypes(t *testing.T) {
	addr := parseOrFail(t, `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}`)
	refs := map[string]*Type{}
	NamedTypes(addr.Root, refs)
	p, err := ParseAvro(`{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"home","type":"Address"},{"name":"work","type":"com.acme.Address"}]}`, refs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Normalized, "city") {
		t.Errorf("identity form inlines a referenced type: %s", p.Normalized)
	}
	if !strings.Contains(p.Expanded, `"city"`) || strings.Count(p.Expanded, `"city"`) != 1 {
		t.Errorf("expanded form must define Address once: %s", p.Expanded)
	}
	if _, err := ParseAvro(`{"type":"record","name":"Customer","fields":[{"name":"home","type":"com.acme.Address"}]}`, nil); err == nil {
		t.Error("a reference to an undefined type parsed")
	}
}

// FuzzParseSchema: parsing never panics, and the normalized form of a
// schema parses again to itself.
func FuzzParseSchema(f *testing.F) {
	for _, tc := range compatCases {
		f.Add(tc.old)
		f.Add(tc.new)
	}
	seeds, _ := filepath.Glob("testdata/*.avsc")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseAvro(s, nil)
		if err != nil {
			return
		}
		again, err := ParseAvro(p.Normalized, nil)
		if err != nil {
			t.Fatalf("normalized form %s of %s does not parse: %v", p.Normalized, s, err)
		}
		if again.Normalized != p.Normalized {
			t.Fatalf("normalizing is not stable:\n%s\n%s", p.Normalized, again.Normalized)
		}
		if got := CheckReadable(p.Root, again.Root, "new", "old"); len(got) != 0 {
			t.Fatalf("a schema cannot read itself: %v", got)
		}
	})
}

// TestFixedDefaultKeptInIdentity: a fixed default goavro cannot take stays
// in the normalized form (it is part of the schema's identity), and the
// codec still encodes values of the field.
func TestFixedDefaultKeptInIdentity(t *testing.T) {
	p := mustParse(t, `{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":2},"default":"\u00ff\u0000"}]}`)
	if !strings.Contains(p.Normalized, `"default":"ÿ\u0000"`) {
		t.Fatalf("normalized form lost the default: %s", p.Normalized)
	}
	bin, err := p.Codec().BinaryFromNative(nil, map[string]any{"f": []byte{0xff, 0}})
	if err != nil || string(bin) != "\xff\x00" {
		t.Fatalf("encode: %q %v", bin, err)
	}
}
