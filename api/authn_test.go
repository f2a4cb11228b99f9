package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// memCredentials is a credential store in memory, changed by the tests.
type memCredentials struct {
	mu    sync.Mutex
	users map[string]auth.ScramCredential
}

func (m *memCredentials) Lookup(user string, mech auth.ScramMechanism) (auth.ScramCredential, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.users[user]
	return c, ok && c.Mechanism == mech
}

func (m *memCredentials) set(t *testing.T, user, password string, mech auth.ScramMechanism) {
	t.Helper()
	c, err := auth.NewScramCredential(mech, password, auth.MinScramIterations)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users == nil {
		m.users = map[string]auth.ScramCredential{}
	}
	m.users[user] = c
}

func (m *memCredentials) remove(user string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, user)
}

type memTokens map[string]auth.APIToken

func (m memTokens) LookupAPIToken(id string) (auth.APIToken, bool) { t, ok := m[id]; return t, ok }

var testSessionKey = []byte("0123456789abcdef0123456789abcdef")

func securedEnv(t *testing.T, a HTTPAuth) *testEnv {
	t.Helper()
	return newTestEnv(t, func(_ *server.Config, c *Config) { c.Auth = &a })
}

// concrete fills a route pattern's parameters with sample values.
func concrete(pattern string) string {
	pattern = strings.ReplaceAll(pattern, "/*/", "/")
	pattern = regexp.MustCompile(`\{partition\}|\{version\}|\{id\}`).ReplaceAllString(pattern, "1")
	pattern = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(pattern, "x")
	return strings.ReplaceAll(pattern, "*", "x")
}

// routesToWalk is every method and path of the router and of the OpenAPI
// spec.
func routesToWalk(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	g, err := New(nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	routes := g.Handler().(chi.Routes)
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out[method+" "+concrete(route)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "openapi", "openapi3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	for path, ops := range spec.Paths {
		for method := range ops {
			if m := strings.ToUpper(method); m != "PARAMETERS" {
				out[m+" "+concrete(path)] = true
			}
		}
	}
	if len(out) < 60 {
		t.Fatalf("only %d routes found to walk", len(out))
	}
	return out
}

// With authentication on, every route of the router and every path of
// the OpenAPI spec answers 401 with a challenge to a request without
// credentials and to one with wrong ones, except the health checks, the
// admin page's static files and the login.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "right", auth.ScramSHA256)
	e := securedEnv(t, HTTPAuth{Credentials: creds, Tokens: memTokens{}, SessionKey: testSessionKey})
	public := map[string]bool{"GET /healthz": true, "GET /readyz": true, "POST /auth/login": true, "GET /ui": true, "GET /ui/x": true, "HEAD /ui": true, "HEAD /ui/x": true}
	walked := 0
	for route := range routesToWalk(t) {
		method, path, _ := strings.Cut(route, " ")
		for _, creds := range []string{"", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:wrong")), "Bearer ferry_x_y"} {
			a := e.request(t, method, path, map[string]string{"Authorization": creds, "Content-Type": "application/json"}, "{}")
			if public[route] {
				if a.status == http.StatusUnauthorized {
					t.Errorf("%s (credentials %q) answered 401; it must answer without credentials", route, creds)
				}
				continue
			}
			if a.status != http.StatusUnauthorized {
				t.Errorf("%s (credentials %q): %d %s, want 401", route, creds, a.status, a.body)
				continue
			}
			a.wantError(t, http.StatusUnauthorized, codeUnauthenticated)
			walked++
		}
	}
	// The challenge names what this node accepts.
	res, err := http.Get(e.url + "/topics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Values("WWW-Authenticate"); len(got) != 2 || !strings.HasPrefix(got[0], "Basic realm=") || !strings.HasPrefix(got[1], "Bearer realm=") {
		t.Errorf("WWW-Authenticate %q: want a Basic and a Bearer challenge", got)
	}
	t.Logf("%d requests answered 401", walked)
}

