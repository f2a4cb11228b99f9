package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/server"
)

// newSchemaEnv is a gateway with a registry over an embedded store.
func newSchemaEnv(t *testing.T) *testEnv {
	t.Helper()
	reg := newTestRegistry(t, nil)
	return newTestEnv(t, func(_ *server.Config, c *Config) { c.Schemas = reg })
}

func newTestRegistry(t testing.TB, wrap func(schemaregistry.Store) schemaregistry.Store) *schemaregistry.Registry {
	t.Helper()
	var store schemaregistry.Store
	store, err := schemaregistry.OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		store = wrap(store)
	}
	reg, err := schemaregistry.New(store, schemaregistry.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// body wraps a schema in a registration body.
func body(schema string, extra ...string) string {
	b, _ := json.Marshal(schema)
	return `{"schema":` + string(b) + strings.Join(extra, "") + `}`
}

const (
	srType     = typeSchemaRegistryV1
	orderV1    = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}`
	orderV2    = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
	orderBad   = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"qty","type":"int"}]}`
	addressAvr = `{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}`
)

func (e *testEnv) register(t *testing.T, subject, schema string, extra ...string) int {
	t.Helper()
	a := e.do(t, "POST", "/subjects/"+subject+"/versions", srType, body(schema, extra...))
	var got struct{ ID int }
	a.decode(t, &got)
	if a.status != 200 || got.ID < 1 {
		t.Fatalf("register %s: %d %s", subject, a.status, a.body)
	}
	return got.ID
}

func (a answer) wantJSON(t *testing.T, want string) {
	t.Helper()
	var got, exp any
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
	json.Unmarshal([]byte(want), &exp)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(exp)
	if a.status != 200 || string(g) != string(w) {
		t.Fatalf("got %d %s, want 200 %s", a.status, a.body, want)
	}
}

func TestSchemaRoutesWithoutRegistry(t *testing.T) {
	e := newTestEnv(t)
	for _, path := range []string{"/subjects", "/schemas/ids/1", "/config", "/mode", "/schemas/types"} {
		e.do(t, "GET", path, "", "").wantError(t, 503, codeUnavailable)
	}
	e.do(t, "POST", "/subjects/x/versions", srType, body(`"int"`)).wantError(t, 503, codeUnavailable)
}

