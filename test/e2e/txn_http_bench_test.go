package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// processCPU is the user and system time process pid has used (Linux
// /proc; clock ticks of 10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkHTTPTransactionalBatch measures POST /kafka on one node: each
// batch is 10 records (~100 B values) over two topics and four
// partitions, one transaction. "serial" is one client (the latency of a
// transaction), "concurrent" 16 clients (throughput). It reports
// batches/s, the latency percentiles of the batches it sent and the
// node's CPU time per batch.
func BenchmarkHTTPTransactionalBatch(b *testing.B) {
	node := harness.Start(b)
	node.WaitKafka()
	for _, topic := range []string{"bench-ta", "bench-tb"} {
		res, _, err := post(node.URL+"/topics", "application/json", fmt.Sprintf(`{"name":%q,"partitions":2}`, topic))
		if err != nil || res.StatusCode != http.StatusCreated {
			b.Fatalf("create %s: %v %v", topic, res, err)
		}
	}
	value := strings.Repeat("v", 100)
	var sb strings.Builder
	sb.WriteString(`{"records":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"topic":"bench-t%c","partition":%d,"value":%q}`, "ab"[i%2], (i/2)%2, value)
	}
	sb.WriteString(`]}`)
	body := sb.String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	send := func() (time.Duration, error) {
		start := time.Now()
		res, err := client.Post(node.URL+"/kafka", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("POST /kafka: %d %s", res.StatusCode, data)
		}
		return time.Since(start), nil
	}
	// The first transaction creates __transaction_state.
	harness.WaitFor(b, "the first transaction", time.Minute, func() bool { _, err := send(); return err == nil })
	for _, clients := range []int{1, 16} {
		name := "serial"
		if clients > 1 {
			name = fmt.Sprintf("concurrent=%d", clients)
		}
		b.Run(name, func(b *testing.B) {
			var mu sync.Mutex
			var latencies []time.Duration
			var failed error
			next := make(chan struct{}, b.N)
			for range b.N {
				next <- struct{}{}
			}
			close(next)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ResetTimer()
			cpu0 := processCPU(b, node.PID())
			start := time.Now()
			var wg sync.WaitGroup
			for range clients {
				wg.Go(func() {
					for range next {
						if ctx.Err() != nil {
							return
						}
						d, err := send()
						mu.Lock()
						if err != nil && failed == nil {
							failed = err
							cancel()
						}
						latencies = append(latencies, d)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			cpu := processCPU(b, node.PID()) - cpu0
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			slices.Sort(latencies)
			pct := func(p float64) float64 {
				return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "batches/s")
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			// The node's own CPU per batch: on a loaded machine wall time
			// swings with the neighbours, CPU time much less.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "node-cpu-us/batch")
		})
	}
}
