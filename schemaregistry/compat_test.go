package schemaregistry

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// rec builds a record schema named name with the given fields (JSON).
func rec(name string, fields ...string) string {
	return `{"type":"record","name":"` + name + `","fields":[` + strings.Join(fields, ",") + `]}`
}

func fld(name, typ string, extra ...string) string {
	s := `{"name":"` + name + `","type":` + typ
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

const (
	enumAB      = `{"type":"enum","name":"E","symbols":["A","B"]}`
	enumABC     = `{"type":"enum","name":"E","symbols":["A","B","C"]}`
	enumABdefA  = `{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`
	enumABCdefA = `{"type":"enum","name":"E","symbols":["A","B","C"],"default":"A"}`
	dec10_2     = `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`
	list        = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}`
	listPlus    = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"w","type":"int","default":0},{"name":"next","type":["null","Node"],"default":null}]}`
)

// compatCases are (old, new) pairs with the verdict in each direction:
// backward = the new schema reads data written with the old one;
// forward = the old schema reads data written with the new one.
var compatCases = []struct {
	name              string
	old, new          string
	backward, forward bool
}{
	{"same int", `"int"`, `"int"`, true, true},
	{"int to long", `"int"`, `"long"`, true, false},
	{"int to float", `"int"`, `"float"`, true, false},
	{"int to double", `"int"`, `"double"`, true, false},
	{"long to float", `"long"`, `"float"`, true, false},
	{"long to double", `"long"`, `"double"`, true, false},
	{"float to double", `"float"`, `"double"`, true, false},
	{"long to int", `"long"`, `"int"`, false, true},
	{"double to float", `"double"`, `"float"`, false, true},
	{"string to bytes", `"string"`, `"bytes"`, true, true},
	{"bytes to string", `"bytes"`, `"string"`, true, true},
	{"int to string", `"int"`, `"string"`, false, false},
	{"boolean to int", `"boolean"`, `"int"`, false, false},
	{"null to string", `"null"`, `"string"`, false, false},
	{"field added with default", rec("R", fld("a", `"int"`)), rec("R", fld("a", `"int"`), fld("b", `"string"`, `"default":""`)), true, true},
	{"field added without default", rec("R", fld("a", `"int"`)), rec("R", fld("a", `"int"`), fld("b", `"string"`)), false, true},
	{"field removed, had no default", rec("R", fld("a", `"int"`), fld("b", `"int"`)), rec("R", fld("a", `"int"`)), true, false},
	{"field removed, had a default", rec("R", fld("a", `"int"`), fld("b", `"int"`, `"default":1`)), rec("R", fld("a", `"int"`)), true, true},
	{"field renamed with alias", rec("R", fld("a", `"int"`)), rec("R", fld("a2", `"int"`, `"aliases":["a"]`)), true, false},
	{"field renamed without alias", rec("R", fld("a", `"int"`)), rec("R", fld("b", `"int"`)), false, false},
	{"field promoted int to long", rec("R", fld("a", `"int"`)), rec("R", fld("a", `"long"`)), true, false},
	{"field default changed", rec("R", fld("a", `"int"`, `"default":1`)), rec("R", fld("a", `"int"`, `"default":2`)), true, true},
	{"field made optional", rec("R", fld("a", `"string"`)), rec("R", fld("a", `["null","string"]`, `"default":null`)), true, false},
	{"enum symbol added", enumAB, enumABC, true, false},
	{"enum symbol removed", enumABC, enumAB, false, true},
	{"enum symbol removed, new has default", enumABC, enumABdefA, true, true},
	{"enum symbol added, old has default", enumABdefA, enumABCdefA, true, true},
	{"enum renamed", enumAB, `{"type":"enum","name":"E2","symbols":["A","B"]}`, false, false},
	{"enum renamed with alias", enumAB, `{"type":"enum","name":"E2","aliases":["E"],"symbols":["A","B"]}`, true, false},
	{"enum in union gains a symbol", `["null",` + enumAB + `]`, `["null",` + enumABC + `]`, true, false},
	{"union widened", `["null","string"]`, `["null","string","int"]`, true, false},
	{"union narrowed", `["null","string","int"]`, `["null","string"]`, false, true},
	{"type to union", `"string"`, `["null","string"]`, true, false},
	{"union to type", `["null","string"]`, `"string"`, false, true},
	{"union branch promoted", `["null","int"]`, `["null","long"]`, true, false},
	{"union reordered", `["null","string"]`, `["string","null"]`, true, true},
	{"int into a numeric union", `"int"`, `["null","long","double"]`, true, false},
	{"bytes into a union with string", `"bytes"`, `["null","string"]`, true, false},
	{"nested field added without default", rec("R", fld("in", rec("I", fld("x", `"int"`)))), rec("R", fld("in", rec("I", fld("x", `"int"`), fld("y", `"int"`)))), false, true},
	{"nested field added with default", rec("R", fld("in", rec("I", fld("x", `"int"`)))), rec("R", fld("in", rec("I", fld("x", `"int"`), fld("y", `"int"`, `"default":0`)))), true, true},
	{"record in union gains a field with default", `["null",` + rec("A", fld("x", `"int"`)) + `]`, `["null",` + rec("A", fld("x", `"int"`), fld("y", `"int"`, `"default":0`)) + `]`, true, true},
	{"array items promoted", `{"type":"array","items":"int"}`, `{"type":"array","items":"long"}`, true, false},
	{"array items changed", `{"type":"array","items":"int"}`, `{"type":"array","items":"string"}`, false, false},
	{"map values promoted", `{"type":"map","values":"float"}`, `{"type":"map","values":"double"}`, true, false},
	{"map values changed", `{"type":"map","values":"int"}`, `{"type":"map","values":"string"}`, false, false},
	{"map of records gains a field without default", `{"type":"map","values":` + rec("V", fld("x", `"int"`)) + `}`, `{"type":"map","values":` + rec("V", fld("x", `"int"`), fld("y", `"int"`)) + `}`, false, true},
	{"array to map", `{"type":"array","items":"int"}`, `{"type":"map","values":"int"}`, false, false},
	{"fixed size changed", `{"type":"fixed","name":"F","size":16}`, `{"type":"fixed","name":"F","size":32}`, false, false},
	{"fixed renamed", `{"type":"fixed","name":"F","size":16}`, `{"type":"fixed","name":"G","size":16}`, false, false},
	{"fixed renamed with alias", `{"type":"fixed","name":"F","size":16}`, `{"type":"fixed","name":"G","aliases":["F"],"size":16}`, true, false},
	{"record renamed", rec("R", fld("a", `"int"`)), rec("S", fld("a", `"int"`)), false, false},
	{"record renamed with alias", rec("R", fld("a", `"int"`)), `{"type":"record","name":"S","aliases":["R"],"fields":[{"name":"a","type":"int"}]}`, true, false},
	{"record namespace changed", `{"type":"record","name":"R","namespace":"a","fields":[]}`, `{"type":"record","name":"R","namespace":"b","fields":[]}`, true, true},
	{"decimal same", dec10_2, dec10_2, true, true},
	{"decimal precision changed", dec10_2, `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`, false, false},
	{"decimal scale changed", dec10_2, `{"type":"bytes","logicalType":"decimal","precision":10,"scale":3}`, false, false},
	// A logical type resolves as its underlying type unless both sides carry it.
	{"decimal added to bytes", `"bytes"`, dec10_2, true, true},
	{"decimal removed from bytes", dec10_2, `"bytes"`, true, true},
	{"decimal added to fixed", `{"type":"fixed","name":"D","size":8}`, `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":10,"scale":2}`, true, true},
	{"decimal bytes to string", dec10_2, `"string"`, true, true},
	{"fixed decimal precision changed", `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":10,"scale":2}`, `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":12,"scale":2}`, false, false},
	{"decimal field precision changed", rec("R", fld("p", dec10_2)), rec("R", fld("p", `{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`)), false, false},
	{"timestamp-millis dropped", `{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, true, true},
	{"recursive record same", list, list, true, true},
	{"recursive record gains a field with default", list, listPlus, true, true},
}

func parseOrFail(t *testing.T, s string) *ParsedSchema {
	t.Helper()
	p, err := ParseAvro(s, nil)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return p
}

func TestCompatibilityTable(t *testing.T) {
	if len(compatCases) < 40 {
		t.Fatalf("only %d cases", len(compatCases))
	}
	for _, tc := range compatCases {
		t.Run(tc.name, func(t *testing.T) {
			old, nw := parseOrFail(t, tc.old), parseOrFail(t, tc.new)
			back := CheckReadable(nw.Root, old.Root, "new", "old")
			fwd := CheckReadable(old.Root, nw.Root, "old", "new")
			if (len(back) == 0) != tc.backward {
				t.Errorf("backward: got %v, want compatible=%v", back, tc.backward)
			}
			if (len(fwd) == 0) != tc.forward {
				t.Errorf("forward: got %v, want compatible=%v", fwd, tc.forward)
			}
			for _, i := range append(back, fwd...) {
				if i.Type == "" || i.Path == "" || i.Description == "" {
					t.Errorf("incompatibility without type, path or description: %+v", i)
				}
			}
			full := CheckLevel(Full, nw.Root, old.Root)
			if (len(full) == 0) != (tc.backward && tc.forward) {
				t.Errorf("full: %v", full)
			}
		})
	}
}

// TestIncompatibilityMessages checks that each message names the path
// and the breaking change.
func TestIncompatibilityMessages(t *testing.T) {
	cases := []struct {
		reader, writer  string
		typ, path, says string
	}{
		{rec("R", fld("a", `"int"`), fld("b", `"string"`)), rec("R", fld("a", `"int"`)), "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/b", "'b'"},
		{rec("R", fld("in", rec("I", fld("x", `"string"`)))), rec("R", fld("in", rec("I", fld("x", `"int"`)))), "TYPE_MISMATCH", "/fields/in/fields/x", "from int"},
		{enumAB, enumABC, "MISSING_ENUM_SYMBOLS", "/", "[C]"},
		{`{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, "FIXED_SIZE_MISMATCH", "/", "from 8"},
		{rec("S", fld("a", `"int"`)), rec("R", fld("a", `"int"`)), "NAME_MISMATCH", "/", "from R"},
		{`"string"`, `["null","string"]`, "MISSING_UNION_BRANCH", "/0", "null"},
		{`["null","string"]`, `"int"`, "MISSING_UNION_BRANCH", "/", "int"},
		{rec("R", fld("p", `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`)), rec("R", fld("p", dec10_2)), "DECIMAL_MISMATCH", "/fields/p", "decimal(10,2)"},
		{`{"type":"array","items":"int"}`, `{"type":"array","items":"long"}`, "TYPE_MISMATCH", "/items", "long"},
	}
	for _, tc := range cases {
		got := CheckReadable(parseOrFail(t, tc.reader).Root, parseOrFail(t, tc.writer).Root, "new", "old")
		if len(got) != 1 || got[0].Type != tc.typ || got[0].Path != tc.path || !strings.Contains(got[0].Description, tc.says) {
			t.Errorf("reader %s writer %s: got %+v, want one %s at %s saying %q", tc.reader, tc.writer, got, tc.typ, tc.path, tc.says)
		}
	}
}