func TestSchemaRegisterAndRead(t *testing.T) {
	e := newSchemaEnv(t)
	id := e.register(t, "orders-value", orderV1)
	if again := e.register(t, "orders-value", orderV1); again != id {
		t.Fatalf("same schema again: %d, want %d", again, id)
	}
	id2 := e.register(t, "orders-value", orderV2)
	quoted, _ := json.Marshal(orderV1)

	e.do(t, "GET", "/subjects", "", "").wantJSON(t, `["orders-value"]`)
	e.do(t, "GET", "/subjects/orders-value/versions", "", "").wantJSON(t, `[1,2]`)
	want1 := fmt.Sprintf(`{"subject":"orders-value","version":1,"id":%d,"schema":%s}`, id, quoted)
	e.do(t, "GET", "/subjects/orders-value/versions/1", "", "").wantJSON(t, want1)
	for _, latest := range []string{"latest", "-1"} {
		var info schemaregistry.SchemaInfo
		e.do(t, "GET", "/subjects/orders-value/versions/"+latest, "", "").decode(t, &info)
		if info.Version != 2 || info.ID != id2 {
			t.Fatalf("%s: %+v", latest, info)
		}
	}
	raw := e.do(t, "GET", "/subjects/orders-value/versions/1/schema", "", "")
	if raw.status != 200 || string(raw.body) != orderV1 {
		t.Fatalf("raw schema: %d %s", raw.status, raw.body)
	}
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", id), "", "").wantJSON(t, fmt.Sprintf(`{"schema":%s}`, quoted))
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d?subject=orders-value", id), "", "").wantJSON(t, fmt.Sprintf(`{"schema":%s}`, quoted))
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d?subject=other&fetchMaxId=false", id), "", "").wantJSON(t, fmt.Sprintf(`{"schema":%s}`, quoted))
	if raw := e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d/schema", id), "", ""); string(raw.body) != orderV1 {
		t.Fatalf("raw schema by id: %s", raw.body)
	}
	e.register(t, "copy", orderV1)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d/versions", id), "", "").wantJSON(t, `[{"subject":"copy","version":1},{"subject":"orders-value","version":1}]`)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d/subjects", id), "", "").wantJSON(t, `["copy","orders-value"]`)
	e.do(t, "GET", "/schemas/types", "", "").wantJSON(t, `["AVRO","JSON","PROTOBUF"]`)
	e.do(t, "GET", "/subjects?subjectPrefix=ord", "", "").wantJSON(t, `["orders-value"]`)

	e.do(t, "POST", "/subjects/orders-value", srType, body(" "+orderV2)).wantJSON(t,
		fmt.Sprintf(`{"subject":"orders-value","version":2,"id":%d,"schema":%s}`, id2, mustQuote(orderV2)))
	e.do(t, "POST", "/subjects/orders-value", srType, body(orderBad)).wantError(t, 404, 40403)
	e.do(t, "POST", "/subjects/nobody", srType, body(orderV1)).wantError(t, 404, 40401)
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSchemaContentTypes(t *testing.T) {
	e := newSchemaEnv(t)
	for i, ct := range []string{typeSchemaRegistryV1, typeSchemaRegistry, "application/json", "application/json; charset=utf-8", "", "application/octet-stream"} {
		a := e.do(t, "POST", fmt.Sprintf("/subjects/ct%d/versions", i), ct, body(fmt.Sprintf(`{"type":"enum","name":"E%d","symbols":["A"]}`, i)))
		if a.status != 200 {
			t.Fatalf("content type %q: %d %s", ct, a.status, a.body)
		}
	}
	e.do(t, "POST", "/subjects/ct/versions", "text/plain", body(`"int"`)).wantError(t, 415, codeUnsupportedType)
	req, _ := http.NewRequest("GET", e.url+"/subjects", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != typeSchemaRegistryV1 {
		t.Fatalf("answer content type %q", ct)
	}
	req.Header.Set("Accept", "application/json")
	res, _ = http.DefaultClient.Do(req)
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("answer content type for Accept: application/json: %q", ct)
	}
}

func TestSchemaRegisterErrors(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "orders-value", orderV1)
	a := e.do(t, "POST", "/subjects/orders-value/versions", srType, body(orderBad))
	a.wantError(t, 409, 409)
	if !strings.Contains(string(a.body), "READER_FIELD_MISSING_DEFAULT_VALUE") || !strings.Contains(string(a.body), "/fields/qty") {
		t.Fatalf("409 does not name the breaking change: %s", a.body)
	}
	e.do(t, "POST", "/subjects/x/versions", srType, body(`{"type":"record","name":"R"}`)).wantError(t, 422, 42201)
	e.do(t, "POST", "/subjects/x/versions", srType, body(`"int"`, `,"schemaType":"PROTOBUF"`)).wantError(t, 422, 42201)
	e.do(t, "POST", "/subjects/x/versions", srType, `{"schema":""}`).wantError(t, 422, 42201)
	e.do(t, "POST", "/subjects/x/versions", srType, `{"schema":`).wantError(t, 400, 400)
	e.do(t, "POST", "/subjects/x/versions", srType, `{"schema":42}`).wantError(t, 422, 422)
	e.do(t, "POST", "/subjects/x/versions", srType, body(`"int"`, `,"id":7`)).wantError(t, 422, 42205)
	e.do(t, "POST", "/subjects/x/versions", srType, body(`"int"`, `,"references":[{"name":"shop.Address","subject":"nope","version":1}]`)).wantError(t, 422, 42201)
}

