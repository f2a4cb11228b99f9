package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStoreKeepsVerifiersAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Users()) != 0 {
		t.Fatalf("users in a fresh dir: %v", s.Users())
	}
	a256, _ := NewScramCredential(ScramSHA256, "a", 4096)
	a512, _ := NewScramCredential(ScramSHA512, "a", 8192)
	b256, _ := NewScramCredential(ScramSHA256, "b", 4096)
	for _, up := range []struct {
		user string
		c    ScramCredential
	}{{"alice", a256}, {"alice", a512}, {"bob", b256}} {
		if err := s.Upsert(up.user, up.c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("bob", ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("bob", ScramSHA256); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("deleting twice: %v, want ErrUnknownUser", err)
	}
	path := filepath.Join(dir, UsersFileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), `"a"`) || !strings.Contains(string(data), "iterations=8192") {
		t.Errorf("file content:\n%s", data)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}

	again, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Users(); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("users after reopen %v, want [alice]", got)
	}
	c, ok := again.Lookup("alice", ScramSHA512)
	if !ok || !c.VerifyPassword("a") || c.Iterations != 8192 {
		t.Errorf("alice's SHA-512 verifier after reopen: %v %+v", ok, c)
	}
	if _, ok := again.Lookup("bob", ScramSHA256); ok {
		t.Error("bob survived his deletion")
	}
}

func TestFileStoreRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenFileStore(dir)
	c, _ := NewScramCredential(ScramSHA256, "a", 4096)
	for _, name := range []string{"", "a/b", "..", "tab\there"} {
		if err := s.Upsert(name, c); err == nil {
			t.Errorf("user name %q accepted", name)
		}
	}
	for _, content := range []string{"{", `{"version":2,"users":{}}`,
		`{"version":1,"users":{"a":{"SCRAM-SHA-256":"salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096"}}}`} {
		os.WriteFile(filepath.Join(dir, UsersFileName), []byte(content), 0o600)
		if _, err := OpenFileStore(dir); err == nil {
			t.Errorf("file %q opened", content)
		}
	}
}

func TestScramCredentialRoundTripsKafkasFormat(t *testing.T) {
	c, _ := ScramCredentialFromSalt(ScramSHA256, "pencil", rfc7677.salt, 4096)
	s := FormatScramCredential(c)
	if !strings.HasPrefix(s, "salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=") || !strings.HasSuffix(s, ",iterations=4096") {
		t.Errorf("formatted %q", s)
	}
	back, err := ParseScramCredential(ScramSHA256, s)
	if err != nil || !back.VerifyPassword("pencil") {
		t.Fatalf("parsed back: %v", err)
	}
	if _, err := ParseScramCredential(ScramSHA512, s); err == nil {
		t.Error("a SHA-256 verifier parsed as SHA-512")
	}
}

func TestSecretIsCreatedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreateSecret(dir)
	if err != nil || len(a) != 32 {
		t.Fatalf("secret %d bytes: %v", len(a), err)
	}
	b, err := LoadOrCreateSecret(dir)
	if err != nil || string(a) != string(b) {
		t.Fatalf("the secret changed across loads: %v", err)
	}
	fi, _ := os.Stat(filepath.Join(dir, saslSecretFileName))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}
