package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/api/internal/jwt"
	"github.com/ferry-mq/ferry/server/auth"
)

// HTTP authentication (issue 14). With Config.Auth set, every request but
// the health checks, the admin page's static files and the login itself
// must say who it is, in one of three ways:
//
//   - Basic with a user's password, checked against the same SCRAM
//     verifier SASL uses. PBKDF2 is slow by design, so an outcome is
//     cached (keyed by a hash of user, password and the verifier, so a
//     changed password is checked afresh) and at most one check per core
//     runs at once: a flood of guesses cannot take the node's CPU.
//   - Bearer: a static API token (ferry_<id>_<secret>, stored hashed) or a
//     JWT signed by a key of the configured JWKS file.
//   - The admin page's session cookie, issued by POST /auth/login: an
//     HMAC-signed name, expiry and verifier fingerprint, so any node of a
//     cluster (which share the key) accepts it, a deleted user's or a
//     changed password's sessions end, and nothing is stored per session.
//
// A request handed from one node to another carries the client's own
// credentials, checked again where it lands: no node trusts another's word.

// HTTPAuth is the gateway's authentication; Config.Auth nil: none (every
// request runs as User:ANONYMOUS).
type HTTPAuth struct {
	// Credentials are the users' SCRAM verifiers (Basic and login); nil:
	// no passwords accepted.
	Credentials auth.Credentials
	// Tokens finds static API tokens by id; nil: none.
	Tokens APITokens
	// JWT checks bearer JWTs; nil: none.
	JWT *JWTConfig
	// SessionKey signs session cookies: at least 32 bytes, the same on
	// every node of a cluster.
	SessionKey []byte
	// SessionTTL is how long a login lasts. Default 1 hour.
	SessionTTL time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// JWTConfig is ferry.http.jwt.*: the issuer's public keys, what a token
// must say, and which claim names the principal.
type JWTConfig struct {
	// KeysFile is a JWKS document, reread when it changes.
	KeysFile string
	// Issuer, when set, must equal the iss claim.
	Issuer string
	// Audience, when set, must be among the aud claim's values.
	Audience string
	// PrincipalClaim names the user (User:<value>). Default "sub".
	PrincipalClaim string
	// Leeway allows for clocks apart on exp and nbf. Default 30 s.
	Leeway time.Duration
}

// APITokens looks API tokens up by id, from memory.
type APITokens interface {
	LookupAPIToken(id string) (auth.APIToken, bool)
}

// APITokenPrefix starts every API token (auth.APITokenPrefix).
const APITokenPrefix = auth.APITokenPrefix

// sessionCookie is the admin page's session.
const sessionCookie = "ferry_session"

const (
	codeUnauthenticated = 40101
	codeDenied          = 40304
)

// authenticator is HTTPAuth in use: the JWKS file's keys and the Basic
// cache.
type authenticator struct {
	cfg HTTPAuth
	// verifying bounds concurrent PBKDF2 runs to the cores.
	verifying chan struct{}

	mu struct {
		sync.Mutex
		basic map[[sha256.Size]byte]basicOutcome
		// sessions are cookies already verified, so the HMAC and the
		// decoding run once per session, not per request.
		sessions map[string]verifiedSession
		keys     *jwt.KeySet
		keysErr  error
		keysMod  time.Time
		checked  time.Time
	}
}

type basicOutcome struct {
	ok      bool
	expires time.Time
}

// verifiedSession is a cookie whose signature checked out: its user, the
// verifier it was issued under (a changed password ends it) and its end.
type verifiedSession struct {
	user      string
	storedKey []byte
	expires   time.Time
}

const (
	basicCacheTTL = 5 * time.Minute
	// basicCacheMax bounds the cache; when full it starts again empty
	// (a burst of distinct logins costs one PBKDF2 each, as uncached).
	basicCacheMax = 10000
	// jwksRecheck is how often the JWKS file's modification time is read.
	jwksRecheck = 5 * time.Second
)

func newAuthenticator(cfg HTTPAuth) (*authenticator, error) {
	if cfg.Credentials == nil && cfg.Tokens == nil && cfg.JWT == nil {
		return nil, errors.New("http auth: no way to authenticate (credentials, API tokens or JWT)")
	}
	if len(cfg.SessionKey) < 32 {
		return nil, fmt.Errorf("http auth: the session key has %d bytes, 32 wanted", len(cfg.SessionKey))
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if j := cfg.JWT; j != nil {
		c := *j
		if c.PrincipalClaim == "" {
			c.PrincipalClaim = "sub"
		}
		if c.Leeway == 0 {
			c.Leeway = 30 * time.Second
		}
		cfg.JWT = &c
	}
	a := &authenticator{cfg: cfg, verifying: make(chan struct{}, runtime.NumCPU())}
	a.mu.basic = map[[sha256.Size]byte]basicOutcome{}
	a.mu.sessions = map[string]verifiedSession{}
	if cfg.JWT != nil {
		if _, err := a.jwtKeys(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// errUnauthenticated is a request without acceptable credentials; its
// message says what was wrong, never a secret.
type errUnauthenticated struct {
	msg    string
	bearer bool // the credentials offered were a bearer token
}

func (e errUnauthenticated) Error() string { return e.msg }

// authenticate finds r's principal, or why it has none.
func (a *authenticator) authenticate(r *http.Request) (auth.Principal, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, value, _ := strings.Cut(h, " ")
		value = strings.TrimSpace(value)
		switch strings.ToLower(scheme) {
		case "basic":
			user, password, ok := r.BasicAuth()
			if !ok {
				return auth.Principal{}, errUnauthenticated{msg: "malformed Basic credentials"}
			}
			return a.basic(r.Context(), user, password)
		case "bearer":
			return a.bearer(value)
		}
		return auth.Principal{}, errUnauthenticated{msg: "unsupported authorization scheme " + fmt.Sprintf("%q", scheme)}
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return a.session(c.Value)
	}
	return auth.Principal{}, errUnauthenticated{msg: "this request needs credentials: Basic, a bearer token, or a session from POST /auth/login"}
}

// lookupUser finds a user's verifier, SCRAM-SHA-512 first.
func (a *authenticator) lookupUser(user string) (auth.ScramCredential, bool) {
	if a.cfg.Credentials == nil || user == "" {
		return auth.ScramCredential{}, false
	}
	for _, m := range []auth.ScramMechanism{auth.ScramSHA512, auth.ScramSHA256} {
		if c, ok := a.cfg.Credentials.Lookup(user, m); ok {
			return c, true
		}
	}
	return auth.ScramCredential{}, false
}

var errBadPassword = errUnauthenticated{msg: "wrong user name or password"}

func (a *authenticator) basic(ctx context.Context, user, password string) (auth.Principal, error) {
	cred, known := a.lookupUser(user)
	if !known {
		// The same PBKDF2 against a verifier nobody's password matches, so
		// the answer's timing does not tell which users exist.
		cred = unknownUserCredential()
	}
	h := sha256.New()
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(password))
	h.Write([]byte{0})
	h.Write(cred.StoredKey)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	now := a.cfg.Now()
	a.mu.Lock()
	out, hit := a.mu.basic[key]
	a.mu.Unlock()
	if !hit || now.After(out.expires) {
		select {
		case a.verifying <- struct{}{}:
		case <-ctx.Done():
			return auth.Principal{}, ctx.Err()
		}
		out = basicOutcome{ok: cred.VerifyPassword(password), expires: now.Add(basicCacheTTL)}
		<-a.verifying
		a.mu.Lock()
		if len(a.mu.basic) >= basicCacheMax {
			a.mu.basic = map[[sha256.Size]byte]basicOutcome{}
		}
		a.mu.basic[key] = out
		a.mu.Unlock()
	}
	if !out.ok || !known {
		return auth.Principal{}, errBadPassword
	}
	return auth.User(user), nil
}

// unknownUserCredential is the verifier an unknown user's password is
// checked against: of a random password, made once.
var unknownUserCredential = sync.OnceValue(func() auth.ScramCredential {
	secret := make([]byte, 32)
	rand.Read(secret)
	c, _ := auth.NewScramCredential(auth.ScramSHA512, base64.RawURLEncoding.EncodeToString(secret), auth.DefaultScramIterations)
	return c
})

func (a *authenticator) bearer(token string) (auth.Principal, error) {
	if strings.HasPrefix(token, APITokenPrefix) {
		return a.apiToken(token)
	}
	if a.cfg.JWT == nil {
		return auth.Principal{}, errUnauthenticated{msg: "bearer token not accepted: JWTs are not configured", bearer: true}
	}
	keys, err := a.jwtKeys()
	if err != nil {
		return auth.Principal{}, errUnauthenticated{msg: "bearer token not accepted: " + err.Error(), bearer: true}
	}
	c, err := keys.Verify(token, a.cfg.Now(), a.cfg.JWT.Leeway)
	if err != nil {
		return auth.Principal{}, errUnauthenticated{msg: err.Error(), bearer: true}
	}
	if want := a.cfg.JWT.Issuer; want != "" && c.Issuer != want {
		return auth.Principal{}, errUnauthenticated{msg: fmt.Sprintf("token issued by %q, not %q", c.Issuer, want), bearer: true}
	}
	if want := a.cfg.JWT.Audience; want != "" && !slices.Contains(c.Audience, want) {
		return auth.Principal{}, errUnauthenticated{msg: fmt.Sprintf("token not meant for audience %q", want), bearer: true}
	}
	name, _ := c.All[a.cfg.JWT.PrincipalClaim].(string)
	if name == "" {
		return auth.Principal{}, errUnauthenticated{msg: fmt.Sprintf("token has no %q claim naming the user", a.cfg.JWT.PrincipalClaim), bearer: true}
	}
	return auth.User(name), nil
}

// jwtKeys is the JWKS file's key set, reread when the file changes
// (checked at most every jwksRecheck). A file that turns bad keeps the
// keys read before, so a botched rotation does not lock everyone out.
func (a *authenticator) jwtKeys() (*jwt.KeySet, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.keys != nil && now.Sub(a.mu.checked) < jwksRecheck {
		return a.mu.keys, nil
	}
	a.mu.checked = now
	st, err := os.Stat(a.cfg.JWT.KeysFile)
	if err == nil && a.mu.keys != nil && st.ModTime().Equal(a.mu.keysMod) {
		return a.mu.keys, nil
	}
	var keys *jwt.KeySet
	if err == nil {
		var data []byte
		if data, err = os.ReadFile(a.cfg.JWT.KeysFile); err == nil {
			keys, err = jwt.ParseKeySet(data)
		}
	}
	if err != nil {
		if a.mu.keys != nil {
			a.mu.keysErr = err
			return a.mu.keys, nil
		}
		return nil, fmt.Errorf("JWKS file %s: %w", a.cfg.JWT.KeysFile, err)
	}
	a.mu.keys, a.mu.keysMod, a.mu.keysErr = keys, st.ModTime(), nil
	return keys, nil
}

func (a *authenticator) apiToken(token string) (auth.Principal, error) {
	id, secret, ok := auth.ParseAPIToken(token)
	if !ok || a.cfg.Tokens == nil {
		return auth.Principal{}, errUnauthenticated{msg: "unknown API token", bearer: true}
	}
	stored, found := a.cfg.Tokens.LookupAPIToken(id)
	sum := sha256.Sum256([]byte(secret))
	if !found || subtle.ConstantTimeCompare(sum[:], stored.Hash[:]) != 1 {
		return auth.Principal{}, errUnauthenticated{msg: "unknown API token", bearer: true}
	}
	if !stored.ExpiresAt.IsZero() && !a.cfg.Now().Before(stored.ExpiresAt) {
		return auth.Principal{}, errUnauthenticated{msg: "API token " + id + " has expired", bearer: true}
	}
	return auth.User(stored.User), nil
}

// session is a signed cookie's principal. Its payload names the user,
// the expiry and the first bytes of the verifier's stored key, so a
// password change or a deleted user ends every session.
type sessionClaims struct {
	User    string `json:"u"`
	Expires int64  `json:"e"`
	Key     string `json:"k"`
}

func credentialFingerprint(c auth.ScramCredential) string {
	sum := sha256.Sum256(c.StoredKey)
	return hex.EncodeToString(sum[:8])
}

func (a *authenticator) issueSession(user string, cred auth.ScramCredential) (value string, expires time.Time) {
	expires = a.cfg.Now().Add(a.cfg.SessionTTL)
	payload, _ := json.Marshal(sessionClaims{User: user, Expires: expires.Unix(), Key: credentialFingerprint(cred)})
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(a.sign(p)), expires
}

func (a *authenticator) sign(payload string) []byte {
	mac := hmac.New(sha256.New, a.cfg.SessionKey)
	mac.Write([]byte("ferry session v1\x00"))
	mac.Write([]byte(payload))
	return mac.Sum(nil)
}

var errBadSession = errUnauthenticated{msg: "the session has ended or is not valid: log in again"}

func (a *authenticator) session(value string) (auth.Principal, error) {
	if len(value) > 4096 {
		return auth.Principal{}, errBadSession
	}
	now := a.cfg.Now()
	a.mu.Lock()
	v, hit := a.mu.sessions[value]
	a.mu.Unlock()
	if !hit {
		var err error
		if v, err = a.verifySession(value); err != nil {
			return auth.Principal{}, err
		}
		a.mu.Lock()
		if len(a.mu.sessions) >= basicCacheMax {
			a.mu.sessions = map[string]verifiedSession{}
		}
		a.mu.sessions[value] = v
		a.mu.Unlock()
	}
	if !now.Before(v.expires) {
		return auth.Principal{}, errBadSession
	}
	cred, ok := a.lookupUser(v.user)
	if !ok || !hmac.Equal(cred.StoredKey, v.storedKey) {
		return auth.Principal{}, errBadSession
	}
	return auth.User(v.user), nil
}

// verifySession checks a cookie's signature and reads it; the caller
// checks its expiry and that its user's verifier is unchanged.
func (a *authenticator) verifySession(value string) (verifiedSession, error) {
	p, s, ok := strings.Cut(value, ".")
	if !ok {
		return verifiedSession{}, errBadSession
	}
	sig, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !hmac.Equal(sig, a.sign(p)) {
		return verifiedSession{}, errBadSession
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	var c sessionClaims
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return verifiedSession{}, errBadSession
	}
	cred, ok := a.lookupUser(c.User)
	if !ok || credentialFingerprint(cred) != c.Key {
		return verifiedSession{}, errBadSession
	}
	return verifiedSession{user: c.User, storedKey: cred.StoredKey, expires: time.Unix(c.Expires, 0)}, nil
}

// publicRoute: what answers without credentials. The health checks (a
// load balancer's probe carries none), the admin page's static files (the
// login screen; they hold no data) and the login itself.
func publicRoute(r *http.Request) bool {
	switch p := r.URL.Path; {
	case p == "/healthz" || p == "/readyz":
		return true
	case p == "/auth/login" && r.Method == http.MethodPost:
		return true
	case (p == "/ui" || strings.HasPrefix(p, "/ui/")) && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return true
	}
	return false
}

// authenticate is the middleware: the principal goes into the request's
// context for every handler, the authorizer and the request log.
func (g *Gateway) authenticate(next http.Handler) http.Handler {
	if g.authn == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicRoute(r) {
			next.ServeHTTP(w, r)
			return
		}
		p, err := g.authn.authenticate(r)
		if err != nil {
			g.auditLine(r, "unauthenticated", http.StatusUnauthorized, err.Error())
			g.unauthenticated(w, r, err)
			return
		}
		if rec := recorderOf(w); rec != nil {
			rec.principal = p
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// unauthenticated answers 401 with the challenges this node accepts. The
// admin page (X-Requested-With) gets no Basic challenge, which would make
// the browser open its own password dialog over the page's login screen.
func (g *Gateway) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	var ue errUnauthenticated
	msg := "authentication failed"
	if errors.As(err, &ue) {
		msg = ue.msg
	}
	if g.authn.cfg.Credentials != nil && r.Header.Get("X-Requested-With") == "" {
		w.Header().Add("WWW-Authenticate", `Basic realm="ferry", charset="UTF-8"`)
	}
	if g.authn.cfg.Tokens != nil || g.authn.cfg.JWT != nil {
		challenge := `Bearer realm="ferry"`
		if ue.bearer {
			challenge += `, error="invalid_token"`
		}
		w.Header().Add("WWW-Authenticate", challenge)
	}
	writeError(w, http.StatusUnauthorized, codeUnauthenticated, msg)
}
