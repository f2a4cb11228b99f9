package kafka

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/server/auth"
)

func newUsersServer(t *testing.T) (*testServer, *auth.FileStore) {
	store, err := auth.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, func(c *Config) { c.Users = store }), store
}

// Users created with kadm (salted client-side, as Kafka's tool does) are
// described without secrets, authenticate on a SASL listener sharing the
// store, and are gone once deleted.
func TestScramUsersAreCreatedDescribedAndDeleted(t *testing.T) {
	ts, store := newUsersServer(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-pw"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-pw"},
	})
	if err != nil || altered["alice"].Err != nil || altered["bob"].Err != nil {
		t.Fatalf("upsert: %v %+v", err, altered)
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 2 || len(described["alice"].CredInfos) != 2 || described["alice"].CredInfos[1].Iterations != 8192 {
		t.Fatalf("described %+v", described)
	}
	if c, ok := store.Lookup("bob", auth.ScramSHA512); !ok || !c.VerifyPassword("bob-pw") {
		t.Fatal("bob's stored verifier does not check his password")
	}

	sasl := newTestServer(t, func(c *Config) { c.SecurityProtocol, c.Credentials = auth.SASLPlaintext, store })
	c := sasl.dial(t)
	if resp := authenticate(t, c, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(), 1); resp.ErrorCode != 0 {
		t.Fatalf("alice created through kadm: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	c = sasl.dial(t)
	if resp := authenticate(t, c, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(), 1); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("alice's deleted SHA-512: code %d", resp.ErrorCode)
	}
	d, _ := adm.DescribeUserSCRAMs(ctx, "alice")
	if len(d["alice"].CredInfos) != 1 || d["alice"].CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("alice after one deletion: %+v", d["alice"])
	}
}

func TestScramUserErrorsAreKafkas(t *testing.T) {
	ts, store := newUsersServer(t)
	existing, _ := auth.NewScramCredential(auth.ScramSHA256, "x", 4096)
	store.Upsert("carol", existing)
	c := ts.dial(t)

	describe := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"ghost", "carol", "carol"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		describe.Users = append(describe.Users, u)
	}
	dr := do[*kmsg.DescribeUserSCRAMCredentialsResponse](c, describe, 0)
	if len(dr.Results) != 2 || dr.Results[0].ErrorCode != kerr.ResourceNotFound.Code ||
		*dr.Results[0].ErrorMessage != "Attempt to describe a user credential that does not exist: ghost" ||
		dr.Results[1].ErrorCode != kerr.DuplicateResource.Code {
		t.Errorf("describe results %+v", dr.Results)
	}

	salted := make([]byte, 32)
	up := func(name string, m int8, iterations int32, salt, saltedPw []byte) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, m, iterations, salt, saltedPw
		return u
	}
	del := func(name string, m int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, m
		return d
	}
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("", 1, 4096, []byte("s"), salted),
		up("few", 1, 4095, []byte("s"), salted),
		up("many", 1, 16385, []byte("s"), salted),
		up("mech", 3, 4096, []byte("s"), salted),
		up("twice", 1, 4096, []byte("s"), salted),
		up("twice", 1, 4096, []byte("s"), salted),
		up("slash/name", 1, 4096, []byte("s"), salted),
		up("nosalt", 1, 4096, nil, salted),
		up("partial", 1, 4096, []byte("s"), salted), // valid, but its deletion below is not
		up("fine", 2, 4096, []byte("s"), make([]byte, 64)),
	}
	alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("ghost", 1), del("partial", 2), del("carol", 1)}
	ar := do[*kmsg.AlterUserSCRAMCredentialsResponse](c, alter, 0)
	want := map[string]int16{
		"": kerr.UnacceptableCredential.Code, "few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code,
		"mech": kerr.UnsupportedSaslMechanism.Code, "twice": kerr.DuplicateResource.Code,
		"slash/name": kerr.UnacceptableCredential.Code, "nosalt": kerr.UnacceptableCredential.Code,
		"ghost": kerr.ResourceNotFound.Code, "partial": kerr.ResourceNotFound.Code, "carol": 0, "fine": 0,
	}
	if len(ar.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(ar.Results), len(want), ar.Results)
	}
	for _, r := range ar.Results {
		if code, ok := want[r.User]; !ok || r.ErrorCode != code {
			t.Errorf("user %q: code %d (%v), want %d", r.User, r.ErrorCode, r.ErrorMessage, code)
		}
	}
	if got := store.Users(); len(got) != 1 || got[0] != "fine" {
		t.Errorf("users after the alteration %v, want [fine] (carol deleted, partial not created)", got)
	}
	if _, ok := store.Lookup("partial", auth.ScramSHA256); ok {
		t.Error("partial's upsert applied although its deletion failed")
	}
}

func TestScramUserApisWithoutStore(t *testing.T) {
	ts := newTestServer(t)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	defer cl.Close()
	_, err := kadm.NewClient(cl).DescribeUserSCRAMs(context.Background())
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Errorf("describe without a store: %v", err)
	}
}
