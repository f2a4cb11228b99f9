package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v4"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/internal/specgen"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/metrics"
)

// moduleRoot is where swag runs: the test runs in openapi/.
const moduleRoot = ".."

// TestSpecIsFresh regenerates the spec with the pinned swag into a temp
// folder and compares it with the committed files.
func TestSpecIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds swag and regenerates the spec")
	}
	makefile, err := os.ReadFile(filepath.Join(moduleRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if pin := "SWAG_VERSION := " + specgen.SwagVersion; !bytes.Contains(makefile, []byte(pin)) {
		t.Fatalf("the Makefile does not pin %q, as specgen.SwagVersion does", pin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := t.TempDir()
	install := exec.CommandContext(ctx, goTool(), "install", specgen.SwagPackage+"@"+specgen.SwagVersion)
	install.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install swag: %v\n%s", err, out)
	}
	out := t.TempDir()
	if err := specgen.Generate(ctx, filepath.Join(bin, "swag"), moduleRoot, out); err != nil {
		t.Fatal(err)
	}
	for _, name := range specgen.Files {
		fresh, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("openapi/%s is out of date with the annotations (run `make openapi`); first difference:\n%s",
				name, firstDiff(committed, fresh))
		}
	}
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// firstDiff shows the first line where two texts differ.
func firstDiff(committed, fresh []byte) string {
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(fresh), "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb {
			return fmt.Sprintf("line %d\n  committed: %s\n  generated: %s", i+1, la, lb)
		}
	}
	return "(none)"
}

// TestSpecParses checks that every generated file parses, as JSON or YAML
// and as Swagger 2.0 or OpenAPI 3.0, and that each YAML says what its JSON
// says.
func TestSpecParses(t *testing.T) {
	v2JSON := mustSpec(t, "swagger.json")
	var v2 openapi2.T
	if err := json.Unmarshal(v2JSON, &v2); err != nil {
		t.Fatalf("swagger.json is not Swagger 2.0: %v", err)
	}
	if v2.Swagger != "2.0" || len(v2.Paths) == 0 {
		t.Fatalf("swagger.json: swagger %q with %d paths", v2.Swagger, len(v2.Paths))
	}
	v3JSON := mustSpec(t, "openapi3.json")
	doc, err := openapi3.NewLoader().LoadFromData(v3JSON)
	if err != nil {
		t.Fatalf("openapi3.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi3.json is not valid OpenAPI 3: %v", err)
	}
	if doc.Paths.Len() != len(v2.Paths) {
		t.Errorf("openapi3.json has %d paths, swagger.json %d", doc.Paths.Len(), len(v2.Paths))
	}
	sameTree(t, "swagger.yaml", v2JSON, mustSpec(t, "swagger.yaml"))
	sameTree(t, "openapi3.yaml", v3JSON, mustSpec(t, "openapi3.yaml"))
}

func mustSpec(t *testing.T, name string) []byte {
	t.Helper()
	data, err := openapi.Spec(name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".json") && !json.Valid(data) {
		t.Fatalf("%s is not JSON", name)
	}
	return data
}

