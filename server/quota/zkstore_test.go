package quota_test

import (
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
	"github.com/ferry-mq/ferry/test/zkserver"
	"github.com/ferry-mq/ferry/test/zktest"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

// Quotas are written in Kafka's layout beside a user's SCRAM credentials
// (neither write loses the other's keys), announced by entity path, and
// read into another broker's manager by Reload.
func TestQuotasBesideCredentialsAndAnnounced(t *testing.T) {
	srv := zks.Require(t)
	chroot := zktest.Chroot(t)
	zc, zother := zktest.Open(t, srv.Addr()+chroot), zktest.Open(t, srv.Addr()+chroot)
	c, other := quota.NewZKStore(zc), quota.NewZKStore(zother)
	w := zother.WatchConfigChanges()
	defer w.Stop()
	cursor := zother.ConfigChangesAfter(<-w.C)

	users, err := auth.OpenZKUserStore(zc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cred, _ := auth.NewScramCredential(auth.ScramSHA256, "pw", 4096)
	if err := users.Upsert("alice", cred); err != nil {
		t.Fatal(err)
	}
	m := quota.NewManager()
	alice := quota.Entity{User: quota.Named("alice")}
	for _, e := range []quota.Entity{alice, {User: quota.Named("alice"), Client: quota.Named("app")}, {Client: quota.DefaultComponent}} {
		if err := m.Alter(c, e, []quota.Op{{Key: quota.ProducerByteRate, Value: 1024}}, false); err != nil {
			t.Fatal(err)
		}
	}
	data := zktest.Raw(t, srv.Addr(), chroot+"/config/users/alice")
	want := `{"version":1,"config":{"SCRAM-SHA-256":"` + auth.FormatScramCredential(cred) + `","producer_byte_rate":"1024"}}`
	if string(data) != want {
		t.Fatalf("znode\n%s\nwant\n%s", data, want)
	}
	for _, p := range []string{"/config/users/alice/clients/app", "/config/clients/<default>"} {
		if data := zktest.Raw(t, srv.Addr(), chroot+p); string(data) != `{"version":1,"config":{"producer_byte_rate":"1024"}}` {
			t.Fatalf("%s: %s", p, data)
		}
	}
	// A credential change keeps the quota.
	if err := users.Delete("alice", auth.ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if q, _ := c.QuotaConfig("users/alice"); q["producer_byte_rate"] != "1024" {
		t.Fatalf("quota lost by a credential write: %v", q)
	}

	var quotas, userNames []string
	deadline := time.After(10 * time.Second)
	for len(quotas) < 3 {
		select {
		case names := <-w.C:
			changed, err := cursor.Read(names)
			if err != nil {
				t.Fatal(err)
			}
			quotas, userNames = append(quotas, changed.Quotas...), append(userNames, changed.Users...)
		case <-deadline:
			t.Fatalf("announced so far: %v", quotas)
		}
	}
	slices.Sort(quotas)
	quotas = slices.Compact(quotas)
	if !slices.Equal(quotas, []string{"clients/<default>", "users/alice", "users/alice/clients/app"}) {
		t.Fatalf("announced %v", quotas)
	}
	if slices.ContainsFunc(userNames, func(u string) bool { return u != "alice" }) {
		t.Fatalf("users announced: %v (a client entity is not a user)", userNames)
	}
	remote := quota.NewManager()
	if err := remote.Reload(other, quotas); err != nil {
		t.Fatal(err)
	}
	if q := remote.Get(alice); q[quota.ProducerByteRate] != 1024 {
		t.Fatalf("other broker after Reload: %v", q)
	}
	all, err := other.QuotaConfigs()
	if err != nil || len(all) != 3 {
		t.Fatalf("QuotaConfigs: %v %v", all, err)
	}
	if err := m.Alter(c, alice, []quota.Op{{Key: quota.ProducerByteRate, Remove: true}}, false); err != nil {
		t.Fatal(err)
	}
	all, _ = c.QuotaConfigs()
	if _, ok := all["users/alice"]; ok || !maps.Equal(all["clients/<default>"], map[string]string{"producer_byte_rate": "1024"}) {
		t.Fatalf("after removing alice's quota: %v", all)
	}
}

// ip quotas (KIP-612) are /config/ips/<ip> in Kafka's layout, announced as
// ips/<ip>, and read by another broker; a Kafka-written znode naming the
// address otherwise than canonically still holds it.
func TestIPQuotasInKafkasLayout(t *testing.T) {
	srv := zks.Require(t)
	chroot := zktest.Chroot(t)
	zc, zother := zktest.Open(t, srv.Addr()+chroot), zktest.Open(t, srv.Addr()+chroot)
	c, other := quota.NewZKStore(zc), quota.NewZKStore(zother)
	w := zother.WatchConfigChanges()
	defer w.Stop()
	cursor := zother.ConfigChangesAfter(<-w.C)

	m := quota.NewManager()
	for _, e := range []quota.Entity{{IP: quota.Named("127.0.0.1")}, {IP: quota.DefaultComponent}} {
		if err := m.Alter(c, e, []quota.Op{{Key: quota.ConnectionCreationRate, Value: 5}}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/config/ips/127.0.0.1", "/config/ips/<default>"} {
		if data := zktest.Raw(t, srv.Addr(), chroot+p); string(data) != `{"version":1,"config":{"connection_creation_rate":"5"}}` {
			t.Fatalf("%s: %s", p, data)
		}
	}
	var announced []string
	deadline := time.After(10 * time.Second)
	for len(announced) < 2 {
		select {
		case names := <-w.C:
			changed, err := cursor.Read(names)
			if err != nil {
				t.Fatal(err)
			}
			if len(changed.Users) > 0 {
				t.Fatalf("an ip announced as a user: %v", changed.Users)
			}
			announced = append(announced, changed.Quotas...)
		case <-deadline:
			t.Fatalf("announced so far: %v", announced)
		}
	}
	slices.Sort(announced)
	if !slices.Equal(slices.Compact(announced), []string{"ips/127.0.0.1", "ips/<default>"}) {
		t.Fatalf("announced %v", announced)
	}
	remote := quota.NewManager()
	if err := remote.Reload(other, announced); err != nil {
		t.Fatal(err)
	}
	if !remote.LimitsConnections() || remote.Get(quota.Entity{IP: quota.Named("127.0.0.1")})[quota.ConnectionCreationRate] != 5 {
		t.Fatalf("other broker after Reload: %v", remote.Get(quota.Entity{IP: quota.Named("127.0.0.1")}))
	}
	// As kafka-configs.sh --entity-name 0:0:0:0:0:0:0:1 writes it.
	if _, err := zc.EditEntityConfig("ips/0:0:0:0:0:0:0:1", func(cfg map[string]string) error {
		cfg[quota.ConnectionCreationRate] = "3"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	loaded := quota.NewManager()
	if err := loaded.Load(other); err != nil {
		t.Fatal(err)
	}
	if q := loaded.Get(quota.Entity{IP: quota.Named("::1")}); q[quota.ConnectionCreationRate] != 3 {
		t.Fatalf("::1 as Kafka spells it: %v", q)
	}
	if refused, _ := loaded.AdmitConnection(netip.MustParseAddr("::1"), time.Unix(0, 0)); refused {
		t.Fatal("the first connection from ::1 refused")
	}
	if err := m.Alter(c, quota.Entity{IP: quota.Named("127.0.0.1")}, []quota.Op{{Key: quota.ConnectionCreationRate, Remove: true}}, false); err != nil {
		t.Fatal(err)
	}
	if all, _ := c.QuotaConfigs(); len(all) != 2 || all["ips/<default>"] == nil || all["ips/0:0:0:0:0:0:0:1"] == nil {
		t.Fatalf("after removing 127.0.0.1's quota: %v", all)
	}
}
