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

// A read of 500 records allocates at most one object per record, however
// they render (the handler, router and recorder included).
func TestReadRecordsAllocatesLessThanOnePerRecord(t *testing.T) {
	h, url := readBenchSetup(t, 500)
	allocs := testing.AllocsPerRun(20, func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", url, nil))
	})
	if allocs > 500 {
		t.Fatalf("%.0f allocations for a read of 500 records", allocs)
	}
}

// readBenchSetup stores 50 produce bodies of benchBody (500 records) and
// returns the gateway handler and the URL reading records of them.
func readBenchSetup(tb testing.TB, records int) (http.Handler, string) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	broker, err := server.Open(server.Config{DataDir: tb.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { broker.Close() })
	g, _ := New(broker, Config{Logger: logger})
	h := g.Handler()
	for range 50 {
		req := httptest.NewRequest("POST", "/kafka/reads", strings.NewReader(benchBody()))
		req.Header.Set("Content-Type", typeJSON)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			tb.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	url := fmt.Sprintf("/kafka/reads/partitions/0/records?offset=0&max_records=%d", records)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
	if w.Code != http.StatusOK || strings.Count(w.Body.String(), `"offset":`) != records {
		tb.Fatalf("%d, %d records", w.Code, strings.Count(w.Body.String(), `"offset":`))
	}
	return h, url
}

// BenchmarkReadRecordsHandler reads 500 records (~100-byte JSON values,
// string keys) through the gateway's read handler, without the network.
func BenchmarkReadRecordsHandler(b *testing.B) {
	const records = 500
	h, url := readBenchSetup(b, records)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
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
