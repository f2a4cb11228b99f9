package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

var testSecret = []byte("node secret for tests")

// rfc7677 is RFC 7677's example exchange (SCRAM-SHA-256, user "user",
// password "pencil").
var rfc7677 = struct {
	salt                                  []byte
	clientFirst, serverNonce, serverFirst string
	clientFinal, serverFinal              string
}{
	salt:        mustB64("W22ZaJ0SNY7soEsUEjb6gQ=="),
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func rfcServer(t *testing.T) *ScramServer {
	t.Helper()
	c, err := ScramCredentialFromSalt(ScramSHA256, "pencil", rfc7677.salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	set := NewCredentialSet()
	set.SetUser("user", UserCredentials{ScramSHA256: c})
	s := NewScramServer(ScramSHA256, set, testSecret)
	s.serverNonce = func() (string, error) { return rfc7677.serverNonce, nil }
	return s
}

func TestScramServerReplaysRFC7677(t *testing.T) {
	s := rfcServer(t)
	out, done, err := s.Step([]byte(rfc7677.clientFirst))
	if err != nil || done {
		t.Fatalf("client-first: done %v, err %v", done, err)
	}
	if string(out) != rfc7677.serverFirst {
		t.Fatalf("server-first %q, want %q", out, rfc7677.serverFirst)
	}
	if s.User() != "" {
		t.Errorf("user %q before the proof", s.User())
	}
	out, done, err = s.Step([]byte(rfc7677.clientFinal))
	if err != nil || !done {
		t.Fatalf("client-final: done %v, err %v", done, err)
	}
	if string(out) != rfc7677.serverFinal {
		t.Fatalf("server-final %q, want %q", out, rfc7677.serverFinal)
	}
	if s.User() != "user" {
		t.Errorf("user %q", s.User())
	}
	if _, _, err := s.Step([]byte(rfc7677.clientFinal)); !errors.Is(err, ErrBadSaslMessage) {
		t.Errorf("a third step: %v, want ErrBadSaslMessage", err)
	}
}

func TestScramServerRefusesWrongProof(t *testing.T) {
	s := rfcServer(t)
	if _, _, err := s.Step([]byte(rfc7677.clientFirst)); err != nil {
		t.Fatal(err)
	}
	proof := mustB64("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	proof[0] ^= 1
	final := strings.Split(rfc7677.clientFinal, ",p=")[0] + ",p=" + base64.StdEncoding.EncodeToString(proof)
	if _, done, err := s.Step([]byte(final)); !errors.Is(err, ErrAuthenticationFailed) || done {
		t.Fatalf("wrong proof: done %v, err %v", done, err)
	}
	if s.User() != "" {
		t.Errorf("user %q after a failure", s.User())
	}
}

// scramScenario is one scripted client-final, after the RFC's client-first.
func TestScramServerRefusesBrokenClientFinals(t *testing.T) {
	nonce := "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	proof := "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	for name, final := range map[string]string{
		"other nonce":          "c=biws,r=rOprNGfwEbeRWgbNEkqOother," + proof,
		"client nonce only":    "c=biws,r=rOprNGfwEbeRWgbNEkqO," + proof,
		"nonce with a suffix":  "c=biws,r=" + nonce + "x," + proof,
		"binding not repeated": "c=eSws,r=" + nonce + "," + proof,
		"no proof":             "c=biws,r=" + nonce,
		"proof not base64":     "c=biws,r=" + nonce + ",p=!!",
		"short proof":          "c=biws,r=" + nonce + ",p=AAAA",
		"no binding":           "r=" + nonce + "," + proof,
		"empty":                "",
	} {
		s := rfcServer(t)
		if _, _, err := s.Step([]byte(rfc7677.clientFirst)); err != nil {
			t.Fatal(err)
		}
		_, done, err := s.Step([]byte(final))
		if err == nil || done {
			t.Errorf("%s: accepted", name)
		}
		if s.User() != "" {
			t.Errorf("%s: user %q", name, s.User())
		}
	}
}

func TestScramServerRefusesBrokenClientFirsts(t *testing.T) {
	for name, first := range map[string]string{
		"channel binding":      "p=tls-unique,,n=user,r=abc",
		"unknown flag":         "x,,n=user,r=abc",
		"no gs2 header":        "n=user,r=abc",
		"no nonce":             "n,,n=user",
		"empty nonce":          "n,,n=user,r=",
		"comma-free garbage":   "garbage",
		"bad escape":           "n,,n=us=er,r=abc",
		"empty user":           "n,,n=,r=abc",
		"mandatory extension":  "n,,m=ext,n=user,r=abc",
		"authzid without a=":   "n,user,n=user,r=abc",
		"nonce with a space":   "n,,n=user,r=a b",
		"other user's authzid": "n,a=admin,n=user,r=abc",
	} {
		s := rfcServer(t)
		if _, _, err := s.Step([]byte(first)); err == nil {
			t.Errorf("%s: %q accepted", name, first)
		}
		if _, done, _ := s.Step([]byte(rfc7677.clientFinal)); done {
			t.Errorf("%s: exchange went on after a refused client-first", name)
		}
	}
}

// An unknown user gets a server-first like any other (a salt stable per
// name, the usual iterations) and then fails like a wrong password.
func TestScramServerHidesUnknownUsers(t *testing.T) {
	first := func(user string) string {
		s := NewScramServer(ScramSHA256, NewCredentialSet(), testSecret)
		s.serverNonce = func() (string, error) { return "S", nil }
		out, _, err := s.Step([]byte("n,,n=" + user + ",r=C"))
		if err != nil {
			t.Fatalf("client-first for %s: %v", user, err)
		}
		return string(out)
	}
	a, b := first("ghost"), first("ghost")
	if a != b {
		t.Errorf("two server-firsts for one unknown user differ: %q, %q", a, b)
	}
	if a == first("phantom") {
		t.Errorf("two unknown users share a salt")
	}
	if !strings.HasPrefix(a, "r=CS,s=") || !strings.HasSuffix(a, ",i=4096") {
		t.Errorf("server-first for an unknown user %q", a)
	}
	err := franzExchange(t, NewScramServer(ScramSHA256, NewCredentialSet(), testSecret),
		scram.Auth{User: "ghost", Pass: "x"}.AsSha256Mechanism())
	if !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("unknown user: %v, want ErrAuthenticationFailed", err)
	}
}

func TestScramServerUnescapesUserNames(t *testing.T) {
	c, err := NewScramCredential(ScramSHA512, "pw", 4096)
	if err != nil {
		t.Fatal(err)
	}
	set := NewCredentialSet()
	set.SetUser("a,b=c", UserCredentials{ScramSHA512: c})
	s := NewScramServer(ScramSHA512, set, testSecret)
	if err := franzExchange(t, s, scram.Auth{User: "a,b=c", Pass: "pw"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("escaped user name: %v", err)
	}
	if s.User() != "a,b=c" {
		t.Errorf("user %q", s.User())
	}
	if got := EscapeSaslName("a,b=c"); got != "a=2Cb=3Dc" {
		t.Errorf("escape %q", got)
	}
}

// franz-go's own SCRAM and PLAIN clients against the servers.
func TestSaslExchangesWithFranzClients(t *testing.T) {
	set := NewCredentialSet()
	for user, m := range map[string]ScramMechanism{"alice": ScramSHA256, "bob": ScramSHA512} {
		c, err := NewScramCredential(m, user+"-pw", 4096)
		if err != nil {
			t.Fatal(err)
		}
		set.SetUser(user, UserCredentials{m: c})
	}
	cases := []struct {
		mech   string
		client sasl.Mechanism
		ok     bool
	}{
		{MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism(), true},
		{MechanismScramSHA256, scram.Auth{User: "alice", Pass: "bob-pw"}.AsSha256Mechanism(), false},
		{MechanismScramSHA256, scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha256Mechanism(), false}, // bob has SHA-512 only
		{MechanismScramSHA512, scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism(), true},
		{MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-pw", Zid: "alice"}.AsSha256Mechanism(), true},
		{MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-pw", Zid: "bob"}.AsSha256Mechanism(), false},
		{MechanismPlain, plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(), true},
		{MechanismPlain, plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism(), true},
		{MechanismPlain, plain.Auth{User: "bob", Pass: "alice-pw"}.AsMechanism(), false},
		{MechanismPlain, plain.Auth{User: "nobody", Pass: "x"}.AsMechanism(), false},
		{MechanismPlain, plain.Auth{User: "alice", Pass: "alice-pw", Zid: "alice"}.AsMechanism(), true},
		{MechanismPlain, plain.Auth{User: "alice", Pass: "alice-pw", Zid: "bob"}.AsMechanism(), false},
	}
	for _, c := range cases {
		ex, err := NewSaslExchange(c.mech, set, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		err = franzExchange(t, ex, c.client)
		if c.ok && (err != nil || ex.User() == "") {
			t.Errorf("%s: refused: %v", c.mech, err)
		}
		if !c.ok && (!errors.Is(err, ErrAuthenticationFailed) || ex.User() != "") {
			t.Errorf("%s: %v, user %q; want ErrAuthenticationFailed", c.mech, err, ex.User())
		}
	}
	if _, err := NewSaslExchange("GSSAPI", set, testSecret); err == nil {
		t.Error("GSSAPI accepted")
	}
}

func TestPlainServerRefusesMalformedMessages(t *testing.T) {
	for _, msg := range []string{"", "alice", "\x00alice", "\x00alice\x00", "\x00\x00pw", "a\x00b\x00c\x00d",
		"\x00alice\x00" + strings.Repeat("x", MaxSaslTokenBytes)} {
		p := &PlainServer{creds: NewCredentialSet(), secret: testSecret}
		if _, _, err := p.Step([]byte(msg)); !errors.Is(err, ErrBadSaslMessage) {
			t.Errorf("%q: %v, want ErrBadSaslMessage", msg, err)
		}
	}
}

// franzExchange runs client against server in memory, the server's
// answers fed back as the client's challenges.
func franzExchange(t *testing.T, server SaslExchange, client sasl.Mechanism) error {
	t.Helper()
	sess, token, err := client.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		answer, done, err := server.Step(token)
		if err != nil {
			return err
		}
		clientDone, next, err := sess.Challenge(answer)
		if err != nil {
			t.Fatalf("client refused the server's answer %q: %v", answer, err)
		}
		if done {
			if !clientDone && !bytes.Equal(next, nil) {
				t.Fatalf("server done, client wants more")
			}
			return nil
		}
		token = next
	}
	t.Fatal("exchange did not end")
	return nil
}

// One SCRAM exchange costs the server two HMACs and a hash (the client
// pays PBKDF2); PLAIN costs the server PBKDF2 at the user's iterations.
func BenchmarkScramServerExchange(b *testing.B) {
	c, _ := ScramCredentialFromSalt(ScramSHA256, "pencil", rfc7677.salt, 4096)
	set := NewCredentialSet()
	set.SetUser("user", UserCredentials{ScramSHA256: c})
	b.ReportAllocs()
	for b.Loop() {
		s := NewScramServer(ScramSHA256, set, testSecret)
		s.serverNonce = func() (string, error) { return rfc7677.serverNonce, nil }
		s.Step([]byte(rfc7677.clientFirst))
		if _, done, err := s.Step([]byte(rfc7677.clientFinal)); !done || err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainServer(b *testing.B) {
	c, _ := NewScramCredential(ScramSHA256, "pw", 4096)
	set := NewCredentialSet()
	set.SetUser("alice", UserCredentials{ScramSHA256: c})
	b.ReportAllocs()
	for b.Loop() {
		p := &PlainServer{creds: set, secret: testSecret}
		if _, done, err := p.Step([]byte("\x00alice\x00pw")); !done || err != nil {
			b.Fatal(err)
		}
	}
}
