// Package jwt checks JSON Web Tokens (RFC 7519) signed with an asymmetric
// key from a JWKS file (RFC 7517): RS256/384/512, PS256/384/512,
// ES256/384/512 and EdDSA. Symmetric (HS*) and unsigned ("none") tokens
// are refused: the HTTP gateway holds only public keys, so a token it
// accepts was issued by whoever holds the private one.
//
// Verification is plain code over bytes and a key set; the caller reads
// the JWKS file and decides what to do with the claims.
package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// MaxTokenBytes bounds a token before anything is decoded: real ones are
// a few hundred bytes to a few KiB.
const MaxTokenBytes = 16 << 10

// ErrInvalid is wrapped by every refusal.
var ErrInvalid = errors.New("invalid token")

// KeySet is the public keys of a JWKS document, by key id.
type KeySet struct {
	keys map[string]jwk
	// anyKid: keys without a kid, tried for tokens without one.
	unnamed []jwk
}

type jwk struct {
	kid, alg string // alg may be empty: any of the key type's
	pub      crypto.PublicKey
}

// ParseKeySet reads a JWKS document ({"keys":[…]}). Keys of types or
// curves it does not know, and private parts, are ignored; a document
// without a usable key is an error.
func ParseKeySet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	ks := &KeySet{keys: map[string]jwk{}}
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := publicKey(k.Kty, k.N, k.E, k.Crv, k.X, k.Y)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %w", i, k.Kid, err)
		}
		if pub == nil {
			continue
		}
		key := jwk{kid: k.Kid, alg: k.Alg, pub: pub}
		if k.Kid == "" {
			ks.unnamed = append(ks.unnamed, key)
		} else {
			ks.keys[k.Kid] = key
		}
	}
	if len(ks.keys) == 0 && len(ks.unnamed) == 0 {
		return nil, errors.New("JWKS: no signing key (RSA, EC P-256/384/521 or Ed25519)")
	}
	return ks, nil
}

func publicKey(kty, n, e, crv, x, y string) (crypto.PublicKey, error) {
	switch kty {
	case "RSA":
		nb, err1 := b64(n)
		eb, err2 := b64(e)
		if err := errors.Join(err1, err2); err != nil || len(nb) == 0 || len(eb) == 0 || len(eb) > 4 {
			return nil, errors.New("bad RSA modulus or exponent")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: int(new(big.Int).SetBytes(eb).Int64())}
		if pub.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key of %d bits: at least 2048 wanted", pub.N.BitLen())
		}
		return pub, nil
	case "EC":
		var curve elliptic.Curve
		switch crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, nil
		}
		xb, err1 := b64(x)
		yb, err2 := b64(y)
		size := (curve.Params().BitSize + 7) / 8
		if errors.Join(err1, err2) != nil || len(xb) != size || len(yb) != size {
			return nil, errors.New("bad EC point")
		}
		// Uncompressed SEC 1 encoding, which ecdsa checks is on the curve.
		point := append(append([]byte{4}, xb...), yb...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return nil, fmt.Errorf("EC point: %w", err)
		}
		return pub, nil
	case "OKP":
		if crv != "Ed25519" {
			return nil, nil
		}
		xb, err := b64(x)
		if err != nil || len(xb) != ed25519.PublicKeySize {
			return nil, errors.New("bad Ed25519 key")
		}
		return ed25519.PublicKey(xb), nil
	}
	return nil, nil
}

// Claims are the registered claims a gateway checks, and every claim for
// the caller to pick the principal from.
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	ExpiresAt time.Time // zero: no exp claim
	NotBefore time.Time
	All       map[string]any
}

