package schemaregistry

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestCachedVersionsGrowInPlace: the cached version list grows in place
// (registering must not copy a subject's every version), yet a list a
// reader already holds never changes, through new versions, a soft
// delete and a version after it.
func TestCachedVersionsGrowInPlace(t *testing.T) {
	store, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(store, Config{DefaultCompatibility: None})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	register := func(n int) {
		t.Helper()
		schema := fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":%d}]}`, n)
		if _, err := r.Register(ctx, "s", SchemaRequest{Schema: schema}); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 3; n++ {
		register(n)
	}
	held, err := r.versions(ctx, "s", false)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(held)
	for n := 4; n <= 6; n++ {
		register(n)
	}
	if _, err := r.DeleteVersion(ctx, "s", 6, false); err != nil {
		t.Fatal(err)
	}
	register(7)
	if !slices.Equal(held, want) {
		t.Fatalf("a held version list changed: %+v, was %+v", held, want)
	}
	got, err := r.Versions(ctx, "s", false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 7]" {
		t.Fatalf("versions %v, want [1 2 3 4 5 7]", got)
	}
	all, err := r.Versions(ctx, "s", true)
	if err != nil || fmt.Sprint(all) != "[1 2 3 4 5 6 7]" {
		t.Fatalf("versions with deleted ones: %v %v", all, err)
	}
}
