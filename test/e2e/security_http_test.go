package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func httpAs(t *testing.T, method, url, user, password, contentType, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(data)
}

// With --security the HTTP port answers nothing but the health checks
// without credentials; a SCRAM user's password works over HTTP Basic as
// over SASL, and a record one surface wrote is read by the other.
func TestSecuredNodeAsksForCredentialsOverHTTP(t *testing.T) {
	node := saslNode(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if st, _, body := httpAs(t, "GET", node.URL+path, "", "", "", ""); st != 200 {
			t.Fatalf("GET %s without credentials: %d %s", path, st, body)
		}
	}
	for _, path := range []string{"/topics", "/metrics", "/subjects", "/openapi.json", "/groups"} {
		st, h, body := httpAs(t, "GET", node.URL+path, "", "", "", "")
		if st != 401 || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") || !strings.Contains(body, "40101") {
			t.Fatalf("GET %s without credentials: %d %q %s", path, st, h.Get("WWW-Authenticate"), body)
		}
	}
	if st, _, body := httpAs(t, "GET", node.URL+"/topics", "alice", "not-"+alicePassword, "", ""); st != 401 {
		t.Fatalf("wrong password: %d %s", st, body)
	}
	if st, _, body := httpAs(t, "POST", node.URL+"/kafka/secured", "bob", bobPassword, "application/json", `{"from":"http"}`); st != 200 {
		t.Fatalf("bob produces over HTTP: %d %s", st, body)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr), kgo.SASL(aliceScram),
		kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fs := cl.PollRecords(ctx, 1)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != `{"from":"http"}` {
		t.Fatalf("alice read %v over SASL", recs)
	}
}

