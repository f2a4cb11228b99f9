package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server"
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
