package zookeeper

import (
	"errors"
	"slices"
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
	if err := c.SetUserConfig("alice", map[string]string{"producer_byte_rate": "1024"}); err != nil {
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