// The admin page's login in headless Chromium: the page shows its login
// screen, refuses a wrong password in words, logs in to the overview with
// the principal shown, keeps no password and cannot read its session
// cookie (HttpOnly), and after logout is back at the login screen with
// the session gone.
func TestUILogin(t *testing.T) {
	b := newBrowser(t)
	node := saslNode(t)
	b.run("open the page",
		chromedp.Navigate(node.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#login-user")))
	b.screenshot("login")
	b.run("a wrong password",
		chromedp.SendKeys(chromedp.CSS("#login-user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#login-password"), "wrong"),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")))
	b.waitText(".login-error", "wrong user name or password")
	if v := eval[string](b, "password cleared", `document.querySelector('#login-password').value`); v != "" {
		t.Fatalf("the password field still holds %q", v)
	}
	b.screenshot("login-refused")
	b.run("the right password",
		chromedp.SendKeys(chromedp.CSS("#login-password"), alicePassword),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#overview-stats")))
	b.waitText("#session", "User:alice")
	b.screenshot("logged-in")
	stored := eval[string](b, "what the page keeps",
		`document.cookie + '|' + JSON.stringify(localStorage) + '|' + JSON.stringify(sessionStorage)`)
	if strings.Contains(stored, "ferry_session") || strings.Contains(stored, alicePassword) {
		t.Fatalf("the page can read its session or keeps the password: %q", stored)
	}
	if st := evalAsync[float64](b, `fetch('/topics').then(r => r.status)`, "%s"); st != 200 {
		t.Fatalf("GET /topics from the page: %v", st)
	}
	b.run("log out",
		chromedp.Click(chromedp.Search(`//button[text()="Log out"]`)),
		chromedp.WaitVisible(chromedp.CSS("#login-user")))
	b.waitText("form.login", "You are logged out")
	// The page's header: a Basic challenge would open the browser's own
	// password dialog.
	if st := evalAsync[float64](b, `fetch('/topics', {headers: {'X-Requested-With': 'ferry-ui'}}).then(r => r.status)`, "%s"); st != 401 {
		t.Fatalf("GET /topics after logout: %v", st)
	}
}

// One permission model on every surface. With --security, alice (a super
// user) lets bob write and describe topic a and subject a-value, through
// `ferry acls add` over SASL; bob may then write a but not b over the Kafka
// listener (SASL), over HTTP produce and in the registry, and the admin
// page he logs in to lists only topic a. Nothing refused is stored.
func TestOnePermissionModelOnEverySurface(t *testing.T) {
	node := saslNode(t, "--super-users", "User:alice")
	pwFile := filepath.Join(t.TempDir(), "alice.pw")
	if err := os.WriteFile(pwFile, []byte(alicePassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	asAlice := []string{"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "alice", "--sasl-password-file", pwFile}
	for _, acl := range [][]string{
		{"--topic", "a", "--operation", "Write", "--operation", "Describe"},
		{"--subject", "a-value", "--operation", "Write", "--operation", "Read"},
		{"--cluster", "--operation", "Describe"}, // the cluster view, not its actions
	} {
		cli(t, node, "", append(append([]string{"acls", "add", "--allow-principal", "User:bob"}, acl...), asAlice...)...)
	}
	for _, topic := range []string{"a", "b"} {
		if st, _, body := httpAs(t, "POST", node.URL+"/topics", "alice", alicePassword, "application/json", `{"name":"`+topic+`","partitions":1}`); st != 201 {
			t.Fatalf("alice creates %s: %d %s", topic, st, body)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr), kgo.SASL(bobScram512), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: []byte("kafka")}).FirstErr(); err != nil {
		t.Fatalf("bob produces to a over Kafka: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte("kafka")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produces to b over Kafka: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if st, _, body := httpAs(t, "POST", node.URL+"/kafka/a", "bob", bobPassword, "application/json", `"http"`); st != 200 {
		t.Fatalf("bob produces to a over HTTP: %d %s", st, body)
	}
	if st, _, body := httpAs(t, "POST", node.URL+"/kafka/b", "bob", bobPassword, "application/json", `"http"`); st != 403 ||
		!strings.Contains(body, "WRITE TOPIC:b") {
		t.Fatalf("bob produces to b over HTTP: %d %s, want 403 naming WRITE TOPIC:b", st, body)
	}
	const schema = `{"schema":"{\"type\":\"string\"}"}`
	if st, _, body := httpAs(t, "POST", node.URL+"/subjects/a-value/versions", "bob", bobPassword, "application/vnd.schemaregistry.v1+json", schema); st != 200 {
		t.Fatalf("bob registers a-value: %d %s", st, body)
	}
	if st, _, body := httpAs(t, "POST", node.URL+"/subjects/b-value/versions", "bob", bobPassword, "application/vnd.schemaregistry.v1+json", schema); st != 403 {
		t.Fatalf("bob registers b-value: %d %s, want 403", st, body)
	}
	// What was stored, read by the super user.
	for topic, want := range map[string]int{"a": 2, "b": 0} {
		st, _, body := httpAs(t, "GET", node.URL+"/kafka/"+topic+"/partitions/0/offsets", "alice", alicePassword, "", "")
		if st != 200 || !strings.Contains(body, `"offset":`+strconv.Itoa(want)) {
			t.Fatalf("end of %s: %d %s, want offset %d", topic, st, body, want)
		}
	}
	if st, _, body := httpAs(t, "GET", node.URL+"/subjects", "alice", alicePassword, "", ""); st != 200 || body != "[\"a-value\"]\n" && body != `["a-value"]` {
		t.Fatalf("subjects: %d %q, want only a-value", st, body)
	}

	// The audit log, one line per administrative request and per refusal,
	// on both surfaces.
	lines := strings.Split(node.Logs(), "\n")
	for _, want := range [][]string{
		{"principal=User:alice", "api=CreateACLs", "outcome=allowed"},
		{"principal=User:bob", "component=kafka", "resource=TOPIC:b", "outcome=denied"},
		{"principal=User:bob", "method=POST", "path=/kafka/b", "outcome=denied"},
		{"principal=User:alice", "method=POST", "path=/topics", "outcome=allowed"},
	} {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, "msg=audit") && strings.Contains(l, "host=127.0.0.1") &&
				!slices.ContainsFunc(want, func(f string) bool { return !strings.Contains(l, f) })
		}) {
			t.Errorf("no audit line with %v in the node's log", want)
		}
	}

	b := newBrowser(t)
	b.run("bob logs in",
		chromedp.Navigate(node.URL+"/ui/#/topics"),
		chromedp.WaitVisible(chromedp.CSS("#login-user")),
		chromedp.SendKeys(chromedp.CSS("#login-user"), "bob"),
		chromedp.SendKeys(chromedp.CSS("#login-password"), bobPassword),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="a"]`)))
	b.screenshot("bob-topics")
	if n := eval[float64](b, "topics bob sees", `document.querySelectorAll('tr[data-topic="b"]').length`); n != 0 {
		t.Fatal("the page lists topic b, which bob may not describe")
	}
	// Bob may not delete topic a, nor run elections or moves (ALTER on the
	// cluster): the page disables them.
	if !eval[bool](b, "topic a's delete button", `document.querySelector('tr[data-topic="a"] button.danger').disabled`) {
		t.Fatal("the page offers bob to delete topic a")
	}
	b.run("the cluster view",
		chromedp.Navigate(node.URL+"/ui/#/cluster"),
		chromedp.WaitVisible(chromedp.CSS("#elect-preferred")))
	if !eval[bool](b, "the election button", `document.querySelector('#elect-preferred').disabled`) ||
		eval[bool](b, "the move link", `document.querySelector('#move-partitions').hasAttribute('href')`) {
		t.Fatal("the page offers bob elections or moves")
	}
	b.screenshot("bob-cluster")
}

// `ferry tokens`: alice makes a token for herself through the node's HTTP
// API, it authenticates as her, it is listed without its secret, and once
// revoked it is refused; offline, a stopped node's data dir lists it gone.
func TestTokensCLI(t *testing.T) {
	node := saslNode(t)
	pwFile := filepath.Join(t.TempDir(), "alice.pw")
	if err := os.WriteFile(pwFile, []byte(alicePassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	online := []string{"--url", node.URL, "--http-user", "alice", "--password-file", pwFile}
	res := runCLI(t, "", nil, append([]string{"tokens", "create", "laptop", "--expires-in", "1h"}, online...)...)
	token := strings.TrimSpace(res.stdout)
	if res.code != 0 || !strings.HasPrefix(token, "ferry_") || strings.Contains(res.stderr, token) {
		t.Fatalf("tokens create: %d %q %s", res.code, res.stdout, res.stderr)
	}
	bearer := func() int {
		req, _ := http.NewRequest("GET", node.URL+"/auth/whoami", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode
	}
	if st := bearer(); st != 200 {
		t.Fatalf("the new token: %d", st)
	}
	res = runCLI(t, "", nil, append([]string{"tokens", "list"}, online...)...)
	_, secret, _ := strings.Cut(strings.TrimPrefix(token, "ferry_"), "_")
	if res.code != 0 || !strings.Contains(res.stdout, "laptop") || !strings.Contains(res.stdout, "alice") || strings.Contains(res.stdout, secret) {
		t.Fatalf("tokens list: %d %s %s", res.code, res.stdout, res.stderr)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(token, "ferry_"), "_")
	if res = runCLI(t, "", nil, append([]string{"tokens", "revoke", id}, online...)...); res.code != 0 {
		t.Fatalf("tokens revoke: %d %s", res.code, res.stderr)
	}
	if st := bearer(); st != 401 {
		t.Fatalf("a revoked token: %d", st)
	}
	node.Stop()
	res = runCLI(t, "", nil, "tokens", "list", "--data-dir", node.DataDir)
	if res.code != 0 || strings.Contains(res.stdout, "laptop") {
		t.Fatalf("tokens list --data-dir after the revocation: %d %s %s", res.code, res.stdout, res.stderr)
	}
	if res = runCLI(t, "", nil, "tokens", "create", "ci", "--data-dir", node.DataDir); res.code != 2 {
		t.Fatalf("an offline token without --user: %d %s", res.code, res.stderr)
	}
}

// The admin page's access control view: alice (a super user) adds a
// prefixed ACL for carol through the form, the API lists it, she removes
// it with a confirmation and it is gone; the page shows what each did.
func TestUIACLs(t *testing.T) {
	b := newBrowser(t)
	node := saslNode(t, "--super-users", "User:alice")
	b.run("alice logs in",
		chromedp.Navigate(node.URL+"/ui/#/acls"),
		chromedp.WaitVisible(chromedp.CSS("#login-user")),
		chromedp.SendKeys(chromedp.CSS("#login-user"), "alice"),
		chromedp.SendKeys(chromedp.CSS("#login-password"), alicePassword),
		chromedp.Click(chromedp.CSS("form.login button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#acl-add")))
	b.run("add an ACL",
		fillIn("#acl-principal", "User:carol"),
		choose("#acl-operation", "WRITE"),
		chromedp.SendKeys(chromedp.CSS("#acl-resource-name"), "orders-"),
		choose("#acl-pattern", "PREFIXED"),
		chromedp.Click(chromedp.CSS("#acl-add")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-acl^="ALLOW User:carol WRITE on TOPIC orders-"]`)))
	b.screenshot("acl-added")
	listed := func() string {
		st, _, body := httpAs(t, "GET", node.URL+"/admin/acls?principal=User:carol", "alice", alicePassword, "", "")
		if st != 200 {
			t.Fatalf("GET /admin/acls: %d %s", st, body)
		}
		return body
	}
	if got := listed(); !strings.Contains(got, `"pattern_type":"PREFIXED"`) || !strings.Contains(got, `"operation":"WRITE"`) {
		t.Fatalf("the API lists %s after the form", got)
	}
	b.run("remove it",
		chromedp.Click(chromedp.CSS(`tr[data-acl^="ALLOW User:carol"] button.danger`)),
		chromedp.WaitVisible(chromedp.CSS("dialog[open] button.danger")),
		chromedp.Click(chromedp.CSS("dialog[open] button.danger")))
	b.waitText("#flash", "Removed: ALLOW User:carol WRITE")
	if got := listed(); strings.Contains(got, "User:carol") {
		t.Fatalf("the API still lists %s after the removal", got)
	}
}
