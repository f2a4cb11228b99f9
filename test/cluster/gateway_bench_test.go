package cluster_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkGatewayForwarding compares HTTP produce through the leader of
// a topic's partitions with HTTP produce through a node that holds none of
// them (every record forwarded to the leader over the Kafka protocol), in
// the same run: rounds alternate between the two and the medians are
// reported with their ratio. Target: forwarding keeps at least 70% of the
// leader's throughput. Three brokers and the load generator share the
// machine's cores, so only the ratio means anything; each round logs the
// CPU seconds every broker and the load generator used.
//
// Load: gatewayWorkers clients (48; FERRY_BENCH_GATEWAY_CLIENTS), enough to keep both paths busy (with 16
// a forwarded request's longer round trip, not the CPU, bounds it), each
// POSTing gatewayBatch unkeyed records of 100 bytes (one partition per
// request, round robin), acks=all (RF 2); one round of each per
// iteration (-benchtime 5x: five), gatewayRound long.
func BenchmarkGatewayForwarding(b *testing.B) {
	const topic = "gwbench"
	nodes := startBrokers(b, 3)
	createAssigned(b, nodes, topic, [][]int32{{1, 2}, {1, 2}, {1, 2}}, nil)
	leader, forwarder := nodes[0], nodes[2] // broker 3 holds no replica
	body := gatewayBody()
	var direct, forwarded []float64
	for b.Loop() {
		for _, target := range []struct {
			node  *harness.Node
			rates *[]float64
		}{{leader, &direct}, {forwarder, &forwarded}} {
			cpu0, self0 := cpuTimes(nodes), selfCPU()
			rate := measureHTTPProduce(b, target.node.URL+"/kafka/"+topic, body)
			cpu1, self1 := cpuTimes(nodes), selfCPU()
			*target.rates = append(*target.rates, rate)
			b.Logf("through %s: %.0f records/s; cpu s per broker %.1f %.1f %.1f, load %.1f", target.node.URL, rate, cpu1[0]-cpu0[0], cpu1[1]-cpu0[1], cpu1[2]-cpu0[2], self1-self0)
		}
	}
	d, f := medianOf(direct), medianOf(forwarded)
	b.ReportMetric(d, "leader-rec/s")
	b.ReportMetric(f, "forwarded-rec/s")
	b.ReportMetric(f/d, "forwarded/leader")
}

// gatewayWorkers is the number of HTTP clients: 48, or
// FERRY_BENCH_GATEWAY_CLIENTS.
var gatewayWorkers = func() int {
	if n, err := strconv.Atoi(os.Getenv("FERRY_BENCH_GATEWAY_CLIENTS")); err == nil && n > 0 {
		return n
	}
	return 48
}()

const (
	gatewayBatch = 10
	gatewayRound = 5 * time.Second
)

func gatewayBody() string {
	value := strings.Repeat("x", 98)
	recs := make([]string, gatewayBatch)
	for i := range recs {
		recs[i] = fmt.Sprintf(`{"value":%q}`, value)
	}
	return `{"records":[` + strings.Join(recs, ",") + `]}`
}

// measureHTTPProduce posts body to url from gatewayWorkers clients for
// gatewayRound, once every client has had two answers (connections and
// the forwarder's metadata warmed), and returns records/s.
func measureHTTPProduce(tb testing.TB, url, body string) float64 {
	tb.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: gatewayWorkers}}
	defer client.CloseIdleConnections()
	var counted, answered atomic.Int64
	var counting atomic.Bool
	var failed atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range gatewayWorkers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.CompareAndSwap(nil, fmt.Errorf("%s answered %d", url, res.StatusCode))
					return
				}
				answered.Add(1)
				if counting.Load() {
					counted.Add(gatewayBatch)
				}
			}
		})
	}
	harness.WaitFor(tb, "every client warmed up", 30*time.Second, func() bool {
		return answered.Load() >= int64(2*gatewayWorkers) || failed.Load() != nil
	})
	counting.Store(true)
	start := time.Now()
	time.Sleep(gatewayRound) // the measured window itself, not a wait for a condition
	counting.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return float64(counted.Load()) / elapsed.Seconds()
}

func cpuTimes(nodes []*harness.Node) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.PID()))
		f := strings.Fields(string(data))
		if len(f) > 15 {
			u, _ := strconv.ParseFloat(f[13], 64)
			s, _ := strconv.ParseFloat(f[14], 64)
			out[i] = (u + s) / 100
		}
	}
	return out
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkFollowerReadAfterWrite: a record POSTed to a partition's
// leader, then read with a long poll (GET …/records?offset=&timeout_ms=)
// on a node that follows the partition, as a client behind a load
// balancer does; the time from the POST's answer to the GET's, for 30
// writes 100 ms apart (sparse traffic: no later append tells the follower
// the high watermark). Reports p50, p90 and the slowest in milliseconds.
func BenchmarkFollowerReadAfterWrite(b *testing.B) {
	nodes := startBrokers(b, 3)
	createAssigned(b, nodes, "raw", [][]int32{{1, 2, 3}}, nil)
	for b.Loop() {
		var lat []time.Duration
		// Paced, not waiting for a condition: the gap between writes is
		// what makes the traffic sparse.
		pace := time.NewTicker(100 * time.Millisecond)
		for i := range 30 {
			<-pace.C
			offsets := produceOK(b, nodes[0].URL+"/kafka/raw", "application/json", fmt.Sprintf(`{"records":[{"partition":0,"value":%d}]}`, i))
			written := time.Now()
			url := fmt.Sprintf("%s/kafka/raw/partitions/0/records?offset=%d&timeout_ms=10000", nodes[1+i%2].URL, offsets[0].Offset)
			var answer struct {
				Records []httpRecord `json:"records"`
			}
			getJSON(b, url, &answer)
			if len(answer.Records) != 1 {
				b.Fatalf("GET %s: %d records", url, len(answer.Records))
			}
			lat = append(lat, time.Since(written))
		}
		pace.Stop()
		slices.Sort(lat)
		q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.Logf("read on a follower after the leader's answer: p50 %.1f ms, p90 %.1f ms, slowest %.1f ms", q(0.5), q(0.9), q(1))
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.9), "p90-ms")
		b.ReportMetric(q(1), "max-ms")
	}
}
