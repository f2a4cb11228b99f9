// Package storetest is the conformance suite every schemaregistry.Store
// passes: the store's own contract (ids, versions, preconditions,
// deletes, settings, durability, concurrent writers), then the registry's
// Confluent rules running over it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"

	sr "github.com/ferry-mq/ferry/schemaregistry"
)

// Factory opens stores for the suite. Open returns an empty store;
// Reopen closes s and opens the same data again.
type Factory struct {
	Open   func(t *testing.T) sr.Store
	Reopen func(t *testing.T, s sr.Store) sr.Store
}

// Run runs the whole suite.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Factory)
	}{
		{"IDsAndVersions", testIDsAndVersions},
		{"Preconditions", testPreconditions},
		{"ImportedIDs", testImportedIDs},
		{"NotFound", testNotFound},
		{"DeletesAndPurge", testDeletesAndPurge},
		{"References", testReferences},
		{"Settings", testSettings},
		{"Durability", testDurability},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Registry", testRegistry},
		{"SchemaTypes", testSchemaTypes},
		{"Protobuf", testProtobuf},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

var ctx = context.Background()

func schema(fp string) sr.StoredSchema {
	return sr.StoredSchema{Type: "AVRO", Text: `"` + fp + `"`, Fingerprint: fp}
}

func add(t *testing.T, s sr.Store, subject, fp string, expect int) sr.Version {
	t.Helper()
	v, err := s.AddVersion(ctx, sr.NewVersion{Subject: subject, Schema: schema(fp), ExpectLatest: expect})
	if err != nil {
		t.Fatalf("add %s %s: %v", subject, fp, err)
	}
	return v
}

func testIDsAndVersions(t *testing.T, f Factory) {
	s := f.Open(t)
	v1 := add(t, s, "a", "fp1", 0)
	v2 := add(t, s, "a", "fp2", 1)
	v3 := add(t, s, "b", "fp1", 0)
	if v1.Version != 1 || v2.Version != 2 || v3.Version != 1 {
		t.Fatalf("versions %d %d %d, want 1 2 1", v1.Version, v2.Version, v3.Version)
	}
	if v1.ID == v2.ID || v3.ID != v1.ID {
		t.Fatalf("ids %d %d %d: same schema must share an id, different ones must not", v1.ID, v2.ID, v3.ID)
	}
	got, err := s.Schema(ctx, v2.ID)
	if err != nil || got.Text != `"fp2"` || got.Fingerprint != "fp2" || got.ID != v2.ID || got.Type != "AVRO" {
		t.Fatalf("schema %d: %+v %v", v2.ID, got, err)
	}
	if id, err := s.SchemaID(ctx, "fp2"); err != nil || id != v2.ID {
		t.Fatalf("schema id of fp2: %d %v", id, err)
	}
	vs, err := s.Versions(ctx, "a")
	if err != nil || len(vs) != 2 || vs[0].Version != 1 || vs[1].Version != 2 || vs[1].ID != v2.ID || vs[0].Subject != "a" {
		t.Fatalf("versions of a: %+v %v", vs, err)
	}
	of, err := s.VersionsOf(ctx, v1.ID)
	if err != nil || len(of) != 2 || of[0].Subject != "a" || of[1].Subject != "b" {
		t.Fatalf("versions of id %d: %+v %v", v1.ID, of, err)
	}
	subjects, err := s.Subjects(ctx)
	if err != nil || len(subjects) != 2 || subjects[0] != (sr.SubjectInfo{Name: "a", Live: 2}) || subjects[1].Name != "b" {
		t.Fatalf("subjects: %+v %v", subjects, err)
	}
}

func testPreconditions(t *testing.T, f Factory) {
	s := f.Open(t)
	add(t, s, "a", "fp1", 0)
	_, err := s.AddVersion(ctx, sr.NewVersion{Subject: "a", Schema: schema("fp2"), ExpectLatest: 0})
	if !errors.Is(err, sr.ErrStoreConflict) {
		t.Fatalf("stale ExpectLatest: %v, want ErrStoreConflict", err)
	}
	if _, err := s.SchemaID(ctx, "fp2"); !errors.Is(err, sr.ErrStoreNotFound) {
		t.Fatalf("a refused write left schema fp2 behind: %v", err)
	}
}

func testImportedIDs(t *testing.T, f Factory) {
	s := f.Open(t)
	v, err := s.AddVersion(ctx, sr.NewVersion{Subject: "a", Schema: schema("fp1"), ID: 100, Version: 5})
	if err != nil || v.ID != 100 || v.Version != 5 {
		t.Fatalf("import id 100 version 5: %+v %v", v, err)
	}
	if _, err := s.AddVersion(ctx, sr.NewVersion{Subject: "b", Schema: schema("fp2"), ID: 100}); !errors.Is(err, sr.ErrIDInUse) {
		t.Fatalf("id 100 for another schema: %v, want ErrIDInUse", err)
	}
	if _, err := s.AddVersion(ctx, sr.NewVersion{Subject: "b", Schema: schema("fp1"), ID: 7}); !errors.Is(err, sr.ErrIDInUse) {
		t.Fatalf("schema of id 100 imported as 7: %v, want ErrIDInUse", err)
	}
	if _, err := s.AddVersion(ctx, sr.NewVersion{Subject: "a", Schema: schema("fp3"), Version: 5, ExpectLatest: 5}); !errors.Is(err, sr.ErrVersionInUse) {
		t.Fatalf("version 5 twice: %v, want ErrVersionInUse", err)
	}
	next := add(t, s, "c", "fp4", 0)
	if next.ID <= 100 {
		t.Fatalf("new id %d after importing 100, want > 100", next.ID)
	}
	v6 := add(t, s, "a", "fp5", 5)
	if v6.Version != 6 {
		t.Fatalf("version after imported 5: %d", v6.Version)
	}
}

func testNotFound(t *testing.T, f Factory) {
	s := f.Open(t)
	if _, err := s.Schema(ctx, 42); !errors.Is(err, sr.ErrStoreNotFound) {
		t.Fatalf("schema 42: %v", err)
	}
	if _, err := s.SchemaID(ctx, "nope"); !errors.Is(err, sr.ErrStoreNotFound) {
		t.Fatalf("schema id: %v", err)
	}
	if vs, err := s.Versions(ctx, "nope"); err != nil || len(vs) != 0 {
		t.Fatalf("versions of unknown subject: %v %v", vs, err)
	}
	if subjects, err := s.Subjects(ctx); err != nil || len(subjects) != 0 {
		t.Fatalf("subjects of empty store: %v %v", subjects, err)
	}
}

func testDeletesAndPurge(t *testing.T, f Factory) {
	s := f.Open(t)
	v1 := add(t, s, "a", "fp1", 0)
	v2 := add(t, s, "a", "fp2", 1)
	add(t, s, "b", "fp2", 0)
	if err := s.SoftDelete(ctx, "a", []int{1}); err != nil {
		t.Fatal(err)
	}
	vs, _ := s.Versions(ctx, "a")
	if len(vs) != 2 || !vs[0].Deleted || vs[1].Deleted {
		t.Fatalf("after soft delete of a/1: %+v", vs)
	}
	subjects, _ := s.Subjects(ctx)
	if subjects[0] != (sr.SubjectInfo{Name: "a", Live: 1}) {
		t.Fatalf("subjects: %+v", subjects)
	}
	if err := s.Purge(ctx, "a", []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.Versions(ctx, "a"); len(vs) != 0 {
		t.Fatalf("after purge: %+v", vs)
	}
	if _, err := s.Schema(ctx, v1.ID); !errors.Is(err, sr.ErrStoreNotFound) {
		t.Fatalf("schema only a/1 used survived the purge: %v", err)
	}
	if _, err := s.Schema(ctx, v2.ID); err != nil {
		t.Fatalf("schema b/1 still uses was purged: %v", err)
	}
	v := add(t, s, "a", "fp1", 0)
	if v.Version != 1 || v.ID <= v2.ID {
		t.Fatalf("after purge: version %d id %d; want version 1 and an id never used before", v.Version, v.ID)
	}
}

func testReferences(t *testing.T, f Factory) {
	s := f.Open(t)
	base := add(t, s, "base", "fpb", 0)
	sc := schema("fpr")
	sc.References = []sr.Reference{{Name: "com.acme.Base", Subject: "base", Version: 1}}
	user, err := s.AddVersion(ctx, sr.NewVersion{Subject: "user", Schema: sc})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Schema(ctx, user.ID)
	if err != nil || len(got.References) != 1 || got.References[0] != sc.References[0] {
		t.Fatalf("references round trip: %+v %v", got.References, err)
	}
	if b, _ := s.Schema(ctx, base.ID); b.References != nil {
		t.Fatalf("schema without references: %+v", b.References)
	}
	ids, err := s.ReferencedBy(ctx, "base", 1)
	if err != nil || len(ids) != 1 || ids[0] != user.ID {
		t.Fatalf("referenced by: %v %v", ids, err)
	}
	s.SoftDelete(ctx, "user", []int{1})
	if ids, _ := s.ReferencedBy(ctx, "base", 1); len(ids) != 0 {
		t.Fatalf("a soft-deleted referrer still counts: %v", ids)
	}
}

func testSettings(t *testing.T, f Factory) {
	s := f.Open(t)
	for _, kind := range []sr.SettingKind{sr.SettingCompatibility, sr.SettingMode} {
		if _, ok, err := s.Setting(ctx, kind, ""); ok || err != nil {
			t.Fatalf("%s unset: %v %v", kind, ok, err)
		}
		if err := s.SetSetting(ctx, kind, "", "G"); err != nil {
			t.Fatal(err)
		}
		s.SetSetting(ctx, kind, "a", "X")
		s.SetSetting(ctx, kind, "a", "Y")
		if v, ok, _ := s.Setting(ctx, kind, "a"); !ok || v != "Y" {
			t.Fatalf("%s a: %q %v", kind, v, ok)
		}
		if v, _, _ := s.Setting(ctx, kind, ""); v != "G" {
			t.Fatalf("%s global: %q", kind, v)
		}
		s.DeleteSetting(ctx, kind, "a")
		if _, ok, _ := s.Setting(ctx, kind, "a"); ok {
			t.Fatalf("%s a survived its delete", kind)
		}
	}
	s.SetSetting(ctx, sr.SettingMode, "z", "READONLY")
	if v, _, _ := s.Setting(ctx, sr.SettingCompatibility, "z"); v != "" {
		t.Fatalf("kinds leak into each other: %q", v)
	}
}

func testDurability(t *testing.T, f Factory) {
	s := f.Open(t)
	v1 := add(t, s, "a", "fp1", 0)
	add(t, s, "a", "fp2", 1)
	s.SoftDelete(ctx, "a", []int{2})
	s.SetSetting(ctx, sr.SettingCompatibility, "a", "FULL")
	add(t, s, "gone", "fp3", 0)
	s.Purge(ctx, "gone", []int{1})
	s = f.Reopen(t, s)
	vs, err := s.Versions(ctx, "a")
	if err != nil || len(vs) != 2 || vs[0].ID != v1.ID || !vs[1].Deleted {
		t.Fatalf("after reopen: %+v %v", vs, err)
	}
	if v, _, _ := s.Setting(ctx, sr.SettingCompatibility, "a"); v != "FULL" {
		t.Fatalf("setting after reopen: %q", v)
	}
	if next := add(t, s, "b", "fp4", 0); next.ID <= 3 {
		t.Fatalf("id %d after reopen reuses a purged id", next.ID)
	}
}

func testConcurrentWriters(t *testing.T, f Factory) {
	s := f.Open(t)
	const writers, each = 6, 8
	var wg sync.WaitGroup
	ids := make(chan sr.Version, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ids <- addRetrying(t, s, "shared", fmt.Sprintf("w%d-%d", w, i))
			}
		}(w)
	}
	wg.Wait()
	close(ids)
	CheckUnique(t, collect(ids), writers*each)
}

