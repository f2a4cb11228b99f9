package schemaregistry

import (
	"strings"
	"testing"
)

func TestValidateJSON(t *testing.T) {
	schema := parseOrFail(t, `{"type":"record","name":"R","namespace":"n","fields":[
		{"name":"id","type":"long"},
		{"name":"tags","type":{"type":"array","items":"string"},"default":[]},
		{"name":"attrs","type":{"type":"map","values":"int"},"default":{}},
		{"name":"kind","type":{"type":"enum","name":"K","symbols":["A","B"]},"default":"A"},
		{"name":"opt","type":["null","string","n.K"],"default":null},
		{"name":"raw","type":"bytes","default":""},
		{"name":"fx","type":{"type":"fixed","name":"F","size":2},"default":"ab"},
		{"name":"small","type":"int","default":0},
		{"name":"ratio","type":"double","default":0}]}`)
	good := []string{
		`{"id":1}`,
		`{"id":1,"tags":["a"],"attrs":{"x":1},"kind":"B","opt":{"string":"s"},"raw":"\u00ff","fx":"zz","small":-5,"ratio":1.5}`,
		`{"id":1,"opt":{"n.K":"A"}}`,
		`{"id":1,"opt":null}`,
	}
	for _, g := range good {
		if err := ValidateJSON(schema.Root, []byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	bad := []struct{ value, says string }{
		{`{}`, `/id: field "id"`},
		{`{"id":"1"}`, "/id: expected long"},
		{`{"id":1.5}`, "/id: expected long"},
		{`{"id":1,"tags":["a",2]}`, "/tags/1: expected string"},
		{`{"id":1,"attrs":{"x":"y"}}`, "/attrs/x: expected int"},
		{`{"id":1,"kind":"C"}`, "/kind: expected one of the symbols [A, B]"},
		{`{"id":1,"opt":"bare"}`, "/opt: a value of union"},
		{`{"id":1,"opt":{"int":1}}`, `has no branch "int"`},
		{`{"id":1,"opt":{"n.K":"Z"}}`, "/opt/n.K: expected one of the symbols"},
		{`{"id":1,"raw":"\u0100"}`, "/raw: expected bytes"},
		{`{"id":1,"fx":"abc"}`, "/fx: expected fixed n.F"},
		{`{"id":1,"small":3000000000}`, "/small: expected int"},
		{`{"id":1,"ratio":"x"}`, "/ratio: expected double"},
		{`{"id":1,"extra":true}`, `/extra: record n.R has no field "extra"`},
		{`[1]`, "/: expected record n.R"},
		{`{`, "not JSON"},
	}
	for _, b := range bad {
		err := ValidateJSON(schema.Root, []byte(b.value))
		if err == nil || !strings.Contains(err.Error(), b.says) {
			t.Errorf("%s: %v, want an error saying %q", b.value, err, b.says)
		}
	}
}

// FuzzValidateJSON: validating and then encoding an Avro JSON value never
// panics, and a value ValidateJSON accepts encodes and decodes back.
func FuzzValidateJSON(f *testing.F) {
	schemas := []*ParsedSchema{}
	for _, tc := range compatCases {
		p, err := ParseAvro(tc.new, nil)
		if err == nil {
			schemas = append(schemas, p)
		}
	}
	for i, v := range []string{`1`, `"x"`, `null`, `{"a":1}`, `{"a":1,"b":""}`, `{"int":3}`, `["A"]`, `{"v":1,"next":{"Node":{"v":2,"next":null}}}`, `"\u00ff\u0001"`} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		p := schemas[int(which)%len(schemas)]
		if err := ValidateJSON(p.Root, []byte(value)); err != nil {
			return
		}
		native, _, err := p.Codec().NativeFromTextual([]byte(value))
		if err != nil {
			return // goavro is stricter in places (e.g. union names of logical types)
		}
		bin, err := p.Codec().BinaryFromNative(nil, native)
		if err != nil {
			t.Fatalf("schema %s: %s validated and decoded but does not encode: %v", p.Normalized, value, err)
		}
		if _, _, err := p.Codec().NativeFromBinary(bin); err != nil {
			t.Fatalf("schema %s: %s does not decode back: %v", p.Normalized, value, err)
		}
	})
}
