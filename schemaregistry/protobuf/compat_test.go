package protobuf

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func mustParse(t testing.TB, text string, deps map[string]string) *File {
	t.Helper()
	f, err := Parse(text, deps)
	if err != nil {
		if len(text) > 2000 {
			text = text[:2000] + "…"
		}
		if msg := err.Error(); len(msg) > 2000 {
			err = errors.New(msg[:2000] + "…")
		}
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return f
}

// compatCase is one schema change: the old schema, the new one, the
// differences Confluent reports from old to new (Diff(old, new), sorted),
// and the verdicts of BACKWARD (new reads old) and FORWARD (old reads new).
type compatCase struct {
	name             string
	old, new         string
	oldDeps, newDeps map[string]string
	diffs            []string
	backward         bool
	forward          bool
}

const p3 = "syntax = \"proto3\";\n"
const p2 = "syntax = \"proto2\";\n"

var compatCases = []compatCase{
	{
		name:     "identical schemas",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "// a comment\nmessage   M {\n  int32 a = 1;\n}\n",
		backward: true, forward: true,
	},
	{
		name:     "package changed",
		old:      p3 + "package a; message M { int32 a = 1; }",
		new:      p3 + "package b; message M { int32 a = 1; }",
		diffs:    []string{"PACKAGE_CHANGED #/"},
		backward: false, forward: false,
	},
	{
		name:     "message renamed is removed and added",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message N { int32 a = 1; }",
		diffs:    []string{"MESSAGE_ADDED #/N", "MESSAGE_REMOVED #/M"},
		backward: false, forward: false,
	},
	{
		name:     "message added",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { int32 a = 1; } message N { string s = 1; }",
		diffs:    []string{"MESSAGE_ADDED #/N"},
		backward: true, forward: false,
	},
	{
		name:     "messages reordered",
		old:      p3 + "message M { int32 a = 1; } message N { int32 b = 1; }",
		new:      p3 + "message N { int32 b = 1; } message M { int32 a = 1; }",
		diffs:    []string{"MESSAGE_MOVED #/M", "MESSAGE_MOVED #/N"},
		backward: true, forward: true,
	},
	{
		name:     "nested message removed",
		old:      p3 + "message M { message Inner { int32 x = 1; } Inner i = 1; }",
		new:      p3 + "message M { bytes i = 1; }",
		diffs:    []string{"FIELD_KIND_CHANGED #/M/1", "MESSAGE_REMOVED #/M/Inner"},
		backward: false, forward: false,
	},
	{
		name:     "field added",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { int32 a = 1; string b = 2; }",
		diffs:    []string{"FIELD_ADDED #/M/2"},
		backward: true, forward: true,
	},
	{
		name:     "field number removed",
		old:      p3 + "message M { int32 a = 1; string b = 2; }",
		new:      p3 + "message M { int32 a = 1; reserved 2; }",
		diffs:    []string{"FIELD_REMOVED #/M/2"},
		backward: true, forward: true,
	},
	{
		name:     "field number changed",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { int32 a = 2; }",
		diffs:    []string{"FIELD_ADDED #/M/2", "FIELD_REMOVED #/M/1"},
		backward: true, forward: true,
	},
	{
		name:     "required field added",
		old:      p2 + "message M { optional int32 a = 1; }",
		new:      p2 + "message M { optional int32 a = 1; required int32 b = 2; }",
		diffs:    []string{"REQUIRED_FIELD_ADDED #/M/2"},
		backward: false, forward: false,
	},
	{
		name:     "field renamed",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { int32 renamed = 1; }",
		diffs:    []string{"FIELD_NAME_CHANGED #/M/1"},
		backward: true, forward: true,
	},
	{
		name:     "scalar to message",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { N a = 1; } message N { int32 x = 1; }",
		diffs:    []string{"FIELD_KIND_CHANGED #/M/1", "MESSAGE_ADDED #/N"},
		backward: false, forward: false,
	},
	{
		name:     "message to bytes is a kind change",
		old:      p3 + "message M { N a = 1; } message N { int32 x = 1; }",
		new:      p3 + "message M { bytes a = 1; } message N { int32 x = 1; }",
		diffs:    []string{"FIELD_KIND_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "scalar to map",
		old:      p3 + "message M { string a = 1; }",
		new:      p3 + "message M { map<string, string> a = 1; }",
		diffs:    []string{"FIELD_KIND_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "map value type within its group",
		old:      p3 + "message M { map<string, int32> a = 1; }",
		new:      p3 + "message M { map<string, int64> a = 1; }",
		backward: true, forward: true,
	},
	{
		name:     "map value type across groups",
		old:      p3 + "message M { map<string, int32> a = 1; }",
		new:      p3 + "message M { map<string, string> a = 1; }",
		diffs:    []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "message field to another message",
		old:      p3 + "message M { A f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }",
		new:      p3 + "message M { B f = 1; } message A { int32 x = 1; } message B { int32 x = 1; }",
		diffs:    []string{"FIELD_NAMED_TYPE_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "numeric label optional to repeated",
		old:      p3 + "message M { optional int32 a = 1; }",
		new:      p3 + "message M { repeated int32 a = 1; }",
		diffs:    []string{"FIELD_NUMERIC_LABEL_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "numeric field without label to repeated is not compared",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { repeated int32 a = 1; }",
		backward: true, forward: true,
	},
	{
		name:     "proto2 required to optional number",
		old:      p2 + "message M { required int64 a = 1; }",
		new:      p2 + "message M { optional int64 a = 1; }",
		diffs:    []string{"FIELD_NUMERIC_LABEL_CHANGED #/M/1"},
		backward: false, forward: false,
	},
	{
		name:     "string label change",
		old:      p3 + "message M { optional string a = 1; }",
		new:      p3 + "message M { repeated string a = 1; }",
		diffs:    []string{"FIELD_STRING_OR_BYTES_LABEL_CHANGED #/M/1"},
		backward: true, forward: true,
	},
	{
		name:     "message label change is not compared",
		old:      p3 + "message M { optional N a = 1; } message N {}",
		new:      p3 + "message M { repeated N a = 1; } message N {}",
		backward: true, forward: true,
	},
	{
		name:     "enum added and removed",
		old:      p3 + "message M { int32 a = 1; } enum E { X = 0; }",
		new:      p3 + "message M { int32 a = 1; } enum F { X = 0; }",
		diffs:    []string{"ENUM_ADDED #/F", "ENUM_REMOVED #/E"},
		backward: true, forward: true,
	},
	{
		name:     "enum values added, removed and renamed",
		old:      p3 + "message M { E e = 1; } enum E { A = 0; B = 1; C = 2; }",
		new:      p3 + "message M { E e = 1; } enum E { A = 0; BB = 1; D = 3; }",
		diffs:    []string{"ENUM_CONST_ADDED #/E/3", "ENUM_CONST_CHANGED #/E/1", "ENUM_CONST_REMOVED #/E/2"},
		backward: true, forward: true,
	},
	{
		name:     "int32 to enum",
		old:      p3 + "message M { int32 e = 1; }",
		new:      p3 + "message M { E e = 1; } enum E { A = 0; }",
		diffs:    []string{"ENUM_ADDED #/E"},
		backward: true, forward: true,
	},
	{
		name:     "new oneof around one existing field",
		old:      p3 + "message M { int32 a = 1; int32 b = 2; }",
		new:      p3 + "message M { int32 b = 2; oneof o { int32 a = 1; string c = 3; } }",
		diffs:    []string{"ONEOF_ADDED #/M/o", "ONEOF_FIELD_ADDED #/M/o/3"},
		backward: true, forward: false,
	},
	{
		name:     "new oneof from several existing fields",
		old:      p3 + "message M { int32 a = 1; int32 b = 2; }",
		new:      p3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }",
		diffs:    []string{"MULTIPLE_FIELDS_MOVED_TO_ONEOF #/M/o", "ONEOF_ADDED #/M/o"},
		backward: false, forward: true,
	},
	{
		name:     "existing field moved into existing oneof",
		old:      p3 + "message M { int32 a = 1; oneof o { int32 b = 2; } }",
		new:      p3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }",
		diffs:    []string{"FIELD_MOVED_TO_EXISTING_ONEOF #/M/o"},
		backward: false, forward: true,
	},
	{
		name:     "field added to oneof",
		old:      p3 + "message M { oneof o { int32 a = 1; } }",
		new:      p3 + "message M { oneof o { int32 a = 1; string b = 2; } }",
		diffs:    []string{"ONEOF_FIELD_ADDED #/M/o/2"},
		backward: true, forward: false,
	},
	{
		name:     "oneof moved to top level",
		old:      p3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }",
		new:      p3 + "message M { oneof o { int32 a = 1; } int32 b = 2; }",
		diffs:    []string{"ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/2"},
		backward: true, forward: false,
	},
	{
		name:     "whole oneof removed",
		old:      p3 + "message M { int32 x = 5; oneof o { int32 a = 1; int32 b = 2; } }",
		new:      p3 + "message M { int32 x = 5; }",
		diffs:    []string{"ONEOF_REMOVED #/M/o"},
		backward: true, forward: true,
	},
	{
		name:     "oneof renamed with the same fields",
		old:      p3 + "message M { oneof o { int32 a = 1; int32 b = 2; } }",
		new:      p3 + "message M { oneof p { int32 a = 1; int32 b = 2; } }",
		diffs:    []string{"ONEOF_ADDED #/M/p", "ONEOF_REMOVED #/M/o"},
		backward: true, forward: true,
	},
	{
		name:     "two oneofs merged into a new one",
		old:      p3 + "message M { oneof a { int32 x = 1; } oneof b { int32 y = 2; } }",
		new:      p3 + "message M { oneof c { int32 x = 1; int32 y = 2; } }",
		diffs:    []string{"FIELD_MOVED_TO_EXISTING_ONEOF #/M/c", "ONEOF_ADDED #/M/c", "ONEOF_REMOVED #/M/a", "ONEOF_REMOVED #/M/b"},
		backward: false, forward: true,
	},
	{
		name:     "oneof renamed while a member is dropped",
		old:      p3 + "message M { oneof g { int32 x = 1; int32 y = 2; } }",
		new:      p3 + "message M { oneof g2 { int32 x = 1; } }",
		diffs:    []string{"ONEOF_ADDED #/M/g2", "ONEOF_FIELD_REMOVED #/M/g/2", "ONEOF_REMOVED #/M/g"},
		backward: false, forward: true,
	},
	{
		name:     "type change hidden by a oneof rename",
		old:      p3 + "message M { oneof a { int32 x = 1; } }",
		new:      p3 + "message M { oneof b { string x = 1; } }",
		diffs:    []string{"FIELD_SCALAR_KIND_CHANGED #/M/b/1", "ONEOF_ADDED #/M/b", "ONEOF_REMOVED #/M/a"},
		backward: false, forward: false,
	},
	{
		name:     "type change while leaving a oneof",
		old:      p3 + "message M { oneof a { int32 x = 1; int32 y = 2; } }",
		new:      p3 + "message M { oneof a { int32 x = 1; } double y = 2; }",
		diffs:    []string{"FIELD_SCALAR_KIND_CHANGED #/M/2", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/2"},
		backward: false, forward: false,
	},
	{
		name:     "proto3 optional is not a oneof",
		old:      p3 + "message M { int32 a = 1; }",
		new:      p3 + "message M { optional int32 a = 1; }",
		backward: true, forward: true,
	},
	{
		name:     "syntax proto2 to proto3 with compatible fields",
		old:      p2 + "message M { optional int32 a = 1; optional string s = 2; }",
		new:      p3 + "message M { int32 a = 1; string s = 2; }",
		backward: true, forward: true,
	},
	{
		name:     "imported type changed incompatibly",
		old:      p3 + "import \"dep.proto\"; message M { d.Dep f = 1; }",
		oldDeps:  map[string]string{"dep.proto": p3 + "package d; message Dep { int32 x = 1; }"},
		new:      p3 + "import \"dep.proto\"; message M { d.Dep f = 1; }",
		newDeps:  map[string]string{"dep.proto": p3 + "package d; message Dep { string x = 1; }"},
		diffs:    []string{"FIELD_NAMED_TYPE_CHANGED #/M/1", "FIELD_SCALAR_KIND_CHANGED #/Dep/1"},
		backward: false, forward: false,
	},
	{
		name:     "imported type changed compatibly under another import path",
		old:      p3 + "import \"dep.proto\"; message M { d.Dep f = 1; }",
		oldDeps:  map[string]string{"dep.proto": p3 + "package d; message Dep { int32 x = 1; }"},
		new:      p3 + "import \"dep2.proto\"; message M { d2.Dep f = 1; }",
		newDeps:  map[string]string{"dep2.proto": p3 + "package d2; message Dep { int32 x = 1; int32 y = 2; }"},
		diffs:    []string{"FIELD_ADDED #/Dep/2"},
		backward: true, forward: true,
	},
	{
		name:     "type moved into an import",
		old:      p3 + "message M { Dep f = 1; } message Dep { int32 x = 1; }",
		new:      p3 + "import \"dep.proto\"; message M { Dep f = 1; }",
		newDeps:  map[string]string{"dep.proto": p3 + "message Dep { int32 x = 1; }"},
		diffs:    []string{"MESSAGE_REMOVED #/Dep"},
		backward: false, forward: true,
	},
	{
		name:     "well-known type import kept",
		old:      p3 + "import \"google/protobuf/timestamp.proto\"; message M { google.protobuf.Timestamp t = 1; }",
		new:      p3 + "import \"google/protobuf/timestamp.proto\"; import \"google/protobuf/duration.proto\"; message M { google.protobuf.Timestamp t = 1; google.protobuf.Duration d = 2; }",
		diffs:    []string{"FIELD_ADDED #/M/2"},
		backward: true, forward: true,
	},
	{
		name:     "recursive message compared once",
		old:      p3 + "import \"dep.proto\"; message M { Node n = 1; }",
		oldDeps:  map[string]string{"dep.proto": p3 + "message Node { Node next = 1; int32 v = 2; }"},
		new:      p3 + "import \"dep.proto\"; message M { Node n = 1; }",
		newDeps:  map[string]string{"dep.proto": p3 + "message Node { Node next = 1; int32 v = 2; int32 w = 3; }"},
		diffs:    []string{"FIELD_ADDED #/Node/3"},
		backward: true, forward: true,
	},
}

// scalarGroups are the wire-compatible groups: a change inside a group is
// compatible, a change across groups is not.
var scalarGroups = [][]string{
	{"int32", "uint32", "int64", "uint64", "bool"},
	{"sint32", "sint64"},
	{"fixed32", "sfixed32"},
	{"fixed64", "sfixed64"},
	{"string", "bytes"},
	{"float"},
	{"double"},
}

func scalarCases() []compatCase {
	var cases []compatCase
	for gi, g := range scalarGroups {
		for _, from := range g {
			for gj, h := range scalarGroups {
				for _, to := range h {
					if from == to {
						continue
					}
					c := compatCase{
						name: "scalar " + from + " to " + to,
						old:  p3 + "message M { " + from + " f = 1; }",
						new:  p3 + "message M { " + to + " f = 1; }",
					}
					if gi == gj {
						c.backward, c.forward = true, true
					} else {
						c.diffs = []string{"FIELD_SCALAR_KIND_CHANGED #/M/1"}
					}
					cases = append(cases, c)
				}
			}
		}
	}
	return cases
}

func TestCheckTable(t *testing.T) {
	for _, c := range append(slices.Clone(compatCases), scalarCases()...) {
		t.Run(c.name, func(t *testing.T) {
			oldF := mustParse(t, c.old, c.oldDeps)
			newF := mustParse(t, c.new, c.newDeps)
			var got []string
			for _, d := range Diff(oldF, newF) {
				got = append(got, d.String())
			}
			sort.Strings(got)
			want := slices.Clone(c.diffs)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("Diff(old, new) = %q, want %q", got, want)
			}
			backward := Check(newF, oldF)
			if (len(backward) == 0) != c.backward {
				t.Errorf("BACKWARD (new reads old) compatible = %v, want %v: %v", len(backward) == 0, c.backward, backward)
			}
			forward := Check(oldF, newF)
			if (len(forward) == 0) != c.forward {
				t.Errorf("FORWARD (old reads new) compatible = %v, want %v: %v", len(forward) == 0, c.forward, forward)
			}
			for _, p := range append(backward, forward...) {
				if p.Rule == "" || !strings.HasPrefix(p.Path, "#/") || p.Message == "" {
					t.Errorf("problem without rule, path or message: %+v", p)
				}
				if DiffType(p.Rule).Compatible() {
					t.Errorf("problem with a compatible rule: %+v", p)
				}
			}
		})
	}
}

func TestCheckProblemNamesFieldAndRule(t *testing.T) {
	oldF := mustParse(t, p3+"package shop; message Order { message Line { int32 qty = 3; } }", nil)
	newF := mustParse(t, p3+"package shop; message Order { message Line { string qty = 3; } }", nil)
	problems := Check(newF, oldF)
	if len(problems) != 1 {
		t.Fatalf("problems = %v, want one", problems)
	}
	p := problems[0]
	if p.Path != "#/Order/Line/3" || p.Rule != "FIELD_SCALAR_KIND_CHANGED" {
		t.Errorf("problem = %+v, want path #/Order/Line/3 and rule FIELD_SCALAR_KIND_CHANGED", p)
	}
	if !strings.Contains(p.Message, "qty") {
		t.Errorf("message %q does not name the field", p.Message)
	}
	if s := p.String(); !strings.Contains(s, "#/Order/Line/3") || !strings.Contains(s, "FIELD_SCALAR_KIND_CHANGED") || !strings.Contains(s, "wire-compatible") {
		t.Errorf("String() = %q does not name path, rule and reason", s)
	}
}

// TestCheckReferencedTypeChainIsLinear: each type uses the next one ten
// times; comparing every use anew, as Confluent does, would take 10^30
// comparisons.
func TestCheckReferencedTypeChainIsLinear(t *testing.T) {
	chain := func(lastType string) string {
		var sb strings.Builder
		sb.WriteString(p3 + "package c;\n")
		for i := 0; i < 30; i++ {
			fmt.Fprintf(&sb, "message T%d {", i)
			for j := 1; j <= 10; j++ {
				fmt.Fprintf(&sb, " T%d f%d = %d;", i+1, j, j)
			}
			sb.WriteString(" }\n")
		}
		sb.WriteString("message T30 { " + lastType + " v = 1; }\n")
		return sb.String()
	}
	main := p3 + "import \"chain.proto\"; message M { c.T0 root = 1; }"
	oldF := mustParse(t, main, map[string]string{"chain.proto": chain("int32")})
	newF := mustParse(t, main, map[string]string{"chain.proto": chain("string")})
	start := time.Now()
	problems := Check(newF, oldF)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Check took %v", d)
	}
	want := map[string]bool{"#/T30/1 FIELD_SCALAR_KIND_CHANGED": true, "#/M/1 FIELD_NAMED_TYPE_CHANGED": true}
	found := map[string]bool{}
	for _, p := range problems {
		found[p.Path+" "+p.Rule] = true
	}
	for w := range want {
		if !found[w] {
			t.Errorf("problems %v lack %s", problems, w)
		}
	}
	if len(problems) > 400 {
		t.Errorf("%d problems: a pair of types was reported more than once per use site", len(problems))
	}
}
