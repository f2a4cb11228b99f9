package api

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/metrics"
)

// syncBuffer collects log output written from the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestObservedServer runs the gateway in NewHTTPServer (with its
// connection tracker) on a real listener, with concurrent clients: routes
// are counted by pattern, errors by error_code, connections are tracked,
// and the request log has the route, status and topic but no payload.
func TestObservedServer(t *testing.T) {
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := metrics.New()
	b, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true, Metrics: m}, logger)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Logger: logger, Metrics: m}
	g, err := New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(ln.Addr().String(), g.Handler(), cfg)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); b.Close() })
	url := "http://" + ln.Addr().String()

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				res, err := http.Post(url+"/kafka/observed", "application/json", strings.NewReader(`{"records":[{"value":"secret-payload"}]}`))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	res, err := http.Post(url+"/kafka/observed", "application/json", strings.NewReader(`{"records":`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Get(url + "/no/such/path/12345")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	idle, err := net.Dial("tcp", ln.Addr().String()) // open, no request yet
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	waitOpen := func() bool {
		fams, _ := m.Registry().Gather()
		for _, f := range fams {
			if f.GetName() == "ferry_open_connections" && f.Metric[0].GetGauge().GetValue() >= 1 {
				return true
			}
		}
		return false
	}
	for i := 0; i < 200 && !waitOpen(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.Metric {
			key := f.GetName()
			for _, l := range s.Label {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			got[key] = s.GetCounter().GetValue() + s.GetGauge().GetValue() + float64(s.GetHistogram().GetSampleCount())
		}
	}
	for key, want := range map[string]float64{
		"ferry_requests_total,api=POST /kafka/{topic},listener=http":                  21,
		"ferry_requests_total,api=unmatched,listener=http":                            1,
		"ferry_request_errors_total,api=POST /kafka/{topic},code=40001,listener=http": 1,
		"ferry_request_errors_total,api=unmatched,code=40404,listener=http":           1,
		"ferry_topic_messages_in_total,topic=observed":                                20,
		"ferry_request_duration_seconds,api=POST /kafka/{topic},listener=http":        21,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if got["ferry_open_connections,listener=http"] < 1 || got["ferry_listener_busy_seconds_total,listener=http"] <= 0 {
		t.Errorf("connections not tracked: open %v, busy %v", got["ferry_open_connections,listener=http"],
			got["ferry_listener_busy_seconds_total,listener=http"])
	}
	out := logs.String()
	for _, want := range []string{`"msg":"http request"`, `"route":"/kafka/{topic}"`, `"status":200`, `"topic":"observed"`,
		`"level":"INFO","msg":"http request","component":"http","method":"POST","route":"/kafka/{topic}","status":400`} {
		if !strings.Contains(out, want) {
			t.Errorf("request log lacks %s", want)
		}
	}
	if strings.Contains(out, "secret-payload") {
		t.Error("a record payload was logged")
	}
}

// TestReadyzNamesTheFailingCheck: 200 while the broker is open, 503
// naming storage once it is closing.
func TestReadyzNamesTheFailingCheck(t *testing.T) {
	e := newTestEnv(t)
	a := e.do(t, "GET", "/readyz", "", "")
	if a.status != 200 || !strings.Contains(string(a.body), `"storage":"ok"`) {
		t.Fatalf("/readyz = %d %s", a.status, a.body)
	}
	e.broker.Close()
	a = e.do(t, "GET", "/readyz", "", "")
	if a.status != 503 || !strings.Contains(string(a.body), `"status":"not ready"`) || strings.Contains(string(a.body), `"storage":"ok"`) {
		t.Fatalf("/readyz after Close = %d %s, want 503 naming storage", a.status, a.body)
	}
}
