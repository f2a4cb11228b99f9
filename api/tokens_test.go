package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// API tokens through /admin/tokens: a user makes its own, uses it as a
// bearer, sees only its own, cannot make or revoke another's without
// ALTER on the cluster; a revoked token is refused at once; the store
// never holds the token.
func TestAPITokenRoutes(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "pw", auth.ScramSHA256)
	creds.set(t, "admin", "pw", auth.ScramSHA256)
	store, err := auth.OpenTokenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, Tokens: store, SessionKey: testSessionKey}
		c.Tokens = store
		c.Authorizer = allowList{"User:admin ALTER CLUSTER:kafka-cluster": true, "User:admin DESCRIBE CLUSTER:kafka-cluster": true}
	})
	as := func(user string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":pw")), "Content-Type": "application/json"}
	}
	a := e.request(t, "POST", "/admin/tokens", as("alice"), `{"name":"laptop"}`)
	var made createdToken
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &made) != nil || made.User != "alice" || made.Token == "" {
		t.Fatalf("alice makes a token: %d %s", a.status, a.body)
	}
	bearer := map[string]string{"Authorization": "Bearer " + made.Token}
	var who sessionAnswer
	e.request(t, "GET", "/auth/whoami", bearer, "").decode(t, &who)
	if who.Principal != "User:alice" {
		t.Fatalf("the token acts as %q", who.Principal)
	}
	e.request(t, "POST", "/admin/tokens", as("alice"), `{"name":"sneaky","user":"admin"}`).wantError(t, http.StatusForbidden, codeDenied)
	e.request(t, "POST", "/admin/tokens", as("alice"), `{"name":"bad name!"}`).wantError(t, http.StatusBadRequest, codeMalformed)
	a = e.request(t, "POST", "/admin/tokens", as("admin"), `{"name":"ci","user":"deployer","expires_in_ms":3600000}`)
	var ci createdToken
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &ci) != nil || ci.ExpiresAt == nil {
		t.Fatalf("admin makes a token for deployer: %d %s", a.status, a.body)
	}
	var mine, everyone []tokenInfo
	e.request(t, "GET", "/admin/tokens", as("alice"), "").decode(t, &mine)
	e.request(t, "GET", "/admin/tokens", as("admin"), "").decode(t, &everyone)
	if len(mine) != 1 || mine[0].ID != made.ID || len(everyone) != 2 {
		t.Fatalf("alice lists %+v, admin %+v", mine, everyone)
	}
	e.request(t, "DELETE", "/admin/tokens/"+ci.ID, as("alice"), "").wantError(t, http.StatusForbidden, codeDenied)
	e.request(t, "DELETE", "/admin/tokens/nope", as("alice"), "").wantError(t, http.StatusNotFound, codeNotFound)
	if a := e.request(t, "DELETE", "/admin/tokens/"+made.ID, as("alice"), ""); a.status != http.StatusNoContent {
		t.Fatalf("alice revokes hers: %d %s", a.status, a.body)
	}
	e.request(t, "GET", "/topics", bearer, "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)

	// Reopened from disk: the remaining token, without its secret.
	data, err := os.ReadFile(store.File())
	if _, secret, _ := auth.ParseAPIToken(ci.Token); err != nil || strings.Contains(string(data), secret) {
		t.Fatalf("the token file holds the secret (or cannot be read: %v)", err)
	}
	again, err := auth.OpenTokenFileStore(filepath.Dir(store.File()))
	if err != nil {
		t.Fatal(err)
	}
	if list := again.List(); len(list) != 1 || list[0].ID != ci.ID {
		t.Fatalf("reopened store holds %+v", list)
	}
}
