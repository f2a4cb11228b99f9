package schemaregistry

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// zz appends Avro's zig-zag varint encoding of v.
func zz(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func mustParse(t testing.TB, schema string) *ParsedSchema {
	t.Helper()
	p, err := ParseAvro(schema, nil)
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return p
}

const nodeSchema = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`

// nodeChain encodes a Node list of n elements.
func nodeChain(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = zz(b, 1) // v
		b = zz(b, 1) // next: the Node branch
	}
	b = zz(b, 1)
	return append(b, 0) // last v, next: null
}

// TestBoundedAvroRefusesAttacks: each value declares far more than it
// holds; the walker refuses it without allocating what it declares.
func TestBoundedAvroRefusesAttacks(t *testing.T) {
	huge := int64(math.MaxInt32)
	for _, tc := range []struct {
		name, schema string
		data         []byte
		says         string
	}{
		{"array block count 2^31-1", `{"type":"array","items":"int"}`, zz(nil, huge), "exceeds the 0 bytes left"},
		{"negative array block count", `{"type":"array","items":"int"}`, zz(zz(nil, -huge), 0), "exceeds the 0 bytes left"},
		{"map block count 2^31-1", `{"type":"map","values":"int"}`, zz(nil, huge), "exceeds the 0 bytes left"},
		{"string length 2^31-1", `"string"`, zz(nil, huge), "length 2147483647 with 0 bytes left"},
		{"bytes length 2^62", `"bytes"`, zz(nil, 1<<62), "with 0 bytes left"},
		{"negative bytes length", `"bytes"`, zz(nil, -5), "length -5"},
		{"block count beyond goavro's", `{"type":"array","items":"null"}`, zz(nil, 1<<40), "exceeds 2147483647"},
		{"array of 2^31-1 nulls", `{"type":"array","items":"null"}`, zz(nil, huge), "more than"},
		{"array of 2^31-1 empty records", `{"type":"array","items":{"type":"record","name":"E","fields":[]}}`, zz(nil, huge), "more than"},
		{"negative count of nulls", `{"type":"array","items":"null"}`, zz(zz(nil, -huge), 0), "more than"},
		{"block size lies", `{"type":"array","items":"int"}`, append(zz(zz(nil, -1), 2), 2, 0), "block size 2 but its items take 1"},
		{"block size beyond the data", `{"type":"array","items":"int"}`, zz(zz(nil, -1), 100), "block size 100"},
		{"MinInt64 block count", `{"type":"array","items":"int"}`, zz(nil, math.MinInt64), "block count"},
		{"deep recursion", nodeSchema, nodeChain(MaxAvroDepth + 1), "deeper than 100"},
		{"union index out of range", `["null","int"]`, zz(nil, 2), "union index 2"},
		{"enum index out of range", `{"type":"enum","name":"E","symbols":["A"]}`, zz(nil, 1), "enum index 1"},
		{"boolean not 0 or 1", `"boolean"`, []byte{2}, "boolean byte 2"},
		{"int beyond 32 bits", `"int"`, zz(nil, 1<<33), "32 bits"},
		{"varint beyond 64 bits", `"long"`, bytes.Repeat([]byte{0xff}, 11), "64 bits"},
		{"duplicate map key", `{"type":"map","values":"null"}`, append(zz(nil, 2), 2, 'k', 2, 'k', 0), "twice"},
		{"trailing bytes", `"int"`, []byte{2, 2}, "1 bytes left over"},
		{"fixed cut short", `{"type":"fixed","name":"F","size":16}`, []byte{1, 2}, "needs 16 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.schema)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := p.DecodeBinary(tc.data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrAvroValue) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an ErrAvroValue saying %q", err, tc.says)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("refusing a %d-byte value allocated %d bytes", len(tc.data), grew)
			}
			if _, err := p.RenderBinary(tc.data, 1<<20); !errors.Is(err, ErrAvroValue) {
				t.Errorf("RenderBinary: %v, want an ErrAvroValue", err)
			}
		})
	}
}

// TestBoundedAvroAcceptsValid: values within the limits decode as goavro
// decodes them, negative block counts included.
func TestBoundedAvroAcceptsValid(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		data         []byte
		text         string
	}{
		{"array in one block", `{"type":"array","items":"int"}`, []byte{4, 2, 4, 0}, `[1,2]`},
		{"negative count with size", `{"type":"array","items":"int"}`, append(zz(zz(nil, -2), 2), 2, 4, 0), `[1,2]`},
		{"two blocks", `{"type":"array","items":"int"}`, []byte{2, 2, 2, 4, 0}, `[1,2]`},
		{"map", `{"type":"map","values":"int"}`, []byte{2, 2, 'k', 6, 0}, `{"k":3}`},
		{"chain at the depth limit", nodeSchema, nodeChain(MaxAvroDepth - 1), ""},
		{"1000 nulls", `{"type":"array","items":"null"}`, append(zz(nil, 1000), 0), ""},
		{"union", `["null","string"]`, []byte{2, 2, 'x'}, `{"string":"x"}`},
		{"enum", `{"type":"enum","name":"E","symbols":["A","B"]}`, []byte{2}, `"B"`},
		{"fixed", `{"type":"fixed","name":"F","size":2}`, []byte{'a', 'b'}, `"ab"`},
		{"decimal", `{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}`, []byte{2, 0x7f}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.schema)
			text, err := p.RenderBinary(tc.data, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if tc.text != "" && string(text) != tc.text {
				t.Errorf("rendered %s, want %s", text, tc.text)
			}
		})
	}
}

// TestBoundedAvroTextLimit: a value whose rendering may exceed the limit
// is refused before goavro renders it.
func TestBoundedAvroTextLimit(t *testing.T) {
	p := mustParse(t, `{"type":"array","items":"string"}`)
	data := zz(nil, 100)
	for i := 0; i < 100; i++ {
		data = append(zz(data, 3), "abc"...)
	}
	data = append(data, 0)
	if _, err := p.RenderBinary(data, 1<<20); err != nil {
		t.Fatalf("within the limit: %v", err)
	}
	if _, err := p.RenderBinary(data, 500); err == nil || !strings.Contains(err.Error(), "may exceed 500 bytes") {
		t.Fatalf("got %v, want a refusal for the rendering's size", err)
	}
}

// fuzzSchemas cover each kind, zero-width items, recursion and logical types.
var fuzzSchemas = []string{
	`{"type":"array","items":"int"}`,
	`{"type":"map","values":"string"}`,
	`{"type":"array","items":"null"}`,
	`{"type":"array","items":{"type":"record","name":"E","fields":[]}}`,
	nodeSchema,
	`["null","boolean","long","float","double","bytes"]`,
	`{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"S","symbols":["A","B","C"]}},{"name":"f","type":{"type":"fixed","name":"F","size":3}},{"name":"m","type":{"type":"map","values":{"type":"array","items":["null","R"]}}}]}`,
	`{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}`,
	`{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":2}`,
	`{"type":"record","name":"T","fields":[{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"d","type":{"type":"int","logicalType":"date"}},{"name":"u","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},{"name":"s","type":{"type":"string","logicalType":"uuid"}}]}`,
	`{"type":"array","items":{"type":"map","values":{"type":"array","items":"boolean"}}}`,
}