func TestSchemaVersionErrors(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "s", orderV1)
	e.do(t, "GET", "/subjects/nobody/versions", "", "").wantError(t, 404, 40401)
	e.do(t, "GET", "/subjects/nobody/versions/1", "", "").wantError(t, 404, 40401)
	e.do(t, "GET", "/subjects/s/versions/9", "", "").wantError(t, 404, 40402)
	for _, bad := range []string{"abc", "0", "-2", "99999999999"} {
		e.do(t, "GET", "/subjects/s/versions/"+bad, "", "").wantError(t, 422, 42202)
	}
	e.do(t, "GET", "/schemas/ids/999", "", "").wantError(t, 404, 40403)
	e.do(t, "GET", "/schemas/ids/x", "", "").wantError(t, 404, 40403)
	e.do(t, "GET", "/schemas/ids/999/versions", "", "").wantError(t, 404, 40403)
	e.do(t, "GET", "/schemas/ids/999/subjects", "", "").wantError(t, 404, 40403)
}

func TestSchemaDeletes(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "s", orderV1)
	id2 := e.register(t, "s", orderV2)
	e.do(t, "DELETE", "/subjects/s/versions/1", "", "").wantJSON(t, `1`)
	e.do(t, "DELETE", "/subjects/s/versions/1", "", "").wantError(t, 404, 40406)
	e.do(t, "DELETE", "/subjects/s/versions/2?permanent=true", "", "").wantError(t, 404, 40407)
	e.do(t, "DELETE", "/subjects/s/versions/7", "", "").wantError(t, 404, 40402)
	e.do(t, "DELETE", "/subjects/s/versions/x", "", "").wantError(t, 422, 42202)
	e.do(t, "GET", "/subjects/s/versions", "", "").wantJSON(t, `[2]`)
	e.do(t, "GET", "/subjects/s/versions?deleted=true", "", "").wantJSON(t, `[1,2]`)
	e.do(t, "GET", "/subjects/s/versions/1", "", "").wantError(t, 404, 40402)
	if a := e.do(t, "GET", "/subjects/s/versions/1?deleted=true", "", ""); a.status != 200 {
		t.Fatalf("deleted version with deleted=true: %d %s", a.status, a.body)
	}
	e.do(t, "DELETE", "/subjects/s/versions/1?permanent=true", "", "").wantJSON(t, `1`)
	e.do(t, "DELETE", "/subjects/s/versions/1?permanent=true", "", "").wantError(t, 404, 40402)

	e.do(t, "DELETE", "/subjects/s?permanent=true", "", "").wantError(t, 404, 40405)
	e.do(t, "DELETE", "/subjects/s", "", "").wantJSON(t, `[2]`)
	e.do(t, "DELETE", "/subjects/s", "", "").wantError(t, 404, 40404)
	e.do(t, "GET", "/subjects", "", "").wantJSON(t, `[]`)
	e.do(t, "GET", "/subjects?deleted=true", "", "").wantJSON(t, `["s"]`)
	e.do(t, "GET", "/subjects/s/versions/latest", "", "").wantError(t, 404, 40401)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", id2), "", "").wantJSON(t, fmt.Sprintf(`{"schema":%s}`, mustQuote(orderV2)))
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d/versions", id2), "", "").wantJSON(t, `[]`)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d/versions?deleted=true", id2), "", "").wantJSON(t, `[{"subject":"s","version":2}]`)
	e.do(t, "DELETE", "/subjects/s?permanent=true", "", "").wantJSON(t, `[2]`)
	e.do(t, "DELETE", "/subjects/s", "", "").wantError(t, 404, 40401)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", id2), "", "").wantError(t, 404, 40403)
	// Registering again after a permanent delete starts at version 1.
	e.register(t, "s", orderV2)
	e.do(t, "GET", "/subjects/s/versions", "", "").wantJSON(t, `[1]`)
}

