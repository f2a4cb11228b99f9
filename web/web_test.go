package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func TestHandlerServesAssetsAndFallsBackToIndex(t *testing.T) {
	h := Handler()
	for _, c := range []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html", `<script type="module" src="js/app.js">`},
		{"/ui/index.html", "", ""},                            // redirected to /ui/ by net/http
		{"/ui/topics/orders", "text/html", `<main id="main"`}, // a deep link: the page, whose router reads the hash
		{"/ui/js/app.js", "text/javascript", "hashchange"},
		{"/ui/style.css", "text/css", ":focus-visible"},
		{"/ui/logo.svg", "image/svg+xml", "<svg"},
		{"/ui/js/", "text/html", `<main id="main"`}, // a directory is never listed
	} {
		res, body := get(t, h, http.MethodGet, c.path)
		if c.contentType == "" {
			if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "./" {
				t.Errorf("GET %s: %d Location %q", c.path, res.StatusCode, res.Header.Get("Location"))
			}
			continue
		}
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), c.contentType) || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s: %d %q, body has %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.contains, strings.Contains(body, c.contains))
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
	}
	if res, _ := get(t, h, http.MethodPost, "/ui/"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", res.StatusCode)
	}
	if res, body := get(t, h, http.MethodHead, "/ui/js/api.js"); res.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD: %d with %d body bytes", res.StatusCode, len(body))
	}
}

// The page works offline: no asset loads anything from another origin.
func TestAssetsAreSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import\s+url\(\s*["']?(https?:)?//|import\s*\(?\s*["'](https?:)?//|from\s+["'](https?:)?//`)
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		if m := external.Find(data); m != nil {
			t.Errorf("%s loads from another origin: %s", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every module that index.html or a module imports is embedded.
func TestModuleImportsResolve(t *testing.T) {
	imports := regexp.MustCompile(`(?m)^import .* from '\./([a-z]+\.js)';$`)
	entries, err := fs.ReadDir(assets, "assets/js")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := fs.ReadFile(assets, "assets/js/"+e.Name())
		for _, m := range imports.FindAllSubmatch(data, -1) {
			if _, err := fs.Stat(assets, "assets/js/"+string(m[1])); err != nil {
				t.Errorf("%s imports %s, which is not embedded", e.Name(), m[1])
			}
		}
	}
}