func TestBasicAuthUsesTheSCRAMVerifier(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "s3cret", auth.ScramSHA512)
	creds.set(t, "bob", "hunter2", auth.ScramSHA256)
	e := securedEnv(t, HTTPAuth{Credentials: creds, SessionKey: testSessionKey})
	basic := func(user, pw string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))}
	}
	for user, pw := range map[string]string{"alice": "s3cret", "bob": "hunter2"} {
		for range 3 { // the cached outcome answers alike
			a := e.request(t, "GET", "/auth/whoami", basic(user, pw), "")
			var who sessionAnswer
			a.decode(t, &who)
			if a.status != 200 || who.Principal != "User:"+user || !who.Authenticated {
				t.Fatalf("%s: %d %s", user, a.status, a.body)
			}
		}
	}
	for name, h := range map[string]map[string]string{
		"wrong password":    basic("alice", "s3cre"),
		"unknown user":      basic("mallory", "s3cret"),
		"another's":         basic("bob", "s3cret"),
		"malformed":         {"Authorization": "Basic !!!"},
		"unsupported":       {"Authorization": "Digest x"},
		"bearer, no tokens": {"Authorization": "Bearer abc"},
	} {
		t.Run(name, func(t *testing.T) {
			e.request(t, "GET", "/topics", h, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
		})
	}
	// A changed password: the old one, cached as good, is refused at once.
	creds.set(t, "alice", "n3w", auth.ScramSHA512)
	e.request(t, "GET", "/topics", basic("alice", "s3cret"), "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	if a := e.request(t, "GET", "/topics", basic("alice", "n3w"), ""); a.status != 200 {
		t.Fatalf("new password: %d %s", a.status, a.body)
	}
	creds.remove("bob")
	e.request(t, "GET", "/topics", basic("bob", "hunter2"), "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
}

func TestAPITokens(t *testing.T) {
	secret := "Zm9vYmFyYmF6cXV4"
	now := time.Unix(1_900_000_000, 0)
	tokens := memTokens{
		"ci":  auth.APIToken{ID: "ci", User: "deployer", Hash: sha256.Sum256([]byte(secret))},
		"old": auth.APIToken{ID: "old", User: "deployer", Hash: sha256.Sum256([]byte(secret)), ExpiresAt: now.Add(-time.Second)},
	}
	e := securedEnv(t, HTTPAuth{Tokens: tokens, SessionKey: testSessionKey, Now: func() time.Time { return now }})
	a := e.request(t, "GET", "/auth/whoami", map[string]string{"Authorization": "Bearer " + APITokenPrefix + "ci_" + secret}, "")
	var who sessionAnswer
	a.decode(t, &who)
	if a.status != 200 || who.Principal != "User:deployer" {
		t.Fatalf("token: %d %s", a.status, a.body)
	}
	for _, bad := range []string{APITokenPrefix + "ci_" + secret + "x", APITokenPrefix + "old_" + secret, APITokenPrefix + "nope_" + secret, APITokenPrefix + "ci"} {
		e.request(t, "GET", "/topics", map[string]string{"Authorization": "Bearer " + bad}, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	}
}

// jwtSigner signs ES256 tokens and writes its JWKS file.
type jwtSigner struct {
	key *ecdsa.PrivateKey
	kid string
}

func newJWTSigner(t *testing.T, kid string) jwtSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jwtSigner{k, kid}
}

func (s jwtSigner) jwks(t *testing.T) []byte {
	b, _ := s.key.PublicKey.Bytes()
	enc := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "crv": "P-256", "kid": s.kid, "x": enc(b[1:33]), "y": enc(b[33:])}}})
	return doc
}

func (s jwtSigner) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": s.kid})
	p, _ := json.Marshal(claims)
	signed := enc(h) + "." + enc(p)
	d := sha256.Sum256([]byte(signed))
	r, ss, err := ecdsa.Sign(rand.Reader, s.key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...))
}

