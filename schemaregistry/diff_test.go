package schemaregistry

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	cases := []struct {
		old, new string
		want     []string // "KIND path backward forward"
	}{
		{rec("R", fld("a", `"int"`)), rec("R", fld("a", `"int"`), fld("b", `"int"`, `"default":0`)),
			[]string{"FIELD_ADDED /fields/b true true"}},
		{rec("R", fld("a", `"int"`)), rec("R", fld("a", `"int"`), fld("b", `"int"`)),
			[]string{"FIELD_ADDED /fields/b false true"}},
		{rec("R", fld("a", `"int"`), fld("b", `"int"`)), rec("R", fld("a", `"int"`)),
			[]string{"FIELD_REMOVED /fields/b true false"}},
		{rec("R", fld("a", `"int"`)), rec("R", fld("a", `"long"`)),
			[]string{"TYPE_PROMOTED /fields/a true false"}},
		{rec("R", fld("a", `"int"`)), rec("R", fld("a", `"string"`)),
			[]string{"TYPE_CHANGED /fields/a false false"}},
		{rec("R", fld("a", `"string"`)), rec("R", fld("a", `"bytes"`)),
			[]string{"TYPE_CHANGED /fields/a true true"}},
		{rec("R", fld("a", `"int"`, `"default":1`)), rec("R", fld("a", `"int"`, `"default":2`)),
			[]string{"DEFAULT_CHANGED /fields/a true true"}},
		{rec("R", fld("a", `"int"`)), rec("R", fld("b", `"int"`, `"aliases":["a"]`)),
			[]string{"FIELD_RENAMED /fields/b true false"}},
		{enumAB, enumABC, []string{"ENUM_SYMBOL_ADDED / true false"}},
		{enumABC, enumABdefA, []string{"ENUM_SYMBOL_REMOVED / true true", "ENUM_DEFAULT_CHANGED / true true"}},
		{`["null","string"]`, `["null","string","int"]`, []string{"UNION_BRANCH_ADDED /2 true false"}},
		{`["null","string","int"]`, `["null","string"]`, []string{"UNION_BRANCH_REMOVED /2 false true"}},
		{`["null","int"]`, `["null","long"]`, []string{"UNION_BRANCH_ADDED /1 true false", "UNION_BRANCH_REMOVED /1 true true"}},
		{`{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, []string{"FIXED_SIZE_CHANGED / false false"}},
		{dec10_2, `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`, []string{"DECIMAL_CHANGED / false false"}},
		{rec("R", fld("a", `"int"`)), `{"type":"record","name":"S","aliases":["R"],"fields":[{"name":"a","type":"int"}]}`,
			[]string{"NAME_CHANGED / true false"}},
		{`{"type":"array","items":` + rec("I", fld("x", `"int"`)) + `}`, `{"type":"array","items":` + rec("I", fld("x", `"int"`), fld("y", `"int"`)) + `}`,
			[]string{"FIELD_ADDED /items/fields/y false true"}},
		{list, listPlus, []string{"FIELD_ADDED /fields/w true true"}},
		{list, list, nil},
	}
	for _, tc := range cases {
		changes := Diff(parseOrFail(t, tc.old).Root, parseOrFail(t, tc.new).Root)
		var got []string
		for _, c := range changes {
			got = append(got, fmt.Sprintf("%s %s %v %v", c.Kind, c.Path, c.Backward, c.Forward))
			if c.Levels[Full] != (c.Backward && c.Forward) || !c.Levels[None] || c.Levels[BackwardTransitive] != c.Backward {
				t.Errorf("levels of %+v", c)
			}
		}
		if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
			t.Errorf("%s → %s:\n got %v\nwant %v", tc.old, tc.new, got, tc.want)
		}
	}
}

func TestRegistryDiffAndBreakingChangesIn409(t *testing.T) {
	ctx := context.Background()
	store, _ := OpenEmbedded(t.TempDir())
	r, _ := New(store, Config{})
	defer r.Close()
	v1 := rec("R", fld("a", `"int"`))
	v2 := rec("R", fld("a", `"long"`), fld("b", `"int"`, `"default":0`))
	for _, s := range []string{v1, v2} {
		if _, err := r.Register(ctx, "s", SchemaRequest{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Diff(ctx, "s", 1, Latest, nil)
	if err != nil || len(res.Changes) != 2 || res.To.Version != 2 || !res.Compatibility[Backward] || res.Compatibility[Forward] {
		t.Fatalf("diff 1→latest: %+v %v", res, err)
	}
	cand := SchemaRequest{Schema: rec("R", fld("a", `"long"`), fld("b", `"int"`, `"default":0`), fld("c", `"string"`))}
	res, err = r.Diff(ctx, "s", Latest, 0, &cand)
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Kind != "FIELD_ADDED" || res.Compatibility[Backward] {
		t.Fatalf("candidate diff: %+v %v", res, err)
	}
	_, err = r.Register(ctx, "s", cand)
	if err == nil || !strings.Contains(err.Error(), "breakingChanges: 'FIELD_ADDED at /fields/c") {
		t.Fatalf("409 does not list the breaking change: %v", err)
	}
}
