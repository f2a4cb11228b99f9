package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// allowList allows exactly the actions it lists ("User:alice WRITE
// TOPIC:orders"), and records the others asked.
type allowList map[string]bool

func (l allowList) Authorize(_ context.Context, a auth.Action) bool {
	return l[a.Principal.String()+" "+a.Operation.String()+" "+a.Resource.String()]
}

func TestEveryRouteHasAPermissionRule(t *testing.T) {
	g, err := New(nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	chi.Walk(g.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if method == http.MethodHead {
			method = http.MethodGet
		}
		if route == "/ui/*" && method != http.MethodGet {
			return nil // the page's files: other methods are refused (no rule, 403)
		}
		if _, ok := routeRequirements[method+" "+route]; !ok {
			missing = append(missing, method+" "+route)
		}
		return nil
	})
	if len(missing) > 0 {
		t.Fatalf("routes without a permission rule (they would answer 403 to everyone): %v", missing)
	}
}

// One principal, allowed to write topic orders but not audit, to read and
// write subject orders-value but not audit-value, to consume with group
// g1 only: each surface of the gateway answers alike, 403 naming the
// operation and resource refused, and nothing refused is written.
func TestAuthorizationOnEverySurface(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "pw", auth.ScramSHA256)
	creds.set(t, "admin", "pw", auth.ScramSHA256)
	allowed := allowList{}
	for _, a := range []string{
		"WRITE TOPIC:orders", "READ TOPIC:orders", "DESCRIBE TOPIC:orders",
		"READ SUBJECT:orders-value", "WRITE SUBJECT:orders-value", "DESCRIBE SUBJECT:orders-value",
		"READ GROUP:g1", "DESCRIBE GROUP:g1",
	} {
		allowed["User:alice "+a] = true
	}
	for _, a := range []string{"CREATE CLUSTER:kafka-cluster", "WRITE TOPIC:audit", "READ TOPIC:audit", "WRITE SUBJECT:audit-value", "DESCRIBE TOPIC:audit"} {
		allowed["User:admin "+a] = true
	}
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.Authorizer = allowed
		c.Schemas = newTestRegistry(t, nil)
	})
	as := func(user string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":pw")),
			"Content-Type": "application/json"}
	}
	alice, admin := as("alice"), as("admin")
	for _, name := range []string{"orders", "audit"} {
		if a := e.request(t, "POST", "/topics", admin, `{"name":"`+name+`","partitions":1}`); a.status != http.StatusCreated {
			t.Fatalf("admin creates %s: %d %s", name, a.status, a.body)
		}
	}
	denied := func(a answer, what string) {
		t.Helper()
		a.wantError(t, http.StatusForbidden, codeDenied)
		if !strings.Contains(string(a.body), what) || !strings.Contains(string(a.body), "User:alice") {
			t.Fatalf("403 %s: want it to name %q", a.body, what)
		}
	}
	denied(e.request(t, "POST", "/topics", alice, `{"name":"mine"}`), "CREATE TOPIC:mine")

	if a := e.request(t, "POST", "/kafka/orders", alice, `{"ok":1}`); a.status != 200 {
		t.Fatalf("alice writes orders: %d %s", a.status, a.body)
	}
	denied(e.request(t, "POST", "/kafka/audit", alice, `{"no":1}`), "WRITE TOPIC:audit")
	restProxy := map[string]string{"Authorization": alice["Authorization"], "Content-Type": "application/vnd.kafka.json.v2+json"}
	denied(e.request(t, "POST", "/topics/audit", restProxy, `{"records":[{"value":1}]}`), "WRITE TOPIC:audit")
	denied(e.request(t, "GET", "/kafka/audit/partitions/0/records", alice, ""), "READ TOPIC:audit")
	denied(e.request(t, "DELETE", "/topics/orders", alice, ""), "DELETE TOPIC:orders")
	denied(e.request(t, "GET", "/brokers", alice, ""), "DESCRIBE CLUSTER:kafka-cluster")
	var read readAnswer
	if a := e.request(t, "GET", "/kafka/audit/partitions/0/records?offset=0", admin, ""); a.status != 200 {
		t.Fatalf("admin reads audit: %d %s", a.status, a.body)
	} else if a.decode(t, &read); len(read.Records) != 0 {
		t.Fatalf("a refused produce wrote %d records", len(read.Records))
	}
	var topics []string
	e.request(t, "GET", "/topics", alice, "").decode(t, &topics)
	if !slices.Equal(topics, []string{"orders"}) {
		t.Fatalf("alice lists %v: want only what she may describe", topics)
	}

	// The registry: subjects by name, and lookups by id through the
	// subjects the schema is under.
	schema := `{"schema":"{\"type\":\"string\"}"}`
	regType := map[string]string{"Authorization": alice["Authorization"], "Content-Type": "application/vnd.schemaregistry.v1+json"}
	a := e.request(t, "POST", "/subjects/orders-value/versions", regType, schema)
	var reg struct{ ID int }
	if json.Unmarshal(a.body, &reg) != nil || a.status != 200 {
		t.Fatalf("alice registers orders-value: %d %s", a.status, a.body)
	}
	denied(e.request(t, "POST", "/subjects/audit-value/versions", regType, schema), "WRITE SUBJECT:audit-value")
	adminReg := map[string]string{"Authorization": admin["Authorization"], "Content-Type": "application/vnd.schemaregistry.v1+json"}
	a = e.request(t, "POST", "/subjects/audit-value/versions", adminReg, `{"schema":"{\"type\":\"int\"}"}`)
	var auditReg struct{ ID int }
	if json.Unmarshal(a.body, &auditReg) != nil || a.status != 200 {
		t.Fatalf("admin registers audit-value: %d %s", a.status, a.body)
	}
	if a := e.request(t, "GET", "/schemas/ids/"+strconv.Itoa(reg.ID), alice, ""); a.status != 200 {
		t.Fatalf("alice reads her schema by id: %d %s", a.status, a.body)
	}
	denied(e.request(t, "GET", "/schemas/ids/"+strconv.Itoa(auditReg.ID), alice, ""), "DESCRIBE any subject of schema")
	var subjects []string
	e.request(t, "GET", "/subjects", alice, "").decode(t, &subjects)
	if !slices.Equal(subjects, []string{"orders-value"}) {
		t.Fatalf("alice lists subjects %v", subjects)
	}
	denied(e.request(t, "PUT", "/config", regType, `{"compatibility":"NONE"}`), "ALTER_CONFIGS CLUSTER")
}