func TestSchemaReferences(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "address", addressAvr)
	customer := `{"type":"record","name":"Customer","namespace":"shop","fields":[{"name":"home","type":"Address"}]}`
	refs := `,"references":[{"name":"shop.Address","subject":"address","version":1}]`
	id := e.register(t, "customer", customer, refs)
	e.do(t, "GET", "/subjects/address/versions/1/referencedby", "", "").wantJSON(t, fmt.Sprintf(`[%d]`, id))
	e.do(t, "GET", "/subjects/customer/versions/1/referencedby", "", "").wantJSON(t, `[]`)
	e.do(t, "GET", "/subjects/nobody/versions/1/referencedby", "", "").wantError(t, 404, 40401)
	e.do(t, "GET", fmt.Sprintf("/schemas/ids/%d", id), "", "").wantJSON(t,
		fmt.Sprintf(`{"schema":%s,"references":[{"name":"shop.Address","subject":"address","version":1}]}`, mustQuote(customer)))
	var info schemaregistry.SchemaInfo
	e.do(t, "GET", "/subjects/customer/versions/1", "", "").decode(t, &info)
	if len(info.References) != 1 || info.References[0].Subject != "address" {
		t.Fatalf("version with references: %+v", info)
	}
	e.do(t, "POST", "/subjects/customer", srType, body(customer, refs)).decode(t, &info)
	if info.ID != id {
		t.Fatalf("lookup with references: %+v", info)
	}
	e.do(t, "DELETE", "/subjects/address", "", "").wantError(t, 422, 42206)
	e.do(t, "DELETE", "/subjects/address/versions/1", "", "").wantError(t, 422, 42206)
}

func TestSchemaCompatibilityRoute(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "s", orderV1)
	e.do(t, "POST", "/compatibility/subjects/s/versions/latest", srType, body(orderV2)).wantJSON(t, `{"is_compatible":true}`)
	e.do(t, "POST", "/compatibility/subjects/s/versions/1?verbose=true", srType, body(orderV2)).wantJSON(t, `{"is_compatible":true,"messages":[]}`)
	e.do(t, "POST", "/compatibility/subjects/s/versions/latest", srType, body(orderBad)).wantJSON(t, `{"is_compatible":false}`)
	var verbose struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	a := e.do(t, "POST", "/compatibility/subjects/s/versions/-1?verbose=true", srType, body(orderBad))
	a.decode(t, &verbose)
	if verbose.IsCompatible || len(verbose.Messages) == 0 || !strings.Contains(verbose.Messages[0], "/fields/qty") {
		t.Fatalf("verbose: %s", a.body)
	}
	e.do(t, "POST", "/compatibility/subjects/s/versions", srType, body(orderV2)).wantJSON(t, `{"is_compatible":true}`)
	e.do(t, "POST", "/compatibility/subjects/s/versions/5", srType, body(orderV2)).wantError(t, 404, 40402)
	e.do(t, "POST", "/compatibility/subjects/nobody/versions/1", srType, body(orderV2)).wantError(t, 404, 40401)
	e.do(t, "POST", "/compatibility/subjects/nobody/versions/latest", srType, body(orderV2)).wantJSON(t, `{"is_compatible":true}`)
	e.do(t, "POST", "/compatibility/subjects/s/versions/zz", srType, body(orderV2)).wantError(t, 422, 42202)
	e.do(t, "POST", "/compatibility/subjects/s/versions/latest", srType, body(`{`)).wantError(t, 422, 42201)
}

func TestSchemaConfigRoutes(t *testing.T) {
	e := newSchemaEnv(t)
	e.do(t, "GET", "/config", "", "").wantJSON(t, `{"compatibilityLevel":"BACKWARD"}`)
	e.do(t, "PUT", "/config", srType, `{"compatibility":"full"}`).wantJSON(t, `{"compatibility":"FULL"}`)
	e.do(t, "GET", "/config", "", "").wantJSON(t, `{"compatibilityLevel":"FULL"}`)
	e.do(t, "PUT", "/config", srType, `{"compatibility":"SOMETIMES"}`).wantError(t, 422, 42203)
	e.register(t, "s", orderV1)
	e.do(t, "GET", "/config/s", "", "").wantError(t, 404, 40408)
	e.do(t, "GET", "/config/s?defaultToGlobal=true", "", "").wantJSON(t, `{"compatibilityLevel":"FULL"}`)
	e.do(t, "PUT", "/config/s", srType, `{"compatibility":"NONE"}`).wantJSON(t, `{"compatibility":"NONE"}`)
	e.do(t, "GET", "/config/s", "", "").wantJSON(t, `{"compatibilityLevel":"NONE"}`)
	e.register(t, "s", orderBad) // NONE lets it through
	e.do(t, "DELETE", "/config/s", "", "").wantJSON(t, `{"compatibilityLevel":"NONE"}`)
	e.do(t, "DELETE", "/config/s", "", "").wantError(t, 404, 40408)
	e.do(t, "DELETE", "/config/nobody", "", "").wantError(t, 404, 40401)
	e.do(t, "DELETE", "/config", "", "").wantJSON(t, `{"compatibilityLevel":"FULL"}`)
	e.do(t, "GET", "/config", "", "").wantJSON(t, `{"compatibilityLevel":"BACKWARD"}`)
}

