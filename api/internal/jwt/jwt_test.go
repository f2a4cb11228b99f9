package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// signer makes tokens the way an identity provider would, for the tests.
type signer struct {
	kid, alg string
	key      crypto.Signer
}

func (s signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": s.alg, "kid": s.kid, "typ": "JWT"})
	payload, _ := json.Marshal(claims)
	signed := enc(header) + "." + enc(payload)
	var sig []byte
	var err error
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		d := sha256.Sum256([]byte(signed))
		if s.alg == "PS256" {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		}
	case *ecdsa.PrivateKey:
		d := sha256.Sum256([]byte(signed))
		var r, ss *big.Int
		r, ss, err = ecdsa.Sign(rand.Reader, k, d[:])
		sig = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...)
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(signed))
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(sig)
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jwksOf(t testing.TB, signers ...signer) []byte {
	t.Helper()
	var keys []map[string]string
	for _, s := range signers {
		k := map[string]string{"kid": s.kid, "alg": s.alg, "use": "sig"}
		switch pub := s.key.Public().(type) {
		case *rsa.PublicKey:
			k["kty"], k["n"], k["e"] = "RSA", enc(pub.N.Bytes()), enc(big.NewInt(int64(pub.E)).Bytes())
		case *ecdsa.PublicKey:
			b, _ := pub.Bytes()
			k["kty"], k["crv"], k["x"], k["y"] = "EC", "P-256", enc(b[1:33]), enc(b[33:])
		case ed25519.PublicKey:
			k["kty"], k["crv"], k["x"] = "OKP", "Ed25519", enc(pub)
		}
		keys = append(keys, k)
	}
	doc, _ := json.Marshal(map[string]any{"keys": keys})
	return doc
}

func testSigners(t testing.TB) (rs, ps, es, ed signer) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, dk, _ := ed25519.GenerateKey(rand.Reader)
	return signer{"rsa-1", "RS256", rk}, signer{"rsa-pss", "PS256", rk}, signer{"ec-1", "ES256", ek}, signer{"ed-1", "EdDSA", dk}
}

func TestVerifyAcceptsEachAlgorithmAndRefusesForgeries(t *testing.T) {
	rs, ps, es, ed := testSigners(t)
	ks, err := ParseKeySet(jwksOf(t, rs, ps, es, ed))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good := map[string]any{"iss": "https://idp.example", "sub": "alice", "aud": []string{"ferry"}, "exp": now.Unix() + 300}
	for _, s := range []signer{rs, ps, es, ed} {
		c, err := ks.Verify(s.sign(t, good), now, 0)
		if err != nil || c.Subject != "alice" || c.Issuer != "https://idp.example" || len(c.Audience) != 1 || c.Audience[0] != "ferry" {
			t.Errorf("%s: %+v %v", s.alg, c, err)
		}
	}

	other, _, _, _ := testSigners(t)
	other.kid = rs.kid // same key id, another key: a forged signature
	tokenOf := func(s signer, claims map[string]any) string { return s.sign(t, claims) }
	tampered := func() string {
		parts := strings.Split(tokenOf(rs, good), ".")
		p, _ := json.Marshal(map[string]any{"sub": "admin", "exp": now.Unix() + 300})
		return parts[0] + "." + enc(p) + "." + parts[2]
	}
	unsigned := func() string {
		h, _ := json.Marshal(map[string]string{"alg": "none", "kid": rs.kid})
		p, _ := json.Marshal(good)
		return enc(h) + "." + enc(p) + "."
	}
	// HS256 keyed with the RSA public key: the classic algorithm confusion.
	confused := func() string {
		h, _ := json.Marshal(map[string]string{"alg": "HS256", "kid": rs.kid})
		p, _ := json.Marshal(good)
		signed := enc(h) + "." + enc(p)
		mac := hmac.New(sha256.New, rs.key.Public().(*rsa.PublicKey).N.Bytes())
		mac.Write([]byte(signed))
		return signed + "." + enc(mac.Sum(nil))
	}
	for name, token := range map[string]string{
		"forged signature":  tokenOf(other, good),
		"tampered payload":  tampered(),
		"alg none":          unsigned(),
		"HS256 confusion":   confused(),
		"expired":           tokenOf(rs, map[string]any{"sub": "alice", "exp": now.Unix() - 1}),
		"not yet valid":     tokenOf(es, map[string]any{"sub": "alice", "exp": now.Unix() + 600, "nbf": now.Unix() + 300}),
		"no exp":            tokenOf(ed, map[string]any{"sub": "alice"}),
		"unknown kid":       tokenOf(signer{"nope", "RS256", rs.key}, good),
		"two parts":         "a.b",
		"oversized":         strings.Repeat("a", MaxTokenBytes+1),
		"bad time claim":    tokenOf(rs, map[string]any{"sub": "alice", "exp": "tomorrow"}),
		"wrong alg for key": tokenOf(signer{rs.kid, "ES256", es.key}, good),
	} {
		if _, err := ks.Verify(token, now, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	// Leeway covers clocks a little apart, both ways.
	if _, err := ks.Verify(tokenOf(rs, map[string]any{"sub": "a", "exp": now.Unix() - 10}), now, 30*time.Second); err != nil {
		t.Errorf("expired 10 s ago with 30 s leeway: %v", err)
	}
}

func TestParseKeySetRefusesWeakOrBrokenKeys(t *testing.T) {
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	for name, doc := range map[string]string{
		"not JSON":   `{`,
		"no keys":    `{"keys":[]}`,
		"weak RSA":   string(jwksOf(t, signer{"s", "RS256", small})),
		"off curve":  `{"keys":[{"kty":"EC","crv":"P-256","x":"` + enc(make([]byte, 32)) + `","y":"` + enc(make([]byte, 32)) + `"}]}`,
		"only HMAC":  `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`,
		"bad base64": `{"keys":[{"kty":"RSA","n":"!!","e":"AQAB"}]}`,
	} {
		if _, err := ParseKeySet([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzVerify(f *testing.F) {
	rs, _, es, _ := testSigners(f)
	ks, err := ParseKeySet(jwksOf(f, rs, es))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Add(rs.sign(f, map[string]any{"sub": "a", "exp": now.Unix() + 60}))
	f.Add(es.sign(f, map[string]any{"sub": "a", "aud": "x", "exp": now.Unix() + 60, "nbf": 1}))
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ks.Verify(token, now, time.Minute)
		if err == nil && c.ExpiresAt.IsZero() {
			t.Fatalf("accepted a token without exp: %q", token)
		}
	})
}

func FuzzParseKeySet(f *testing.F) {
	rs, _, es, ed := testSigners(f)
	f.Add(jwksOf(f, rs, es, ed))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-521","x":"","y":""}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		ParseKeySet(doc) // must not panic
	})
}