func collect(ch chan sr.Version) []sr.Version {
	var out []sr.Version
	for v := range ch {
		out = append(out, v)
	}
	return out
}

// addRetrying adds a version the way Registry does: read the latest,
// write with that precondition, retry on conflict.
func addRetrying(t *testing.T, s sr.Store, subject, fp string) sr.Version {
	for {
		vs, err := s.Versions(ctx, subject)
		if err != nil {
			t.Error(err)
			return sr.Version{}
		}
		latest := 0
		if len(vs) > 0 {
			latest = vs[len(vs)-1].Version
		}
		v, err := s.AddVersion(ctx, sr.NewVersion{Subject: subject, Schema: schema(fp), ExpectLatest: latest})
		if errors.Is(err, sr.ErrStoreConflict) {
			continue
		}
		if err != nil {
			t.Error(err)
		}
		return v
	}
}

// CheckUnique fails unless the versions are 1..n and the ids distinct.
func CheckUnique(t *testing.T, vs []sr.Version, n int) {
	t.Helper()
	if len(vs) != n {
		t.Fatalf("%d versions, want %d", len(vs), n)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
	seen := map[int]bool{}
	for i, v := range vs {
		if v.Version != i+1 {
			t.Fatalf("versions are not 1..%d: %d at %d", n, v.Version, i)
		}
		if seen[v.ID] {
			t.Fatalf("id %d handed out twice", v.ID)
		}
		seen[v.ID] = true
	}
}

// Logger discards logs.
func Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const (
	userV1     = `{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"id","type":"long"}]}`
	userV2     = `{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"email","type":"string","default":""}]}`
	userBroken = `{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"id","type":"long"},{"name":"age","type":"int"}]}`
	dec10_2    = `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`
	dec12_2    = `{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}`
)

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	var e *sr.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want error_code %d", err, code)
	}
}