// sameTree compares a YAML file with the JSON it should restate.
func sameTree(t *testing.T, name string, jsonText, yamlText []byte) {
	t.Helper()
	var fromJSON, fromYAML any
	if err := json.Unmarshal(jsonText, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(yamlText, &fromYAML); err != nil {
		t.Fatalf("%s is not YAML: %v", name, err)
	}
	// Round-trip the YAML through JSON so numbers and maps compare alike.
	j, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var normalized any
	json.Unmarshal(j, &normalized)
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(normalized)
	if !bytes.Equal(a, b) {
		t.Errorf("%s does not say what its JSON says", name)
	}
}

// newHandler is the real route tree over a broker in a temp dir.
func newHandler(t *testing.T) http.Handler {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// Every optional route on: /metrics needs Metrics.
	g, err := api.New(b, api.Config{Logger: logger, AdvertisedKafkaAddr: "localhost:9092", Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	return g.Handler()
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// routeKey names a route by method and path, with parameter names erased
// (chi's {topic} and the spec's {topic} alike; chi's trailing * is a
// parameter too).
func routeKey(method, path string) string {
	if strings.HasSuffix(path, "/*") {
		path = strings.TrimSuffix(path, "*") + "{}"
	}
	return strings.ToUpper(method) + " " + pathParam.ReplaceAllString(path, "{}")
}

// allMethods are the methods an OpenAPI path item can hold. chi registers
// these and more (QUERY) for r.Handle and r.Mount; such a route is
// documented by its GET.
var allMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}

func servesAll(methods []string) bool {
	for _, m := range allMethods {
		if !slices.Contains(methods, m) {
			return false
		}
	}
	return true
}

// TestEveryRouteIsDocumented walks the real route tree with chi.Walk and
// checks it against swagger.json (and openapi3.json) both ways.
func TestEveryRouteIsDocumented(t *testing.T) {
	routes, ok := newHandler(t).(chi.Routes)
	if !ok {
		t.Fatal("api.Gateway.Handler() is not a chi router, so its routes cannot be walked")
	}
	served := map[string]string{} // key -> chi's method and pattern
	byPattern := map[string][]string{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/") // chi's mount joints
		byPattern[route] = append(byPattern[route], method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for route, methods := range byPattern {
		if servesAll(methods) {
			methods = []string{"GET"}
		}
		for _, m := range methods {
			served[routeKey(m, route)] = m + " " + route
		}
	}
	for _, file := range []string{"swagger.json", "openapi3.json"} {
		var spec struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(mustSpec(t, file), &spec); err != nil {
			t.Fatal(err)
		}
		documented := map[string]string{}
		for path, ops := range spec.Paths {
			for method := range ops {
				if slices.Contains(allMethods, strings.ToUpper(method)) {
					documented[routeKey(method, path)] = strings.ToUpper(method) + " " + path
				}
			}
		}
		var missing, extra []string
		for k, route := range served {
			if _, ok := documented[k]; !ok {
				missing = append(missing, route)
			}
		}
		for k, route := range documented {
			if _, ok := served[k]; !ok {
				extra = append(extra, route)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		for _, route := range missing {
			t.Errorf("route %s is served by api.Gateway.Handler but not in openapi/%s: annotate its handler (@Router) and run `make openapi`", route, file)
		}
		for _, route := range extra {
			t.Errorf("openapi/%s documents %s, which api.Gateway.Handler does not serve", file, route)
		}
		if len(documented) == 0 {
			t.Errorf("openapi/%s documents no routes", file)
		}
	}
}

// TestServe asks a real handler for the description and Swagger UI.
func TestServe(t *testing.T) {
	srv := httptest.NewServer(newHandler(t))
	defer srv.Close()
	for _, c := range []struct {
		path, contentType, contains string
	}{
		{"/openapi.json", "application/json", `"openapi": "3.0`},
		{"/openapi.yaml", "application/yaml", "openapi: 3.0"},
		{"/docs", "text/html", "swagger-ui-bundle.js"},
		{"/docs/", "text/html", "swagger-ui-bundle.js"},
		{"/docs/swagger-initializer.js", "text/javascript", `"/openapi.json"`},
		{"/docs/swagger-ui-bundle.js", "text/javascript", "SwaggerUIBundle"},
		{"/docs/swagger-ui-standalone-preset.js", "text/javascript", "SwaggerUIStandalonePreset"},
		{"/docs/swagger-ui.css", "text/css", ".swagger-ui"},
	} {
		res, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %.200s", c.path, res.StatusCode, body)
			continue
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", c.path, ct, c.contentType)
		}
		if !bytes.Contains(body, []byte(c.contains)) {
			t.Errorf("GET %s: the body does not contain %q", c.path, c.contains)
		}
	}
	res, err := http.Get(srv.URL + "/docs/no-such-file.js")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /docs/no-such-file.js: %d, want 404", res.StatusCode)
	}
}

// nonErrorBodies are the error answers that are not the Error body, and why.
var nonErrorBodies = map[string]string{
	"GET /readyz 503":         "answers its checks, as on 200",
	"GET /docs/{asset} 404":   "a static file server's text",
	"GET /ui/{path} 405":      "the admin page's static file server's text",
	"POST /kafka/{topic} 503": "ProduceError: Error's fields, with the offsets of a request some of whose partitions were written",
}

// TestOperationsAreDescribed checks every operation has a summary and a
// tag, and that every 4xx and 5xx answer is the Error body (with a
// description of its codes), unless listed in nonErrorBodies.
func TestOperationsAreDescribed(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(mustSpec(t, "openapi3.json"))
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.Summary == "" || len(op.Tags) == 0 {
				t.Errorf("%s: no @Summary or @Tags", name)
			}
			for code, res := range op.Responses.Map() {
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				if _, ok := nonErrorBodies[name+" "+code]; ok {
					continue
				}
				if res.Value == nil || res.Value.Description == nil || *res.Value.Description == "" {
					t.Errorf("%s %s: no description of the error codes", name, code)
					continue
				}
				for ct, media := range res.Value.Content {
					if media.Schema == nil || media.Schema.Ref != "#/components/schemas/Error" {
						t.Errorf("%s %s (%s): the answer is not {object} errorBody (Error)", name, code, ct)
					}
				}
				if len(res.Value.Content) == 0 {
					t.Errorf("%s %s: no body; errors answer errorBody (Error)", name, code)
				}
			}
		}
	}
}
