package zookeeper

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// Credentials are written in Kafka's exact form beside a user's other
// configs, announced as users/<name>, and read into another broker's store
// by Reload; names that cannot be znodes are refused.
func TestUserStoreWritesKafkasFormatAndAnnounces(t *testing.T) {
	connect := zks.Require(t).Addr() + testChroot(t)
	c := open(t, connect, 10*time.Second)
	other := open(t, connect, 10*time.Second)
	if err := c.SetQuotaConfig("users/alice", map[string]string{"producer_byte_rate": "1024"}); err != nil {
		t.Fatal(err)
	}
	w := other.WatchConfigChanges()
	defer w.Stop()
	names := <-w.C
	cursor := other.ConfigChangesAfter(names)
	remote, err := other.OpenUserStore()
	if err != nil {
		t.Fatal(err)
	}

	store, err := c.OpenUserStore()
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := auth.NewScramCredential(auth.ScramSHA256, "pw", 4096)
	if err := store.Upsert("alice", cred); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.get("/config/users/alice")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"config":{"SCRAM-SHA-256":"` + auth.FormatScramCredential(cred) + `","producer_byte_rate":"1024"}}`
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
	if _, ok := remote.Lookup("alice", auth.ScramSHA256); ok {
		t.Fatal("the other store changed before Reload")
	}
	if err := remote.Reload([]string{"alice"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := remote.Lookup("alice", auth.ScramSHA256); !ok || !got.VerifyPassword("pw") {
		t.Fatal("the other store does not verify alice after Reload")
	}

	if err := store.Delete("alice", auth.ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete("alice", auth.ScramSHA256); !errors.Is(err, auth.ErrUnknownUser) {
		t.Errorf("second delete: %v", err)
	}
	if cfg, err := c.UserConfig("alice"); err != nil || cfg["producer_byte_rate"] != "1024" || len(cfg) != 1 {
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

// A user's znode holds both SCRAM verifiers and quotas, written by
// different requests on different brokers: a write made between another
// writer's read and write is not lost, whichever of the two it is.
func TestUserConfigEditsKeepAConcurrentChange(t *testing.T) {
	connect := zks.Require(t).Addr() + testChroot(t)
	c := open(t, connect, 10*time.Second)
	other := open(t, connect, 10*time.Second) // another broker
	store, err := c.OpenUserStore()
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := auth.NewScramCredential(auth.ScramSHA512, "pw", 4096)

	// A quota lands on a user that does not exist yet, while a verifier is
	// being written: the create of the verifier's writer fails and retries.
	attempts := 0
	if _, err := c.editConfigAnnounced(usersConfigPath, "bob", "users/bob", func(cfg map[string]string) error {
		attempts++
		if attempts == 1 {
			if err := other.SetQuotaConfig("users/bob", map[string]string{"producer_byte_rate": "2048"}); err != nil {
				t.Fatalf("the other broker's quota: %v", err)
			}
		}
		cfg[auth.ScramSHA512.String()] = auth.FormatScramCredential(cred)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := c.UserConfig("bob")
	if err != nil || attempts != 2 || got["producer_byte_rate"] != "2048" || got[auth.ScramSHA512.String()] == "" {
		t.Fatalf("after %d attempts: %v %v", attempts, got, err)
	}

	// The other way round: a verifier is added while a quota is being set.
	cred256, _ := auth.NewScramCredential(auth.ScramSHA256, "pw", 4096)
	otherStore, err := other.OpenUserStore()
	if err != nil {
		t.Fatal(err)
	}
	attempts = 0
	if _, err := c.editConfigAnnounced(usersConfigPath, "bob", "users/bob", func(cfg map[string]string) error {
		attempts++
		if attempts == 1 {
			if err := otherStore.Upsert("bob", cred256); err != nil {
				t.Fatalf("the other broker's verifier: %v", err)
			}
		}
		cfg["consumer_byte_rate"] = "4096"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, _ = c.UserConfig("bob")
	if attempts != 2 || got[auth.ScramSHA256.String()] == "" || got[auth.ScramSHA512.String()] == "" || got["consumer_byte_rate"] != "4096" {
		t.Fatalf("after %d attempts: %v", attempts, got)
	}

	// A writer that keeps losing gives up with an error, not a lost write.
	_, err = c.editConfigAnnounced(usersConfigPath, "bob", "users/bob", func(cfg map[string]string) error {
		if err := other.SetQuotaConfig("users/bob", map[string]string{"producer_byte_rate": strconv.Itoa(attempts)}); err != nil {
			t.Fatal(err)
		}
		attempts++
		return nil
	})
	if !errors.Is(err, errConfigContended) {
		t.Fatalf("a write contended on every attempt: %v", err)
	}
	if err := store.Upsert("bob", cred); err != nil {
		t.Fatalf("an uncontended write after it: %v", err)
	}
}
