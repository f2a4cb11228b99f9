package api

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
)

// A stream runs for its max_duration however short the server's
// ReadTimeout (which bounds reading requests, not answering them).
func TestStreamOutlivesReadTimeout(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	b, err := server.Open(server.Config{DataDir: t.TempDir(), AutoCreateTopics: true}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Three offsets partitions, not 50: cheaper per test, still several.
	c, err := group.New(b, group.Config{Logger: logger, InitialRebalanceDelay: -1, TickInterval: 20 * time.Millisecond, OffsetsTopicPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := Config{Logger: logger, Groups: c, ReadTimeout: 300 * time.Millisecond}
	addr := serveHTTP(t, b, cfg)
	b.CreateTopic(server.TopicSpec{Name: "t", Partitions: 1})
	start := time.Now()
	res, err := http.Get("http://" + addr + "/kafka/t/stream?group=s&max_duration=1500ms&heartbeat_ms=100")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	keepalives := 0
	sc := bufio.NewScanner(io.LimitReader(res.Body, 1<<20))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), ": keepalive") {
			keepalives++
		}
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("stream ended after %v with %d keepalives; want it to run its 1.5 s", took, keepalives)
	}
}
