package harness

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FreePort never returns a port twice in one process, though the kernel
// hands a just-released port out again.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}

// A node is not ready because something answers /healthz on its port: a
// node whose listener failed to bind (its port taken by another node) is
// ready only once its own log says it serves.
func TestReadyOnlyWhenThisNodeServes(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()
	n := &Node{t: t, URL: other.URL, HTTPClient: other.Client(), ReadyTimeout: 300 * time.Millisecond,
		logs: new(syncBuffer), done: make(chan struct{})}
	n.logs.Write([]byte(`level=INFO msg="ferry serving" (an earlier run)` + "\n"))
	n.launchedAt = n.logs.len()
	n.logs.Write([]byte("ferry: http listener: listen tcp: bind: address already in use\n"))
	if err := n.waitReady(); err == nil {
		t.Fatal("ready on another server's answer")
	}
	n.logs.Write([]byte(`level=INFO msg="ferry serving"` + "\n"))
	if err := n.waitReady(); err != nil {
		t.Fatalf("not ready once its log says it serves: %v", err)
	}
}
