package auth

import (
	"encoding/base64"
	"testing"
)

func TestScramCredentialVerifiesOnlyItsPassword(t *testing.T) {
	for _, m := range []ScramMechanism{ScramSHA256, ScramSHA512} {
		c, err := NewScramCredential(m, "s3cret", DefaultScramIterations)
		if err != nil {
			t.Fatal(err)
		}
		if !c.VerifyPassword("s3cret") {
			t.Errorf("%s: the right password is refused", m)
		}
		if c.VerifyPassword("s3cret ") || c.VerifyPassword("") {
			t.Errorf("%s: a wrong password is accepted", m)
		}
		if len(c.StoredKey) != m.Hash()().Size() || len(c.ServerKey) != m.Hash()().Size() {
			t.Errorf("%s: key sizes %d/%d", m, len(c.StoredKey), len(c.ServerKey))
		}
	}
}

func TestScramCredentialRefusesIterationsOutsideKafkasBounds(t *testing.T) {
	for _, n := range []int{0, MinScramIterations - 1, MaxScramIterations + 1} {
		if _, err := NewScramCredential(ScramSHA256, "p", n); err == nil {
			t.Errorf("%d iterations accepted", n)
		}
	}
}

// RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil", salt
// "W22ZaJ0SNY7soEsUEjb6gQ==", 4096 iterations. The RFC gives the proofs,
// not the keys; the stored key here is H(ClientKey) from its exchange.
func TestScramCredentialMatchesRFC7677(t *testing.T) {
	salt := []byte{0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e, 0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81}
	c, err := ScramCredentialFromSalt(ScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	// ServerSignature from the RFC is HMAC(ServerKey, AuthMessage).
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	sig := hmacSum(ScramSHA256, c.ServerKey, []byte(authMessage))
	const want = "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	if got := b64(sig); got != want {
		t.Errorf("server signature %s, want %s (RFC 7677)", got, want)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
