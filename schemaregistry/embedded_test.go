package schemaregistry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addFP(t *testing.T, s *EmbeddedStore, subject, fp string, expect int) error {
	t.Helper()
	_, err := s.AddVersion(context.Background(), NewVersion{Subject: subject,
		Schema: StoredSchema{Type: "AVRO", Text: `"string"`, Fingerprint: fp}, ExpectLatest: expect})
	return err
}

func TestEmbeddedTornTail(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := addFP(t, s, "a", "fp1", 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, "journal.jsonl")
	good, _ := os.Stat(path)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"op":"add","subject":"a","vers`) // a crash mid-write
	f.Close()

	s, err = OpenEmbedded(dir)
	if err != nil {
		t.Fatalf("torn tail must be cut, not fatal: %v", err)
	}
	defer s.Close()
	if fi, _ := os.Stat(path); fi.Size() != good.Size() {
		t.Fatalf("journal is %d bytes after recovery, want %d", fi.Size(), good.Size())
	}
	if err := addFP(t, s, "a", "fp2", 1); err != nil {
		t.Fatal(err)
	}
	if vs, _ := s.Versions(context.Background(), "a"); len(vs) != 2 {
		t.Fatalf("versions after recovery: %+v", vs)
	}
}

func TestEmbeddedCorruptMiddle(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte("{not json}\n{\"op\":\"set\"}\n"), 0o644)
	if _, err := OpenEmbedded(dir); !errors.Is(err, ErrCorruptJournal) {
		t.Fatalf("corrupt journal: %v, want ErrCorruptJournal", err)
	}
}

// failingSync fails the next fsync, as a full or broken disk would.
type failingSync struct {
	*os.File
	fail bool
}

func (f *failingSync) Sync() error {
	if f.fail {
		f.fail = false
		return errors.New("injected fsync failure")
	}
	return f.File.Sync()
}

func TestEmbeddedFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	faulty := &failingSync{File: s.file.(*os.File), fail: true}
	s.file = faulty
	if err := addFP(t, s, "a", "fp1", 0); err == nil {
		t.Fatal("a write whose fsync failed succeeded")
	}
	if vs, _ := s.Versions(context.Background(), "a"); len(vs) != 0 {
		t.Fatalf("a failed write was applied: %+v", vs)
	}
	if err := addFP(t, s, "a", "fp2", 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, _ := s.Versions(context.Background(), "a")
	if len(vs) != 1 || vs[0].ID != 1 {
		t.Fatalf("after reopen: %+v, want only the write that succeeded, with id 1", vs)
	}
	if _, err := s.SchemaID(context.Background(), "fp1"); err == nil {
		t.Fatal("the failed write's schema is in the journal")
	}
}

func TestEmbeddedCompactsOnOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	addFP(t, s, "a", "fp1", 0)
	addFP(t, s, "a", "fp2", 1)
	addFP(t, s, "gone", "fp3", 0)
	s.Purge(ctx, "gone", []int{1})
	s.SoftDelete(ctx, "a", []int{1})
	for i := 0; i < 1500; i++ { // churn: 3000 lines for one setting
		s.SetSetting(ctx, SettingMode, "a", "READONLY")
		s.DeleteSetting(ctx, SettingMode, "a")
	}
	s.SetSetting(ctx, SettingCompatibility, "", "FULL")
	s.Close()
	path := filepath.Join(dir, "journal.jsonl")
	before, _ := os.Stat(path)

	s, err = OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if after.Size() >= before.Size()/10 {
		t.Fatalf("journal %d bytes before, %d after compaction", before.Size(), after.Size())
	}
	vs, _ := s.Versions(ctx, "a")
	if len(vs) != 2 || !vs[0].Deleted || vs[1].Deleted || vs[1].ID != 2 {
		t.Fatalf("versions after compaction: %+v", vs)
	}
	if v, _, _ := s.Setting(ctx, SettingCompatibility, ""); v != "FULL" {
		t.Fatalf("global level after compaction: %q", v)
	}
	if _, ok, _ := s.Setting(ctx, SettingMode, "a"); ok {
		t.Fatal("a deleted setting came back")
	}
	if err := addFP(t, s, "b", "fp4", 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = OpenEmbedded(dir) // the compacted journal replays, with the append after it
	defer s.Close()
	if id, _ := s.SchemaID(ctx, "fp4"); id != 4 {
		t.Fatalf("id after compaction %d, want 4 (3 was purged, never reused)", id)
	}
}