func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// testRegistry runs Confluent's rules over the store.
func testRegistry(t *testing.T, f Factory) {
	r, err := sr.New(f.Open(t), sr.Config{Logger: Logger()})
	if err != nil {
		t.Fatal(err)
	}
	req := func(s string) sr.SchemaRequest { return sr.SchemaRequest{Schema: s} }
	id1 := must(r.Register(ctx, "users-value", req(userV1)))(t)
	if again := must(r.Register(ctx, "users-value", req(" "+userV1+"\n")))(t); again != id1 {
		t.Fatalf("same schema again: id %d, want %d", again, id1)
	}
	if other := must(r.Register(ctx, "other", req(userV1)))(t); other != id1 {
		t.Fatalf("same schema under another subject: id %d, want %d", other, id1)
	}
	_, err = r.Register(ctx, "users-value", req(userBroken))
	wantCode(t, err, 409)
	id2 := must(r.Register(ctx, "users-value", req(userV2)))(t)
	info := must(r.Lookup(ctx, "users-value", req(userV2), false))(t)
	if info.Version != 2 || info.ID != id2 || info.Subject != "users-value" {
		t.Fatalf("lookup: %+v", info)
	}
	_, err = r.Lookup(ctx, "users-value", req(userBroken), false)
	wantCode(t, err, 40403)
	_, err = r.Lookup(ctx, "nobody", req(userV1), false)
	wantCode(t, err, 40401)
	_, err = r.Register(ctx, "x", req(`{"type":"record"}`))
	wantCode(t, err, 42201)

	must(r.SetCompatibility(ctx, "money", "NONE"))(t)
	d1 := must(r.Register(ctx, "money", req(dec10_2)))(t)
	d2 := must(r.Register(ctx, "money", req(dec12_2)))(t)
	if d1 == d2 {
		t.Fatalf("decimal(10,2) and decimal(12,2) got one id %d", d1)
	}
	must(r.SetCompatibility(ctx, "money", "BACKWARD"))(t)
	_, err = r.Register(ctx, "money", req(`{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}`))
	wantCode(t, err, 409)

	// Deletes, Confluent's way.
	if v := must(r.DeleteVersion(ctx, "users-value", 1, false))(t); v != 1 {
		t.Fatalf("soft delete version 1: %d", v)
	}
	_, err = r.DeleteVersion(ctx, "users-value", 1, false)
	wantCode(t, err, 40406)
	_, err = r.DeleteVersion(ctx, "users-value", 2, true)
	wantCode(t, err, 40407)
	_, err = r.GetVersion(ctx, "users-value", 1, false)
	wantCode(t, err, 40402)
	must(r.GetVersion(ctx, "users-value", 1, true))(t)
	if vs := must(r.DeleteSubject(ctx, "users-value", false))(t); len(vs) != 1 || vs[0] != 2 {
		t.Fatalf("soft delete subject: %v", vs)
	}
	_, err = r.DeleteSubject(ctx, "users-value", false)
	wantCode(t, err, 40404)
	_, err = r.GetVersion(ctx, "users-value", sr.Latest, false)
	wantCode(t, err, 40401)
	if all := must(r.Subjects(ctx, true))(t); len(all) != 3 {
		t.Fatalf("subjects with deleted: %v", all)
	}
	if vs := must(r.DeleteSubject(ctx, "users-value", true))(t); len(vs) != 2 {
		t.Fatalf("permanent delete: %v", vs)
	}
	_, err = r.DeleteSubject(ctx, "users-value", true)
	wantCode(t, err, 40401)
	if _, err := r.SchemaByID(ctx, id1); err != nil {
		t.Fatalf("schema %d still used by 'other' is gone: %v", id1, err)
	}
	_, err = r.SchemaByID(ctx, id2)
	wantCode(t, err, 40403)

	// Config and mode.
	_, err = r.SetCompatibility(ctx, "", "SIDEWAYS")
	wantCode(t, err, 42203)
	_, err = r.Compatibility(ctx, "other", false)
	wantCode(t, err, 40408)
	if l := must(r.Compatibility(ctx, "other", true))(t); l != sr.Backward {
		t.Fatalf("default level %s", l)
	}
	must(r.SetMode(ctx, "other", "READONLY", false))(t)
	_, err = r.Register(ctx, "other", req(userV2))
	wantCode(t, err, 42205)
	_, err = r.SetMode(ctx, "", "IMPORT", false)
	wantCode(t, err, 42205)
	must(r.SetMode(ctx, "imported", "IMPORT", false))(t)
	imp := sr.SchemaRequest{Schema: `"string"`, ID: 500, Version: 3}
	if id := must(r.Register(ctx, "imported", imp))(t); id != 500 {
		t.Fatalf("imported id %d", id)
	}
	if got := must(r.GetVersion(ctx, "imported", 3, false))(t); got.ID != 500 {
		t.Fatalf("imported version: %+v", got)
	}
	_, err = r.Register(ctx, "users-value", imp)
	wantCode(t, err, 42205)

	// References.
	addr := `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}`
	must(r.Register(ctx, "address", req(addr)))(t)
	withRef := sr.SchemaRequest{Schema: `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}`,
		References: []sr.Reference{{Name: "com.acme.Address", Subject: "address", Version: 1}}}
	cid := must(r.Register(ctx, "customer", withRef))(t)
	if ids := must(r.ReferencedBy(ctx, "address", 1))(t); len(ids) != 1 || ids[0] != cid {
		t.Fatalf("referencedby: %v", ids)
	}
	_, err = r.DeleteSubject(ctx, "address", false)
	wantCode(t, err, 42206)
	withRef.References = nil
	_, err = r.Register(ctx, "customer", withRef)
	wantCode(t, err, 42201)
}