func (b *syncBuffer) lines(match string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(b.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == match {
			out = append(out, rec)
		}
	}
	return out
}

// The audit log has one line per administrative action and per refusal,
// naming who, from where, what and on which resource; produce is not
// audited, and no password reaches any log line.
func TestAuditLog(t *testing.T) {
	logs := &syncBuffer{}
	creds := &memCredentials{}
	creds.set(t, "admin", "0penSesame", auth.ScramSHA256)
	creds.set(t, "alice", "alicePW!", auth.ScramSHA256)
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.Authorizer = allowList{"User:admin CREATE CLUSTER:kafka-cluster": true, "User:admin WRITE TOPIC:ledger": true}
	})
	as := func(user, pw string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw)),
			"Content-Type": "application/json"}
	}
	if a := e.request(t, "POST", "/topics", as("admin", "0penSesame"), `{"name":"ledger","partitions":1}`); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if a := e.request(t, "POST", "/kafka/ledger", as("admin", "0penSesame"), `{"x":1}`); a.status != 200 {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	e.request(t, "DELETE", "/topics/ledger", as("alice", "alicePW!"), "").wantError(t, http.StatusForbidden, codeDenied)
	e.request(t, "GET", "/topics", as("alice", "wrong-pw"), "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	e.request(t, "POST", "/auth/login", map[string]string{"Content-Type": "application/json"}, `{"username":"alice","password":"alicePW!"}`)

	type want struct{ principal, method, path, outcome string }
	var got []want
	for _, rec := range logs.lines("audit") {
		got = append(got, want{fmt.Sprint(rec["principal"]), fmt.Sprint(rec["method"]), fmt.Sprint(rec["path"]), fmt.Sprint(rec["outcome"])})
		if rec["host"] != "127.0.0.1" {
			t.Errorf("audit line without the client's host: %v", rec)
		}
	}
	expected := []want{
		{"User:admin", "POST", "/topics", "allowed"},
		{"User:alice", "DELETE", "/topics/ledger", "denied"},
		{"User:ANONYMOUS", "GET", "/topics", "unauthenticated"},
		{"User:alice", "POST", "/auth/login", "allowed"},
	}
	if !slices.Equal(got, expected) {
		t.Fatalf("audit lines %v, want %v", got, expected)
	}
	all := logs.String()
	for _, secret := range []string{"0penSesame", "alicePW!", "wrong-pw", base64.StdEncoding.EncodeToString([]byte("alice:wrong-pw"))} {
		if strings.Contains(all, secret) {
			t.Fatalf("a credential reached the log: %q", secret)
		}
	}
}

// GET /auth/permissions answers what the same authorizer would decide.
func TestPermissionsEndpoint(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "alice", "pw", auth.ScramSHA256)
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.Authorizer = allowList{"User:alice DELETE TOPIC:orders": true}
	})
	basic := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw"))}
	var got map[string]bool
	a := e.request(t, "GET", "/auth/permissions?check=DELETE:TOPIC:orders&check=DELETE:TOPIC:audit&check=ALTER:CLUSTER:kafka-cluster", basic, "")
	a.decode(t, &got)
	if a.status != 200 || !got["DELETE:TOPIC:orders"] || got["DELETE:TOPIC:audit"] || got["ALTER:CLUSTER:kafka-cluster"] || len(got) != 3 {
		t.Fatalf("permissions: %d %s", a.status, a.body)
	}
	for _, bad := range []string{"", "?check=DELETE:TOPIC", "?check=FLY:TOPIC:x", "?check=READ:PLANET:x", "?check=READ:TOPIC:"} {
		e.request(t, "GET", "/auth/permissions"+bad, basic, "").wantError(t, http.StatusBadRequest, codeBadParam)
	}
}