// TestTransitiveLevels registers three versions where only the transitive
// level sees the break with version 1.
func TestTransitiveLevels(t *testing.T) {
	ctx := context.Background()
	v1 := rec("R", fld("a", `"int"`))
	v2 := rec("R", fld("a", `"int"`), fld("b", `"int"`, `"default":0`))
	v3 := rec("R", fld("a", `"int"`), fld("b", `"int"`))
	f1 := rec("R", fld("a", `"int"`), fld("b", `"int"`))
	f2 := rec("R", fld("a", `"int"`), fld("b", `"int"`, `"default":0`))
	f3 := rec("R", fld("a", `"int"`))
	cases := []struct {
		level      string
		s1, s2, s3 string
		ok         bool
	}{
		{Backward, v1, v2, v3, true},
		{BackwardTransitive, v1, v2, v3, false},
		{Forward, f1, f2, f3, true},
		{ForwardTransitive, f1, f2, f3, false},
		{Full, v1, v2, rec("R", fld("a", `"int"`), fld("b", `"int"`, `"default":0`), fld("c", `"int"`, `"default":0`)), true},
		{Full, v1, v2, v3, true},
		{FullTransitive, v1, v2, v3, false},
		{None, `"int"`, `"string"`, `"boolean"`, true},
	}
	for _, tc := range cases {
		store, _ := OpenEmbedded(t.TempDir())
		r, _ := New(store, Config{})
		if _, err := r.SetCompatibility(ctx, "s", tc.level); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{tc.s1, tc.s2} {
			if _, err := r.Register(ctx, "s", SchemaRequest{Schema: s}); err != nil {
				t.Fatalf("%s: %v", tc.level, err)
			}
		}
		_, err := r.Register(ctx, "s", SchemaRequest{Schema: tc.s3})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrIncompatible)) {
			t.Errorf("%s: third registration: %v, want ok=%v", tc.level, err, tc.ok)
		}
		r.Close()
	}
}