// Verify checks token's signature against the key set and its time
// claims against now (with leeway for clocks apart): a token without exp
// is refused, since a leaked one would never end. It does not check the
// issuer or audience: Claims carries them for the caller.
func (ks *KeySet) Verify(token string, now time.Time, leeway time.Duration) (Claims, error) {
	if len(token) > MaxTokenBytes {
		return Claims{}, fmt.Errorf("%w: %d bytes", ErrInvalid, len(token))
	}
	h, rest, ok := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(s, ".") {
		return Claims{}, fmt.Errorf("%w: not three dot-separated parts", ErrInvalid)
	}
	hb, err := b64(h)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	var header struct {
		Alg  string `json:"alg"`
		Kid  string `json:"kid"`
		Crit []any  `json:"crit"`
	}
	if err := json.Unmarshal(hb, &header); err != nil {
		return Claims{}, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	if len(header.Crit) > 0 {
		return Claims{}, fmt.Errorf("%w: critical header extensions are not understood", ErrInvalid)
	}
	sig, err := b64(s)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: signature: %v", ErrInvalid, err)
	}
	keys := ks.unnamed
	if header.Kid != "" {
		k, ok := ks.keys[header.Kid]
		if !ok {
			return Claims{}, fmt.Errorf("%w: unknown key id %q", ErrInvalid, header.Kid)
		}
		keys = []jwk{k}
	}
	signed := []byte(token[:len(h)+1+len(p)])
	verified := false
	for _, k := range keys {
		if k.alg != "" && k.alg != header.Alg {
			continue
		}
		if verifySignature(header.Alg, k.pub, signed, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return Claims{}, fmt.Errorf("%w: the signature (alg %q) does not match any key", ErrInvalid, header.Alg)
	}
	pb, err := b64(p)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrInvalid, err)
	}
	c, err := parseClaims(pb)
	if err != nil {
		return Claims{}, err
	}
	switch {
	case c.ExpiresAt.IsZero():
		return Claims{}, fmt.Errorf("%w: no exp claim", ErrInvalid)
	case !now.Before(c.ExpiresAt.Add(leeway)):
		return Claims{}, fmt.Errorf("%w: expired at %s", ErrInvalid, c.ExpiresAt.UTC().Format(time.RFC3339))
	case !c.NotBefore.IsZero() && now.Add(leeway).Before(c.NotBefore):
		return Claims{}, fmt.Errorf("%w: not valid before %s", ErrInvalid, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return c, nil
}

func parseClaims(payload []byte) (Claims, error) {
	var all map[string]any
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&all); err != nil {
		return Claims{}, fmt.Errorf("%w: claims: %v", ErrInvalid, err)
	}
	c := Claims{All: all}
	var err error
	str := func(name string) string {
		v, ok := all[name]
		if !ok {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			err = errors.Join(err, fmt.Errorf("%w: claim %q is not a string", ErrInvalid, name))
		}
		return s
	}
	at := func(name string) time.Time {
		v, ok := all[name]
		if !ok {
			return time.Time{}
		}
		n, ok := v.(json.Number)
		f, ferr := n.Float64()
		if !ok || ferr != nil || f < 0 || f > 1<<40 {
			err = errors.Join(err, fmt.Errorf("%w: claim %q is not a time", ErrInvalid, name))
			return time.Time{}
		}
		return time.Unix(int64(f), 0)
	}
	c.Issuer, c.Subject = str("iss"), str("sub")
	c.ExpiresAt, c.NotBefore = at("exp"), at("nbf")
	switch aud := all["aud"].(type) {
	case nil:
	case string:
		c.Audience = []string{aud}
	case []any:
		for _, a := range aud {
			s, ok := a.(string)
			if !ok {
				return Claims{}, fmt.Errorf("%w: claim \"aud\" holds a non-string", ErrInvalid)
			}
			c.Audience = append(c.Audience, s)
		}
	default:
		return Claims{}, fmt.Errorf("%w: claim \"aud\" is neither a string nor a list", ErrInvalid)
	}
	return c, err
}

func verifySignature(alg string, pub crypto.PublicKey, signed, sig []byte) bool {
	var h crypto.Hash
	switch alg {
	case "RS256", "PS256", "ES256":
		h = crypto.SHA256
	case "RS384", "PS384", "ES384":
		h = crypto.SHA384
	case "RS512", "PS512", "ES512":
		h = crypto.SHA512
	case "EdDSA":
		k, ok := pub.(ed25519.PublicKey)
		return ok && ed25519.Verify(k, signed, sig)
	default:
		return false // none, HS*, anything unknown
	}
	digest := sum(h, signed)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if alg[0] == 'R' {
			return rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		}
		if alg[0] == 'P' {
			return rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		// The curve goes with the hash (RFC 7518 3.4): P-256/SHA-256 …
		if alg[0] != 'E' || len(sig) != 2*size || size != map[crypto.Hash]int{crypto.SHA256: 32, crypto.SHA384: 48, crypto.SHA512: 66}[h] {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}

func sum(h crypto.Hash, b []byte) []byte {
	switch h {
	case crypto.SHA384:
		d := sha512.Sum384(b)
		return d[:]
	case crypto.SHA512:
		d := sha512.Sum512(b)
		return d[:]
	}
	d := sha256.Sum256(b)
	return d[:]
}

// b64 decodes base64url without padding, as JOSE writes it.
func b64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
