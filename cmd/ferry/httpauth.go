package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/server/auth"
)

// httpAuthSettings are the HTTP gateway's authentication settings
// (ferry.http.*; Kafka has no HTTP port to name them after).
type httpAuthSettings struct {
	// enabled: every request but the health checks must authenticate
	// (ferry.http.auth.enable; on with --security unless set).
	enabled    bool
	enabledSet bool
	jwksFile   string
	issuer     string
	audience   string
	claim      string
	sessionTTL time.Duration
	// ratePerPrincipal is ferry.http.rate.limit.per.principal (0: none).
	ratePerPrincipal int64
}

var httpAuthOptions = []option{
	{"http-rate-limit-per-principal", []string{"ferry.http.rate.limit.per.principal"}, "most HTTP requests a second from one principal (one client host without credentials), with a second's burst; more are answered 429 with Retry-After (0: no limit)", "0",
		func(s *serveSettings, v string) (err error) {
			s.httpAuth.ratePerPrincipal, err = strconv.ParseInt(v, 10, 64)
			if err == nil && s.httpAuth.ratePerPrincipal < 0 {
				err = errors.New("must not be negative")
			}
			return err
		}},
	{"http-auth", []string{"ferry.http.auth.enable"}, "require credentials (Basic with a SCRAM user, an API token, a JWT, or the admin page's login) on every HTTP route but /healthz and /readyz (default: on with --security)", "",
		func(s *serveSettings, v string) (err error) {
			if v == "" {
				return nil
			}
			s.httpAuth.enabled, err = strconv.ParseBool(v)
			s.httpAuth.enabledSet = true
			return err
		}},
	{"http-jwt-jwks-file", []string{"ferry.http.jwt.jwks.file"}, "JWKS file of the public keys HTTP bearer JWTs are signed with (reread when it changes); empty: no JWTs", "",
		func(s *serveSettings, v string) error { s.httpAuth.jwksFile = v; return nil }},
	{"http-jwt-issuer", []string{"ferry.http.jwt.issuer"}, "the iss claim HTTP JWTs must carry (empty: any)", "",
		func(s *serveSettings, v string) error { s.httpAuth.issuer = v; return nil }},
	{"http-jwt-audience", []string{"ferry.http.jwt.audience"}, "a value the aud claim of HTTP JWTs must hold (empty: any)", "",
		func(s *serveSettings, v string) error { s.httpAuth.audience = v; return nil }},
	{"http-jwt-principal-claim", []string{"ferry.http.jwt.principal.claim"}, "the JWT claim naming the user (principal User:<value>)", "sub",
		func(s *serveSettings, v string) error { s.httpAuth.claim = v; return nil }},
	{"http-session-ttl-ms", []string{"ferry.http.session.ttl.ms"}, "how long an admin page login lasts", "3600000",
		func(s *serveSettings, v string) error {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err == nil && ms < 60000 {
				err = errors.New("must be at least 60000 (a minute)")
			}
			s.httpAuth.sessionTTL = time.Duration(ms) * time.Millisecond
			return err
		}},
}

// httpSessionKey is the key the admin page's sessions are signed with:
// one per cluster, in ZooKeeper, so a login on one node is honoured by
// all; on a single node a file in the data dir (mode 0600). Either is
// made on first use and kept, so logins survive restarts.
func httpSessionKey(dataDir string, node *clusterNode) ([]byte, error) {
	if node == nil {
		return auth.LoadOrCreateSecretFile(filepath.Join(dataDir, "http-session-key"))
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	return node.zk.GetOrCreateSecret("http-session-key", fresh)
}

// httpAuthConfig builds the gateway's authentication, nil when it is
// off: on with --security unless --http-auth says otherwise. Passwords
// are checked against the same users as SASL.
//
// API tokens live in the data dir or in ZooKeeper (/ferry/tokens); the
// store is returned for /admin/tokens and closed with close.
func httpAuthConfig(s serveSettings, node *clusterNode, users auth.Credentials) (_ *api.HTTPAuth, tokens auth.TokenStore, close func(), err error) {
	on := s.security
	if s.httpAuth.enabledSet {
		on = s.httpAuth.enabled
	}
	if !on {
		return nil, nil, func() {}, nil
	}
	key, err := httpSessionKey(s.broker.DataDir, node)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("http session key: %w", err)
	}
	close = func() {}
	if node != nil {
		zs, err := auth.OpenZKTokenStore(node.zk, node.logger)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("API tokens: %w", err)
		}
		tokens, close = zs, zs.Close
	} else if tokens, err = auth.OpenTokenFileStore(s.broker.DataDir); err != nil {
		return nil, nil, nil, fmt.Errorf("API tokens: %w", err)
	}
	a := &api.HTTPAuth{Credentials: users, Tokens: tokens, SessionKey: key, SessionTTL: s.httpAuth.sessionTTL}
	if s.httpAuth.jwksFile != "" {
		a.JWT = &api.JWTConfig{KeysFile: s.httpAuth.jwksFile, Issuer: s.httpAuth.issuer, Audience: s.httpAuth.audience,
			PrincipalClaim: s.httpAuth.claim}
	}
	return a, tokens, close, nil
}
