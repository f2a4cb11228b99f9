package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

// benchBody is what scripts/bench-http.sh sends: 10 JSON records of ~100 bytes.
func benchBody() string {
	var recs []string
	for i := 1; i <= 10; i++ {
		recs = append(recs, fmt.Sprintf(`{"key":"user-%d","value":{"id":%d,"event":"page_view","path":"/products/%05d","agent":"wrk-benchmark/4.2"}}`, i, i, i*7919%100000))
	}
	return `{"records":[` + strings.Join(recs, ",") + `]}`
}

// BenchmarkProduceHandler measures the gateway's produce path in process
// (decode, partition, encode, append, answer) without the network.
func BenchmarkProduceHandler(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	g, _ := New(broker, Config{Logger: logger})
	h := g.Handler()
	body := benchBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
		req.Header.Set("Content-Type", typeJSON)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkProduceAuthenticated is BenchmarkProduceHandler with and
// without HTTP authentication, sub-benchmarks of one run so the ratio is
// measured on the same machine state: "none", then Basic with a SCRAM
// user (the verification cached after the first request, as a client
// with a keep-alive connection or a long-lived token meets it), then
// the session cookie. Target: authentication costs at most 10%.
func BenchmarkProduceAuthenticated(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	creds := &memCredentials{}
	cred, err := auth.NewScramCredential(auth.ScramSHA512, "s3cret", auth.DefaultScramIterations)
	if err != nil {
		b.Fatal(err)
	}
	creds.users = map[string]auth.ScramCredential{"bench": cred}
	body := benchBody()
	for _, mode := range []string{"none", "basic", "session", "basic+acl"} {
		b.Run(mode, func(b *testing.B) {
			broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, logger)
			if err != nil {
				b.Fatal(err)
			}
			defer broker.Close()
			cfg := Config{Logger: logger}
			if mode != "none" {
				cfg.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
			}
			if mode == "basic+acl" {
				cfg.Authorizer = writerOf{auth.User("bench"), "topic1"}
			}
			g, err := New(broker, cfg)
			if err != nil {
				b.Fatal(err)
			}
			h := g.Handler()
			header := ""
			switch mode {
			case "basic", "basic+acl":
				header = "Basic " + base64.StdEncoding.EncodeToString([]byte("bench:s3cret"))
			case "session":
				value, _ := g.authn.issueSession("bench", cred)
				header = sessionCookie + "=" + value
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
				req.Header.Set("Content-Type", typeJSON)
				if mode == "session" {
					req.Header.Set("Cookie", header)
				} else if header != "" {
					req.Header.Set("Authorization", header)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// writerOf allows one principal to write one topic: an authorizer whose
// own cost is a few comparisons, so the benchmark measures the gateway's.
type writerOf struct {
	p     auth.Principal
	topic string
}

func (w writerOf) Authorize(_ context.Context, a auth.Action) bool {
	return a.Principal == w.p && a.Operation == auth.OpWrite && a.Resource == auth.Resource{Type: auth.ResourceTopic, Name: w.topic}
}

// TestProduceHandlerAllocations counts what the gateway's produce path
// allocates beyond a no-op chi handler that reads the body and answers
// (test/bench/noop's), both served the bench script's request through
// httptest, so the count is ferry's own and does not creep back.
func TestProduceHandlerAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	g, err := New(broker, Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	noop := chi.NewRouter()
	answer := []byte(`{"offsets":[{"partition":0,"offset":0}]}` + "\n")
	noop.Post("/kafka/{topic}", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", typeJSON)
		w.Write(answer)
	})
	body := benchBody()
	serve := func(h http.Handler) func() {
		return func() {
			req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
			req.Header.Set("Content-Type", typeJSON)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	}
	ferry, baseline := testing.AllocsPerRun(200, serve(g.Handler())), testing.AllocsPerRun(200, serve(noop))
	// The request recorder (with its body guard), the body's size limit
	// and the log's published segment view.
	if own := ferry - baseline; own > 3 {
		t.Fatalf("produce allocates %.0f times per request beyond the no-op handler's %.0f, want at most 3", own, baseline)
	}
}
