package api

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
)

// rawExchange sends raw bytes on a new connection (half-closing it when
// closeWrite) and parses the one response.
func rawExchange(t *testing.T, addr, raw string, closeWrite bool) (int, errorBody) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body errorBody
	json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

func TestBodyFaultsAreClientErrors(t *testing.T) {
	e := newSchemaEnv(t)
	addr := strings.TrimPrefix(e.url, "http://")
	truncated := func(path, ct string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + ct + "\r\nContent-Length: 100\r\n\r\n{\"records\":"
	}
	badChunk := func(path, ct string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + ct + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
	}
	for _, route := range []struct{ path, ct string }{
		{"/kafka/t", typeJSON}, {"/topics", typeJSON},
		{"/subjects/s/versions", "application/vnd.schemaregistry.v1+json"},
	} {
		if status, body := rawExchange(t, addr, truncated(route.path, route.ct), true); status != 400 || body.ErrorCode != codeBodyUnreadable {
			t.Errorf("truncated body to %s: %d %+v; want 400/%d", route.path, status, body, codeBodyUnreadable)
		}
		if status, body := rawExchange(t, addr, badChunk(route.path, route.ct), false); status != 400 {
			t.Errorf("bad chunk to %s: %d %+v; want 400", route.path, status, body)
		}
	}
}

func TestSlowBodyIs408(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Logger: slog.New(slog.DiscardHandler), ReadTimeout: 300 * time.Millisecond}
	addr := serveHTTP(t, b, cfg)
	raw := "POST /kafka/t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":"
	if status, body := rawExchange(t, addr, raw, false); status != http.StatusRequestTimeout || body.ErrorCode != codeBodyTimeout {
		t.Errorf("slow body: %d %+v; want 408/%d", status, body, codeBodyTimeout)
	}
}

// serveHTTP runs a gateway on b with cfg behind NewHTTPServer (its timeouts
// and limits, which httptest does not apply) on a loopback port until the
// test ends, and answers the address.
func serveHTTP(t *testing.T, b *server.Broker, cfg Config) string {
	t.Helper()
	g, err := New(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer("", g.Handler(), cfg)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
