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
	"github.com/ferry-mq/ferry/server/metrics"
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
	body := benchBody()
	post := postBenchBody(b, benchGateway(b, Config{}, nil).Handler(), body, "")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		post()
	}
	b.ReportMetric(float64(b.N*10)/b.Elapsed().Seconds(), "records/s")
}

// benchGateway is a single node's gateway on a fresh data dir (cfg's
// Logger and Metrics set here; m may be nil), for the produce benchmarks.
func benchGateway(tb testing.TB, cfg Config, m *metrics.Metrics) *Gateway {
	tb.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: tb.TempDir(), AutoCreateTopics: true, Metrics: m}, logger)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { broker.Close() })
	cfg.Logger, cfg.Metrics = logger, m
	g, err := New(broker, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// postBenchBody returns a call that POSTs body to /kafka/topic1 on h as
// the bench script does (with header as Authorization, or as Cookie when
// it is a session cookie), failing tb unless it is answered 200.
func postBenchBody(tb testing.TB, h http.Handler, body, header string) func() {
	return func() {
		req := httptest.NewRequest("POST", "/kafka/topic1", strings.NewReader(body))
		req.Header.Set("Content-Type", typeJSON)
		switch {
		case strings.HasPrefix(header, sessionCookie+"="):
			req.Header.Set("Cookie", header)
		case header != "":
			req.Header.Set("Authorization", header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			tb.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkProduceAuthenticated is BenchmarkProduceHandler with and
// without HTTP authentication, sub-benchmarks of one run so the ratio is
// measured on the same machine state: "none", then Basic with a SCRAM
// user (the verification cached after the first request, as a client
// with a keep-alive connection or a long-lived token meets it), then
// the session cookie. Target: authentication costs at most 10%.
func BenchmarkProduceAuthenticated(b *testing.B) {
	creds := &memCredentials{}
	cred, err := auth.NewScramCredential(auth.ScramSHA512, "s3cret", auth.DefaultScramIterations)
	if err != nil {
		b.Fatal(err)
	}
	creds.users = map[string]auth.ScramCredential{"bench": cred}
	body := benchBody()
	for _, mode := range []string{"none", "basic", "session", "basic+acl"} {
		b.Run(mode, func(b *testing.B) {
			var cfg Config
			if mode != "none" {
				cfg.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
			}
			if mode == "basic+acl" {
				cfg.Authorizer = writerOf{auth.User("bench"), "topic1"}
			}
			g := benchGateway(b, cfg, nil)
			header := ""
			switch mode {
			case "basic", "basic+acl":
				header = "Basic " + base64.StdEncoding.EncodeToString([]byte("bench:s3cret"))
			case "session":
				value, _ := g.authn.issueSession("bench", cred)
				header = sessionCookie + "=" + value
			}
			post := postBenchBody(b, g.Handler(), body, header)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				post()
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
	noop := chi.NewRouter()
	answer := []byte(`{"offsets":[{"partition":0,"offset":0}]}` + "\n")
	noop.Post("/kafka/{topic}", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", typeJSON)
		w.Write(answer)
	})
	body := benchBody()
	ferry := testing.AllocsPerRun(200, postBenchBody(t, benchGateway(t, Config{}, nil).Handler(), body, ""))
	baseline := testing.AllocsPerRun(200, postBenchBody(t, noop, body, ""))
	// The request recorder (with its body guard), the body's size limit
	// and the log's published segment view.
	if own := ferry - baseline; own > 3 {
		t.Fatalf("produce allocates %.0f times per request beyond the no-op handler's %.0f, want at most 3", own, baseline)
	}
}