// testSchemaTypes keeps each schema's type through a reopen: JSON schemas
// with a reference across subjects come back as JSON with their
// references, and an entry stored without a type (written before the
// registry was multi-type) reads as AVRO.
func testSchemaTypes(t *testing.T, f Factory) {
	s := f.Open(t)
	legacy, err := s.AddVersion(ctx, sr.NewVersion{Subject: "legacy", Schema: sr.StoredSchema{Text: `"string"`, Fingerprint: "legacy-fp"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sr.New(s, sr.Config{Logger: Logger()})
	if err != nil {
		t.Fatal(err)
	}
	addr := `{"type":"object","properties":{"city":{"type":"string"}}}`
	addrID := must(r.Register(ctx, "address", sr.SchemaRequest{Schema: addr, SchemaType: "JSON"}))(t)
	refs := []sr.Reference{{Name: "address.json", Subject: "address", Version: 1}}
	person := `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`
	pid := must(r.Register(ctx, "person", sr.SchemaRequest{Schema: person, SchemaType: "JSON", References: refs}))(t)
	if pid == addrID {
		t.Fatalf("two schemas got id %d", pid)
	}
	s = f.Reopen(t, s)
	r, err = sr.New(s, sr.Config{Logger: Logger()})
	if err != nil {
		t.Fatal(err)
	}
	st := must(r.SchemaByID(ctx, pid))(t)
	if st.Type != "JSON" || st.Text != person || len(st.References) != 1 || st.References[0] != refs[0] {
		t.Fatalf("JSON schema after reopen: %+v", st)
	}
	info := must(r.GetVersion(ctx, "address", 1, false))(t)
	if info.SchemaType != "JSON" || info.ID != addrID {
		t.Fatalf("address after reopen: %+v", info)
	}
	if ids := must(r.ReferencedBy(ctx, "address", 1))(t); len(ids) != 1 || ids[0] != pid {
		t.Fatalf("referencedby after reopen: %v", ids)
	}
	_, err = r.DeleteVersion(ctx, "address", 1, false)
	wantCode(t, err, 42206)
	old := must(r.SchemaByID(ctx, legacy.ID))(t)
	if old.Type != "AVRO" {
		t.Fatalf("an entry stored without a type reads as %q, want AVRO", old.Type)
	}
	if info := must(r.GetVersion(ctx, "legacy", 1, false))(t); info.SchemaType != "" {
		t.Fatalf("an AVRO version answers schemaType %q; Confluent omits it", info.SchemaType)
	}
}

// testProtobuf keeps Protobuf schemas through a reopen: a .proto importing
// another subject's file comes back with its reference, referencedby and
// the 42206 refusal hold, and both identities survive: the written order
// (without normalize) and the normalized form (normalize=true).
func testProtobuf(t *testing.T, f Factory) {
	s := f.Open(t)
	r, err := sr.New(s, sr.Config{Logger: Logger()})
	if err != nil {
		t.Fatal(err)
	}
	money := "syntax = \"proto3\";\npackage shop;\nmessage Money { string currency = 1; int64 units = 2; }\n"
	moneyID := must(r.Register(ctx, "money", sr.SchemaRequest{Schema: money, SchemaType: "PROTOBUF"}))(t)
	refs := []sr.Reference{{Name: "shop/money.proto", Subject: "money", Version: 1}}
	order := "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\nmessage Order { string id = 1; Money total = 2; }\n"
	orderID := must(r.Register(ctx, "order", sr.SchemaRequest{Schema: order, SchemaType: "PROTOBUF", References: refs}))(t)
	reordered := "syntax = \"proto3\";\npackage shop;\nmessage Money { int64 units = 2; string currency = 1; }\n"
	writtenID := must(r.Register(ctx, "money-written", sr.SchemaRequest{Schema: reordered, SchemaType: "PROTOBUF"}))(t)
	if writtenID == moneyID {
		t.Fatalf("field order differs, no normalize: same id %d, want another (Confluent keeps the written order)", writtenID)
	}
	normID := must(r.Register(ctx, "money-norm", sr.SchemaRequest{Schema: reordered, SchemaType: "PROTOBUF", Normalize: true}))(t)

	s = f.Reopen(t, s)
	r, err = sr.New(s, sr.Config{Logger: Logger()})
	if err != nil {
		t.Fatal(err)
	}
	st := must(r.SchemaByID(ctx, orderID))(t)
	if st.Type != "PROTOBUF" || st.Text != order || len(st.References) != 1 || st.References[0] != refs[0] {
		t.Fatalf("Protobuf schema after reopen: %+v", st)
	}
	if ids := must(r.ReferencedBy(ctx, "money", 1))(t); len(ids) != 1 || ids[0] != orderID {
		t.Fatalf("referencedby after reopen: %v", ids)
	}
	_, err = r.DeleteVersion(ctx, "money", 1, false)
	wantCode(t, err, 42206)
	info := must(r.Lookup(ctx, "money-written", sr.SchemaRequest{Schema: reordered, SchemaType: "PROTOBUF"}, false))(t)
	if info.ID != writtenID || info.SchemaType != "PROTOBUF" {
		t.Fatalf("lookup of the written form after reopen: %+v", info)
	}
	// normalize=true sorts the fields: the normalized registration is the
	// original order's id, found again by a normalized lookup.
	if normID != moneyID {
		t.Fatalf("normalize=true registration: id %d, want %d (the same normalized form)", normID, moneyID)
	}
	if info := must(r.Lookup(ctx, "money-norm", sr.SchemaRequest{Schema: reordered, SchemaType: "PROTOBUF", Normalize: true}, false))(t); info.ID != moneyID {
		t.Fatalf("normalized lookup after reopen: %+v", info)
	}
}
