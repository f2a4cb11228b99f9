package auth

import (
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
	"github.com/ferry-mq/ferry/test/zktest"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

// Credentials are written in Kafka's exact form beside a user's other
// configs, announced as users/<name>, and read into another broker's store
// by Reload; names that cannot be znodes are refused.
func TestZKUserStoreWritesKafkasFormatAndAnnounces(t *testing.T) {
	srv := zks.Require(t)
	chroot := zktest.Chroot(t)
	c := zktest.Open(t, srv.Addr()+chroot)
	other := zktest.Open(t, srv.Addr()+chroot)
	if _, err := c.EditEntityConfig("users/alice", func(cfg map[string]string) error {
		cfg["producer_byte_rate"] = "1024"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w := other.WatchConfigChanges()
	defer w.Stop()
	names := <-w.C
	cursor := other.ConfigChangesAfter(names)
	remote, err := OpenZKUserStore(other, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

	store, err := OpenZKUserStore(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := NewScramCredential(ScramSHA256, "pw", 4096)
	if err := store.Upsert("alice", cred); err != nil {
		t.Fatal(err)
	}
	data := zktest.Raw(t, srv.Addr(), chroot+"/config/users/alice")
	want := `{"version":1,"config":{"SCRAM-SHA-256":"` + FormatScramCredential(cred) + `","producer_byte_rate":"1024"}}`
	if string(data) != want {
		t.Errorf("znode\n%s\nwant\n%s", data, want)
	}
	if !strings.Contains(string(data), ",iterations=4096") {
		t.Errorf("znode %s", data)
	}

	deadline := time.After(10 * time.Second)
	for {
		select {
		case names = <-w.C:
		case <-deadline:
			t.Fatal("no user change announced")
		}
		changed, err := cursor.Read(names)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(changed.Users, "alice") {
			break
		}
	}
	if _, ok := remote.Lookup("alice", ScramSHA256); ok {
		t.Fatal("the other store changed before Reload")
	}
	if err := remote.Reload([]string{"alice"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := remote.Lookup("alice", ScramSHA256); !ok || !got.VerifyPassword("pw") {
		t.Fatal("the other store does not verify alice after Reload")
	}

	if err := store.Delete("alice", ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete("alice", ScramSHA256); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("second delete: %v", err)
	}
	if cfg, err := ZKUserConfig(c, "alice"); err != nil || cfg["producer_byte_rate"] != "1024" || len(cfg) != 1 {
		t.Errorf("alice's other configs after the delete: %v %v", cfg, err)
	}
	if err := remote.ReloadAll(); err != nil {
		t.Fatal(err)
	}
	if users := remote.Users(); len(users) != 0 {
		t.Errorf("users after the delete: %v", users)
	}
	for _, bad := range []string{"", "a/b", "..", "."} {
		if err := store.Upsert(bad, cred); err == nil {
			t.Errorf("user %q accepted", bad)
		}
	}
}

// A token made through one broker's store is found by another's, and a
// revoked one is gone from both.
func TestZKTokenStoreFollowsOtherBrokers(t *testing.T) {
	connect := zks.Require(t).Addr() + zktest.Chroot(t)
	a, err := OpenZKTokenStore(zktest.Open(t, connect), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenZKTokenStore(zktest.Open(t, connect), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, tok, err := NewAPIToken("ci", "deployer", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(tok); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "broker b sees the token", 10*time.Second, func() bool { got, ok := b.LookupAPIToken(tok.ID); return ok && got.Hash == tok.Hash })
	if found, err := b.Revoke(tok.ID); err != nil || !found {
		t.Fatalf("revoke: %v %v", found, err)
	}
	harness.WaitFor(t, "broker a forgets the token", 10*time.Second, func() bool { _, ok := a.LookupAPIToken(tok.ID); return !ok })
	if found, err := a.Revoke(tok.ID); err != nil || found {
		t.Fatalf("revoking again: %v %v", found, err)
	}
}
