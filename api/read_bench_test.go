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

// BenchmarkReadRecordsHandler reads 500 records (~100-byte JSON values,
// string keys) through the gateway's read handler, without the network.
func BenchmarkReadRecordsHandler(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	g, _ := New(broker, Config{Logger: logger})
	h := g.Handler()
	for range 50 {
		req := httptest.NewRequest("POST", "/kafka/reads", strings.NewReader(benchBody()))
		req.Header.Set("Content-Type", typeJSON)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	const records = 500
	url := fmt.Sprintf("/kafka/reads/partitions/0/records?offset=0&max_records=%d", records)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
	if w.Code != http.StatusOK || strings.Count(w.Body.String(), `"offset":`) != records {
		b.Fatalf("%d, %d records", w.Code, strings.Count(w.Body.String(), `"offset":`))
	}
	b.SetBytes(int64(w.Body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(testing.AllocsPerRun(20, func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", url, nil))
	}))/records, "allocs/record")
}
