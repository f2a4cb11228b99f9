package api

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// Each principal has its own budget: one that spends it is answered 429
// with Retry-After, another is not, and the budget refills with time.
func TestRateLimitPerPrincipal(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_900_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	creds := &memCredentials{}
	creds.set(t, "busy", "pw", auth.ScramSHA256)
	creds.set(t, "calm", "pw", auth.ScramSHA256)
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.RequestsPerSecond = 5
	})
	e.gateway.limiter.Now = clock // the test's clock drives the limiter
	basic := func(user string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":pw"))}
	}
	ok := 0
	var limited answer
	for range 20 {
		a := e.request(t, "GET", "/topics", basic("busy"), "")
		if a.status == http.StatusOK {
			ok++
			continue
		}
		limited = a
		break
	}
	if ok < 5 || ok > 10 || limited.status != http.StatusTooManyRequests {
		t.Fatalf("%d requests passed before %d %s; want 5 to 10 (a second's burst), then 429", ok, limited.status, limited.body)
	}
	limited.wantError(t, http.StatusTooManyRequests, codeRateLimited)
	if s, err := strconv.Atoi(limited.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", limited.header.Get("Retry-After"))
	}
	if a := e.request(t, "GET", "/topics", basic("calm"), ""); a.status != http.StatusOK {
		t.Fatalf("another principal is limited too: %d %s", a.status, a.body)
	}
	if a := e.request(t, "GET", "/healthz", nil, ""); a.status != http.StatusOK {
		t.Fatalf("health check limited: %d", a.status)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if a := e.request(t, "GET", "/topics", basic("busy"), ""); a.status != http.StatusOK {
		t.Fatalf("after 2 s the budget has not refilled: %d %s", a.status, a.body)
	}
}
