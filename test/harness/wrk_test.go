package harness

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
)

// TestWrkSchemaLookups: wrk cycles over exactly the ids given, and the
// RESULT line becomes a rate and latencies.
func TestWrkSchemaLookups(t *testing.T) {
	_, err := exec.LookPath("wrk")
	RequireService(t, "wrk", err)
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		w.Write([]byte(`{"schema":"\"string\""}`))
	}))
	defer srv.Close()
	res := WrkSchemaLookups(t, srv.URL, "1s", []int{7, 12, 40})
	if res.RequestsPerSec <= 0 || res.P99ms < res.P50ms {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/schemas/ids/7", "/schemas/ids/12", "/schemas/ids/40"} {
		if seen[path] == 0 {
			t.Errorf("%s never asked for; asked %v", path, seen)
		}
	}
	if len(seen) != 3 {
		t.Errorf("asked %v, want only the three ids", seen)
	}
}

func TestWrkResultLine(t *testing.T) {
	kv := wrkResultLine("Running 1s test\nRESULT requests=120 duration_us=2000000 errors=0 p50_us=250 p99_us=1900\n")
	if kv["requests"] != 120 || kv["duration_us"] != 2e6 || kv["p99_us"] != 1900 {
		t.Fatalf("parsed %v", kv)
	}
	if kv := wrkResultLine("no result\n"); kv["requests"] != 0 {
		t.Fatalf("parsed %v from no RESULT line", kv)
	}
}