func TestSchemaModeRoutes(t *testing.T) {
	e := newSchemaEnv(t)
	e.do(t, "GET", "/mode", "", "").wantJSON(t, `{"mode":"READWRITE"}`)
	e.register(t, "s", orderV1)
	e.do(t, "PUT", "/mode/s", srType, `{"mode":"READONLY"}`).wantJSON(t, `{"mode":"READONLY"}`)
	e.do(t, "GET", "/mode/s", "", "").wantJSON(t, `{"mode":"READONLY"}`)
	e.do(t, "POST", "/subjects/s/versions", srType, body(orderV2)).wantError(t, 422, 42205)
	e.do(t, "DELETE", "/subjects/s", "", "").wantError(t, 422, 42205)
	e.do(t, "DELETE", "/mode/s", "", "").wantJSON(t, `{"mode":"READONLY"}`)
	e.do(t, "GET", "/mode/s", "", "").wantError(t, 404, 40409)
	e.do(t, "GET", "/mode/s?defaultToGlobal=true", "", "").wantJSON(t, `{"mode":"READWRITE"}`)
	e.do(t, "PUT", "/mode", srType, `{"mode":"SOMETIMES"}`).wantError(t, 422, 42204)
	e.do(t, "PUT", "/mode", srType, `{"mode":"IMPORT"}`).wantError(t, 422, 42205)
	e.do(t, "PUT", "/mode?force=true", srType, `{"mode":"IMPORT"}`).wantJSON(t, `{"mode":"IMPORT"}`)
	if id := e.register(t, "imported", `"string"`, `,"id":300,"version":4`); id != 300 {
		t.Fatalf("imported id %d", id)
	}
	e.do(t, "GET", "/subjects/imported/versions", "", "").wantJSON(t, `[4]`)
	e.do(t, "POST", "/subjects/other/versions", srType, body(`"int"`, `,"id":300`)).wantError(t, 422, 42205)
	e.do(t, "PUT", "/mode", srType, `{"mode":"READWRITE"}`).wantJSON(t, `{"mode":"READWRITE"}`)
	if id := e.register(t, "after", `"long"`); id <= 300 {
		t.Fatalf("id after import %d, want > 300", id)
	}
}

func TestSchemaSubjectWithSlash(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "team%2Forders", orderV1)
	e.do(t, "GET", "/subjects", "", "").wantJSON(t, `["team/orders"]`)
	e.do(t, "GET", "/subjects/team%2Forders/versions", "", "").wantJSON(t, `[1]`)
}

// failingStore fails reads with err, as a broken database would.
type failingStore struct {
	schemaregistry.Store
	err error
}

func (f failingStore) Subjects(context.Context) ([]schemaregistry.SubjectInfo, error) {
	return nil, f.err
}

func (f failingStore) Versions(context.Context, string) ([]schemaregistry.Version, error) {
	return nil, f.err
}

func TestSchemaStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{errors.New("disk on fire"), 50001},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), 50002},
		{&netError{}, 50003},
	} {
		reg := newTestRegistry(t, func(s schemaregistry.Store) schemaregistry.Store { return failingStore{s, tc.err} })
		e := newTestEnv(t, func(_ *server.Config, c *Config) { c.Schemas = reg })
		e.do(t, "GET", "/subjects", "", "").wantError(t, 500, tc.code)
		e.do(t, "GET", "/subjects/s/versions", "", "").wantError(t, 500, tc.code)
		e.do(t, "POST", "/subjects/s/versions", srType, body(`"int"`)).wantError(t, 500, tc.code)
	}
}

type netError struct{}

func (*netError) Error() string   { return "connection refused" }
func (*netError) Timeout() bool   { return false }
func (*netError) Temporary() bool { return false }

