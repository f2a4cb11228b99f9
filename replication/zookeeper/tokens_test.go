package zookeeper

import (
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/test/harness"
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
	harness.WaitFor(t, "broker b sees the token", 10*time.Second, func() bool { got, ok := b.LookupAPIToken(tok.ID); return ok && got.Hash == tok.Hash })
	if found, err := b.Revoke(tok.ID); err != nil || !found {
		t.Fatalf("revoke: %v %v", found, err)
	}
	harness.WaitFor(t, "broker a forgets the token", 10*time.Second, func() bool { _, ok := a.LookupAPIToken(tok.ID); return !ok })
	if found, err := a.Revoke(tok.ID); err != nil || found {
		t.Fatalf("revoking again: %v %v", found, err)
	}
}
