package acl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
	"github.com/ferry-mq/ferry/test/zktest"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

// broker is one ZooKeeper session with its authorizer, as each broker of a
// cluster has.
type zkBroker struct {
	a     *Authorizer
	m     *Manager
	store *ZKStore
}

func openZKBroker(t *testing.T, connect string) zkBroker {
	t.Helper()
	c := zktest.Open(t, connect)
	a := New(Config{})
	s, err := OpenZKStore(c, a, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return zkBroker{a: a, m: NewManager(a, s), store: s}
}

// TestZKStoreAcrossBrokers: a binding created through one broker is
// enforced by another without a restart, its znodes are Kafka's, and a
// deletion reaches the other broker too.
func TestZKStoreAcrossBrokers(t *testing.T) {
	srv := zks.Require(t)
	chroot := zktest.Chroot(t)
	connect := srv.Addr() + chroot
	b1, b2 := openZKBroker(t, connect), openZKBroker(t, connect)
	ctx := context.Background()
	write := act(alice, "127.0.0.1", auth.OpWrite, topic("orders-eu"))
	if b2.a.Authorize(ctx, write) {
		t.Fatal("allowed before any binding")
	}
	bs := []Binding{
		{lit(auth.ResourceTopic, "orders-eu"), allow(alice, "*", auth.OpRead)},
		{pre(auth.ResourceTopic, "orders-"), allow(alice, "*", auth.OpWrite)},
		{lit(auth.ResourceSubject, "orders-value"), deny(bob, "10.0.0.1", auth.OpAlterConfigs)},
	}
	for _, err := range b1.m.Create(bs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, "broker 2 enforcing broker 1's bindings", 10*time.Second, func() bool {
		return b2.a.Authorize(ctx, write) && b2.a.Len() == 3
	})

	conn, _, err := zk.Connect([]string{srv.Addr()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for path, want := range map[string]string{
		chroot + "/kafka-acl/Topic/orders-eu":                 `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`,
		chroot + "/kafka-acl-extended/prefixed/Topic/orders-": `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Write","host":"*"}]}`,
		chroot + "/kafka-acl/Subject/orders-value":            `{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny","operation":"AlterConfigs","host":"10.0.0.1"}]}`,
	} {
		got, _, err := conn.Get(path)
		if err != nil || string(got) != want {
			t.Errorf("%s = %s (%v), want %s", path, got, err, want)
		}
	}
	lits, _, err := conn.Children(chroot + "/kafka-acl-changes")
	if err != nil || len(lits) != 2 {
		t.Fatalf("literal notifications %v (%v), want 2", lits, err)
	}
	notice, _, _ := conn.Get(chroot + "/kafka-acl-changes/" + lits[0])
	if s := string(notice); s != "Topic:orders-eu" && s != "Subject:orders-value" {
		t.Errorf("literal notification %q", s)
	}
	exts, _, err := conn.Children(chroot + "/kafka-acl-extended-changes")
	if err != nil || len(exts) != 1 {
		t.Fatalf("extended notifications %v (%v), want 1", exts, err)
	}
	notice, _, _ = conn.Get(chroot + "/kafka-acl-extended-changes/" + exts[0])
	if want := `{"version":1,"resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}`; string(notice) != want {
		t.Errorf("extended notification %s, want %s", notice, want)
	}

	f := MatchAll
	f.PatternType = auth.PatternPrefixed
	if d := b2.m.Delete([]Filter{f}); d[0].Err != nil || len(d[0].Bindings) != 1 {
		t.Fatalf("delete through broker 2: %+v", d[0])
	}
	harness.WaitFor(t, "broker 1 applying broker 2's deletion", 10*time.Second, func() bool {
		return !b1.a.Authorize(ctx, write) && b1.a.Len() == 2
	})
	if ok, _, _ := conn.Exists(chroot + "/kafka-acl-extended/prefixed/Topic/orders-"); ok {
		t.Error("the emptied pattern's znode is still there")
	}
	// A broker started now loads what is there.
	b3 := openZKBroker(t, connect)
	if b3.a.Len() != 2 {
		t.Fatalf("a new broker loaded %d bindings, want 2", b3.a.Len())
	}
}

// TestZKStoreConcurrentWriters: two brokers adding to the same pattern at
// once both land (conditional writes, retried).
func TestZKStoreConcurrentWriters(t *testing.T) {
	srv := zks.Require(t)
	connect := srv.Addr() + zktest.Chroot(t)
	b1, b2 := openZKBroker(t, connect), openZKBroker(t, connect)
	const n = 20
	done := make(chan error, 2*n)
	for i := range n {
		for j, b := range []zkBroker{b1, b2} {
			go func() {
				done <- b.m.Create([]Binding{{lit(auth.ResourceGroup, "g"), allow(auth.User(fmt.Sprintf("u%d-%d", j, i)), "*", auth.OpRead)}})[0]
			}()
		}
	}
	for range 2 * n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, "both brokers holding every binding", 10*time.Second, func() bool {
		return b1.a.Len() == 2*n && b2.a.Len() == 2*n
	})
}

func TestZKStoreRefusesNamesThatAreNotZnodes(t *testing.T) {
	srv := zks.Require(t)
	b := openZKBroker(t, srv.Addr()+zktest.Chroot(t))
	for _, name := range []string{"a/b", "..", "x\x00"} {
		err := b.m.Create([]Binding{{lit(auth.ResourceGroup, name), allow(alice, "*", auth.OpRead)}})[0]
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("group %q: %v, want ErrInvalid", name, err)
		}
	}
}
