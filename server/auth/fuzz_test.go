package auth

import (
	"testing"
)

// The parsers and the exchanges take untrusted client tokens: none may
// panic, and a SCRAM exchange fed garbage never authenticates.
func FuzzSaslMessages(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,a=user,n=user,r=abc,ext=1"), []byte("c=bixhPXVzZXIs,r=abcS,p=AAAA"))
	f.Add([]byte("p=tls-unique,,n=u,r=x"), []byte(""))
	f.Add([]byte("y,,n=a=2Cb=3D,r=x"), []byte("c=eSws,r=xS,e=1,p="))
	f.Add([]byte("\x00alice\x00pw"), []byte("alice\x00alice\x00pw"))
	creds := NewCredentialSet()
	c, err := ScramCredentialFromSalt(ScramSHA256, "pencil", rfc7677.salt, 4096)
	if err != nil {
		f.Fatal(err)
	}
	creds.SetUser("user", UserCredentials{ScramSHA256: c})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		ParseClientFirst(string(first))
		ParseClientFinal(string(final))
		ParsePlain(first)
		unescapeSaslName(string(first))
		s := NewScramServer(ScramSHA256, creds, testSecret)
		s.serverNonce = func() (string, error) { return "S", nil }
		if _, _, err := s.Step(first); err != nil {
			return
		}
		if _, done, err := s.Step(final); done || err == nil {
			// A proof needs the password: random bytes cannot make one.
			t.Fatalf("authenticated with %q / %q", first, final)
		}
	})
}

// Verifiers read from ZooKeeper or the data dir are untrusted too: a
// parsed one formats back to something that parses to the same verifier.
func FuzzScramCredential(f *testing.F) {
	c, _ := ScramCredentialFromSalt(ScramSHA256, "pencil", rfc7677.salt, 4096)
	f.Add(true, FormatScramCredential(c))
	f.Add(false, "salt=AAAA,stored_key=,server_key=,iterations=-1")
	f.Add(true, "iterations=4096,salt=QQ==,extra=1")
	f.Fuzz(func(t *testing.T, sha256 bool, s string) {
		m := ScramSHA512
		if sha256 {
			m = ScramSHA256
		}
		c, err := ParseScramCredential(m, s)
		if err != nil {
			return
		}
		back, err := ParseScramCredential(m, FormatScramCredential(c))
		if err != nil || string(back.StoredKey) != string(c.StoredKey) || back.Iterations != c.Iterations {
			t.Fatalf("%q does not round-trip: %v", s, err)
		}
	})
}