// BenchmarkSchemaRegister measures registering new schemas through the
// handler over the embedded store (one fsync per registration).
func BenchmarkSchemaRegister(b *testing.B) {
	h := benchHandler(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		schema := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"id","type":"long"},{"name":"v","type":"string"}]}`, i)
		w := serve(h, "POST", fmt.Sprintf("/subjects/bench-%d/versions", i/100), body(schema))
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schemas/s")
}

// BenchmarkSchemaByID measures GET /schemas/ids/{id} from the cache.
func BenchmarkSchemaByID(b *testing.B) {
	h := benchHandler(b)
	var ids []string
	for i := 0; i < 50; i++ {
		w := serve(h, "POST", "/subjects/ids/versions", body(fmt.Sprintf(`{"type":"enum","name":"E%d","symbols":["A"]}`, i)))
		var got struct{ ID int }
		json.Unmarshal(w.Body.Bytes(), &got)
		ids = append(ids, fmt.Sprint(got.ID))
	}
	serve(h, "PUT", "/config", `{"compatibility":"NONE"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := serve(h, "GET", "/schemas/ids/"+ids[i%len(ids)], "")
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}

func benchHandler(b *testing.B) http.Handler {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { broker.Close() })
	reg := newTestRegistry(b, nil)
	reg.SetCompatibility(context.Background(), "", "NONE")
	g, err := New(broker, Config{Logger: logger, Schemas: reg})
	if err != nil {
		b.Fatal(err)
	}
	return g.Handler()
}

func serve(h http.Handler, method, path, reqBody string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(reqBody))
	req.Header.Set("Content-Type", srType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func httpRequest(method, path, contentType, reqBody string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(reqBody))
	req.Header.Set("Content-Type", contentType)
	return req
}

func serveRequest(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestSchemaDiffRoute(t *testing.T) {
	e := newSchemaEnv(t)
	e.register(t, "s", orderV1)
	e.register(t, "s", orderV2)
	var res struct {
		From          struct{ Version int }
		To            *struct{ Version int }
		Compatibility map[string]bool
		Changes       []struct {
			Kind, Path        string
			Backward, Forward bool
			Levels            map[string]bool
		}
	}
	a := e.do(t, "GET", "/subjects/s/diff?from=1&to=2", "", "")
	a.decode(t, &res)
	if a.status != 200 || res.To == nil || res.To.Version != 2 || len(res.Changes) != 1 ||
		res.Changes[0].Kind != "FIELD_ADDED" || res.Changes[0].Path != "/fields/note" || !res.Changes[0].Levels["FULL"] || !res.Compatibility["FULL_TRANSITIVE"] {
		t.Fatalf("diff 1→2: %d %s", a.status, a.body)
	}
	a = e.do(t, "POST", "/subjects/s/diff", srType, body(orderBad))
	res.To, res.Changes = nil, nil
	a.decode(t, &res)
	if a.status != 200 || res.From.Version != 2 || res.To != nil || res.Compatibility["BACKWARD"] || len(res.Changes) != 2 {
		t.Fatalf("candidate diff: %d %s", a.status, a.body)
	}
	e.do(t, "GET", "/subjects/s/diff", "", "").wantError(t, 422, 42202)
	e.do(t, "GET", "/subjects/s/diff?from=x", "", "").wantError(t, 422, 42202)
	e.do(t, "GET", "/subjects/s/diff?from=1&to=9", "", "").wantError(t, 404, 40402)
	e.do(t, "GET", "/subjects/nobody/diff?from=1", "", "").wantError(t, 404, 40401)
	e.do(t, "POST", "/subjects/s/diff", srType, body(`{"type":"nope"}`)).wantError(t, 422, 42201)
}

func TestSchemaRegisterIgnoresUnsetIDAndVersion(t *testing.T) {
	e := newSchemaEnv(t)
	for _, extra := range []string{`,"id":-1,"version":-1`, `,"id":0,"version":0`, `,"id":null`} {
		e.register(t, "s", `"int"`, extra)
	}
	e.do(t, "GET", "/subjects/s/versions", "", "").wantJSON(t, `[1]`)
}
