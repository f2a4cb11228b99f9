package api

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
)

// requestHost is request with an explicit Host header.
func (e *testEnv) requestHost(t *testing.T, method, path, host string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, body: data}
}

func TestCrossOriginStateChangesRefused(t *testing.T) {
	e := newTestEnv(t)
	crossSite := map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": typeJSON}
	evilOrigin := map[string]string{"Origin": "http://evil.example", "Content-Type": typeJSON}
	for _, h := range []map[string]string{crossSite, evilOrigin} {
		e.request(t, "POST", "/topics", h, `{"name":"x","partitions":1}`).wantError(t, http.StatusForbidden, codeCrossOrigin)
		e.request(t, "POST", "/kafka/x", h, `{"a":1}`).wantError(t, http.StatusForbidden, codeCrossOrigin)
		e.request(t, "POST", "/subjects/x-value/versions", h, `{"schema":"\"int\""}`).wantError(t, http.StatusForbidden, codeCrossOrigin)
		e.request(t, "POST", "/consumers/g", h, `{}`).wantError(t, http.StatusForbidden, codeCrossOrigin)
		e.request(t, "POST", "/groups/g/offsets/reset", h, `{}`).wantError(t, http.StatusForbidden, codeCrossOrigin)
		e.request(t, "GET", "/kafka/x/stream?group=g", h, "").wantError(t, http.StatusForbidden, codeCrossOrigin)
	}
	if a := e.do(t, "GET", "/topics/x", "", ""); a.status != http.StatusNotFound {
		t.Fatalf("topic x exists after refused requests: %d %s", a.status, a.body)
	}
	// Reads stay open to any origin; the page's own requests and curl work.
	if a := e.request(t, "GET", "/topics", crossSite, ""); a.status != 200 {
		t.Errorf("cross-site GET /topics: %d %s", a.status, a.body)
	}
	sameOrigin := map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": typeJSON}
	if a := e.request(t, "POST", "/topics", sameOrigin, `{"name":"x","partitions":1}`); a.status != 201 {
		t.Errorf("same-origin create: %d %s", a.status, a.body)
	}
	if a := e.do(t, "POST", "/kafka/x", typeFormURLEncode, `{"a":1}`); a.status != 200 {
		t.Errorf("curl -d produce: %d %s", a.status, a.body)
	}
}

func TestBrowserSimpleBodiesRefused(t *testing.T) {
	e := newTestEnv(t)
	for _, ct := range []string{"text/plain;charset=UTF-8", typeFormURLEncode, "multipart/form-data; boundary=x", ""} {
		h := map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": ct}
		e.request(t, "POST", "/kafka/t", h, `{"a":1}`).wantError(t, http.StatusUnsupportedMediaType, codeUnsupportedType)
		e.request(t, "POST", "/topics", h, `{"name":"t","partitions":1}`).wantError(t, http.StatusUnsupportedMediaType, codeUnsupportedType)
	}
	// A body-less state change from the page is not a body of the wrong type.
	h := map[string]string{"Sec-Fetch-Site": "same-origin"}
	e.do(t, "POST", "/topics", typeJSON, `{"name":"gone","partitions":1}`)
	if a := e.request(t, "DELETE", "/topics/gone", h, ""); a.status != http.StatusNoContent {
		t.Errorf("same-origin DELETE: %d %s", a.status, a.body)
	}
}

func TestBrowserHostAllowList(t *testing.T) {
	browser := map[string]string{"Sec-Fetch-Site": "none"}
	e := newTestEnv(t, func(_ *server.Config, c *Config) { c.HostNames = []string{"ferry-1.internal"} })
	for host, want := range map[string]int{
		"localhost:8080": 200, "127.0.0.1:8080": 200, "[::1]:8080": 200, "10.1.2.3": 200,
		"ui.localhost": 200, "ferry-1.internal:8080": 200, "FERRY-1.internal": 200,
		"evil.example:8080": http.StatusForbidden, "localhost.evil.example": http.StatusForbidden,
	} {
		a := e.requestHost(t, "GET", "/topics", host, browser, "")
		if a.status != want {
			t.Errorf("browser with Host %s: %d %s; want %d", host, a.status, a.body, want)
		}
		if want == http.StatusForbidden {
			a.wantError(t, http.StatusForbidden, codeHostNotAllowed)
		}
		if a := e.requestHost(t, "GET", "/topics", host, nil, ""); a.status != 200 {
			t.Errorf("non-browser with Host %s: %d", host, a.status)
		}
	}
	listed := newTestEnv(t, func(_ *server.Config, c *Config) { c.AllowedHosts = []string{"ferry.example.com"} })
	if a := listed.requestHost(t, "GET", "/topics", "ferry.example.com:443", browser, ""); a.status != 200 {
		t.Errorf("listed host: %d", a.status)
	}
	if a := listed.requestHost(t, "GET", "/topics", "127.0.0.1", browser, ""); a.status != http.StatusForbidden {
		t.Errorf("unlisted IP with an explicit list: %d", a.status)
	}
}

func TestDocsHaveThePagePolicy(t *testing.T) {
	e := newTestEnv(t)
	for _, path := range []string{"/docs", "/docs/swagger-initializer.js", "/ui/"} {
		res, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if res.StatusCode != 200 || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: %d, CSP %q", path, res.StatusCode, csp)
		}
	}
}