func TestJWTBearer(t *testing.T) {
	first, second := newJWTSigner(t, "k1"), newJWTSigner(t, "k2")
	keysFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(keysFile, first.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := securedEnv(t, HTTPAuth{SessionKey: testSessionKey, Now: clock, JWT: &JWTConfig{KeysFile: keysFile,
		Issuer: "https://idp.test", Audience: "ferry", PrincipalClaim: "preferred_username"}})
	claims := func(mut func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "https://idp.test", "aud": "ferry", "sub": "id-123", "preferred_username": "carol", "exp": clock().Add(time.Minute).Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	a := e.request(t, "GET", "/auth/whoami", bearer(first.token(t, claims(nil))), "")
	var who sessionAnswer
	a.decode(t, &who)
	if a.status != 200 || who.Principal != "User:carol" {
		t.Fatalf("valid JWT: %d %s", a.status, a.body)
	}
	for name, tok := range map[string]string{
		"expired":         first.token(t, claims(func(c map[string]any) { c["exp"] = clock().Add(-time.Hour).Unix() })),
		"forged":          jwtSigner{second.key, "k1"}.token(t, claims(nil)),
		"other issuer":    first.token(t, claims(func(c map[string]any) { c["iss"] = "https://evil.test" })),
		"other audience":  first.token(t, claims(func(c map[string]any) { c["aud"] = "billing" })),
		"no user claim":   first.token(t, claims(func(c map[string]any) { delete(c, "preferred_username") })),
		"not yet rotated": second.token(t, claims(nil)),
	} {
		res := e.request(t, "GET", "/topics", bearer(tok), "")
		if res.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	// Rotation: the file now holds the second key; once rechecked, its
	// tokens pass and the first key's no longer do.
	if err := os.WriteFile(keysFile, second.jwks(t), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(keysFile, later, later)
	mu.Lock()
	now = now.Add(2 * jwksRecheck)
	mu.Unlock()
	if a := e.request(t, "GET", "/topics", bearer(second.token(t, claims(nil))), ""); a.status != 200 {
		t.Fatalf("after rotation, the new key's token: %d %s", a.status, a.body)
	}
	e.request(t, "GET", "/topics", bearer(first.token(t, claims(nil))), "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	// A broken file keeps the keys read before.
	os.WriteFile(keysFile, []byte("{"), 0o600)
	os.Chtimes(keysFile, later.Add(time.Hour), later.Add(time.Hour))
	mu.Lock()
	now = now.Add(2 * jwksRecheck)
	mu.Unlock()
	if a := e.request(t, "GET", "/topics", bearer(second.token(t, claims(nil))), ""); a.status != 200 {
		t.Fatalf("after a broken JWKS file: %d %s", a.status, a.body)
	}
}

func TestSessionLogin(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "s3cret", auth.ScramSHA256)
	e := securedEnv(t, HTTPAuth{Credentials: creds, SessionKey: testSessionKey})
	// A second node of the same cluster shares the key; a stranger does not.
	sibling := securedEnv(t, HTTPAuth{Credentials: creds, SessionKey: testSessionKey})
	stranger := securedEnv(t, HTTPAuth{Credentials: creds, SessionKey: []byte("ffffffffffffffffffffffffffffffff")})

	e.request(t, "POST", "/auth/login", map[string]string{"Content-Type": "application/json"}, `{"username":"alice","password":"nope"}`).
		wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	e.request(t, "POST", "/auth/login", map[string]string{"Content-Type": "application/json"}, `{"username":"alice"}`).
		wantError(t, http.StatusBadRequest, codeMalformed)

	req, _ := http.NewRequest("POST", e.url+"/auth/login", strings.NewReader("username=alice&password=s3cret"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	raw := res.Header.Get("Set-Cookie")
	if res.StatusCode != 200 || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure ||
		strings.Contains(raw, "s3cret") {
		t.Fatalf("login: %d Set-Cookie %q", res.StatusCode, raw)
	}
	withCookie := map[string]string{"Cookie": sessionCookie + "=" + cookie.Value}
	for _, node := range []*testEnv{e, sibling} {
		if a := node.request(t, "GET", "/topics", withCookie, ""); a.status != 200 {
			t.Fatalf("session on %s: %d %s", node.url, a.status, a.body)
		}
	}
	stranger.request(t, "GET", "/topics", withCookie, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	tampered := map[string]string{"Cookie": sessionCookie + "=" + strings.Replace(cookie.Value, cookie.Value[:4], "AAAA", 1)}
	e.request(t, "GET", "/topics", tampered, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)

	// The page asks with X-Requested-With: no Basic challenge, which would
	// open the browser's own dialog.
	req, _ = http.NewRequest("GET", e.url+"/topics", nil)
	req.Header.Set("X-Requested-With", "ferry-ui")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("page request: %d WWW-Authenticate %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}

	// A changed password ends the session.
	creds.set(t, "alice", "n3w", auth.ScramSHA256)
	e.request(t, "GET", "/topics", withCookie, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
}

func TestAuthenticationOffRunsAsAnonymous(t *testing.T) {
	e := newTestEnv(t)
	a := e.request(t, "GET", "/auth/whoami", nil, "")
	var who sessionAnswer
	a.decode(t, &who)
	if a.status != 200 || who.Principal != auth.Anonymous.String() || who.Authenticated {
		t.Fatalf("whoami: %d %s", a.status, a.body)
	}
	e.do(t, "POST", "/auth/login", "application/json", `{"username":"a","password":"b"}`).wantError(t, http.StatusNotFound, codeNotFound)
	// Without authentication there is no token store: every token route says so.
	e.do(t, "POST", "/admin/tokens", "application/json", `{"name":"x"}`).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	e.do(t, "GET", "/admin/tokens", "", "").wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	e.do(t, "DELETE", "/admin/tokens/abc", "", "").wantError(t, http.StatusServiceUnavailable, codeUnavailable)
}

// An unknown user's password goes through the same PBKDF2 as a known
// one's (its outcome is cached like any), so the answer's timing does not
// tell which users exist; and it is refused.
func TestBasicUnknownUserRunsTheSameCheck(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "pw", auth.ScramSHA256)
	a, err := newAuthenticator(HTTPAuth{Credentials: creds, SessionKey: testSessionKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.basic(context.Background(), "mallory", "guess"); err != errBadPassword {
		t.Fatalf("unknown user: %v", err)
	}
	a.mu.Lock()
	checked := len(a.mu.basic)
	a.mu.Unlock()
	if checked != 1 {
		t.Fatalf("%d verifications recorded for an unknown user, want 1 (the same work as a known one)", checked)
	}
}
