package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/idempotency"
)

// BenchmarkProduceIdempotencyKey is BenchmarkProduceHandler's request
// without the header ("none"; "none-fsync" to a topic with
// flush.messages=1, the durability a key's answer gets), with a new key
// per request ("key": the start and the answer written to the keys topic
// beside the produce, the answer fsynced), and a retry of one recorded key
// ("replay": no write at all),
// each sequential and with parallel clients (group commit shares the
// fsyncs), sub-benchmarks of one run so the ratios are measured on the
// same machine state.
func BenchmarkProduceIdempotencyKey(b *testing.B) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	body := benchBody()
	for _, parallel := range []bool{false, true} {
		for _, mode := range []string{"none", "none-fsync", "key", "replay"} {
			name := mode
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, logger)
				if err != nil {
					b.Fatal(err)
				}
				defer broker.Close()
				store, err := idempotency.New(broker, idempotency.Config{Logger: logger, MaxBytes: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				topic := "topic1"
				if mode == "none-fsync" {
					topic = "synced"
					if err := broker.CreateTopic(server.TopicSpec{Name: topic, Partitions: 1,
						Configs: map[string]string{server.CfgFlushMessages: "1"}}); err != nil {
						b.Fatal(err)
					}
				}
				g, _ := New(broker, Config{Logger: logger, Idempotency: store})
				h := g.Handler()
				var seq atomic.Int64
				one := func() {
					req := httptest.NewRequest("POST", "/kafka/"+topic, strings.NewReader(body))
					req.Header.Set("Content-Type", typeJSON)
					switch mode {
					case "key":
						req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", seq.Add(1)))
					case "replay":
						req.Header.Set("Idempotency-Key", "bench-replayed")
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Errorf("%d %s", w.Code, w.Body)
					}
				}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				b.ResetTimer()
				if parallel {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							one()
						}
					})
				} else {
					for range b.N {
						one()
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
			})
		}
	}
}
