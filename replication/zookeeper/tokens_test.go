package zookeeper

import (
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// A token made through one broker's store is found by another's, and a
// revoked one is gone from both.
func TestTokenStoreFollowsOtherBrokers(t *testing.T) {
	srv := zks.Require(t)
	connect := srv.Addr() + testChroot(t)
	a, err := open(t, connect, 6*time.Second).OpenTokenStore()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := open(t, connect, 6*time.Second).OpenTokenStore()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, tok, err := auth.NewAPIToken("ci", "deployer", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Add(tok); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "broker b sees the token", func() bool { got, ok := b.LookupAPIToken(tok.ID); return ok && got.Hash == tok.Hash })
	if found, err := b.Revoke(tok.ID); err != nil || !found {
		t.Fatalf("revoke: %v %v", found, err)
	}
	waitFor(t, "broker a forgets the token", func() bool { _, ok := a.LookupAPIToken(tok.ID); return !ok })
	if found, err := a.Revoke(tok.ID); err != nil || found {
		t.Fatalf("revoking again: %v %v", found, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