// FuzzBoundedAvro: no input panics the walker, and whatever it accepts
// goavro decodes and renders within the walker's text bound.
func FuzzBoundedAvro(f *testing.F) {
	f.Add(uint8(0), zz(nil, math.MaxInt32))
	f.Add(uint8(0), []byte{4, 2, 4, 0})
	f.Add(uint8(2), zz(nil, 1000))
	f.Add(uint8(4), nodeChain(5))
	f.Add(uint8(5), []byte{10, 4, 0xff})
	f.Add(uint8(6), []byte{2, 'a', 'b', 'c', 2, 2, 'k', 2, 2, 0, 0, 0})
	f.Add(uint8(7), []byte{4, 0x80, 1})
	f.Add(uint8(9), []byte{2, 2, 0, 72, '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '1'})
	schemas := make([]*ParsedSchema, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		schemas[i] = mustParse(f, s)
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		p := schemas[int(which)%len(schemas)]
		bound, err := checkBinary(p.Root, data, 0)
		if err != nil {
			return
		}
		native, rest, err := p.Codec().NativeFromBinary(data)
		if err != nil || len(rest) != 0 {
			t.Fatalf("walker accepted %x, goavro: %v, %d bytes left", data, err, len(rest))
		}
		text, err := p.Codec().TextualFromNative(nil, native)
		if err != nil {
			t.Fatalf("walker accepted %x, goavro cannot render it: %v", data, err)
		}
		if len(text) > bound {
			t.Fatalf("rendering of %x is %d bytes, over the walker's bound %d", data, len(text), bound)
		}
	})
}
