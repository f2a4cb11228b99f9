package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkReassignment moves a filled partition from broker 1 to broker
// 2, once unthrottled (256 MiB) and once under an 8 MiB/s throttle (64 MiB), while a producer writes
// to that same partition, and reports in one run:
//   - copy-MB/s: the partition's size over the time from starting the move
//     until the new replica holds it all (DescribeLogDirs, every 100 ms);
//   - produce rec/s and p99 latency (acks=all, 100-byte records, up to 32
//     in flight) on the partition before the move and during each move.
//
// Each iteration is one such pair of moves on fresh topics: run it with
// `-benchtime 1x` (scripts/bench-cluster.sh).
func BenchmarkReassignment(b *testing.B) {
	// The unthrottled copy runs at disk speed: it gets more data, so the
	// producer's window during it is long enough to measure.
	const throttle = 8 << 20
	sizes := map[int]int{0: 256 << 20, throttle: 64 << 20}
	nodes := startBrokers(b, 3)
	adm := clusterAdmin(b, nodes)
	var free, throttled, before, duringFree, duringThrottled []float64
	var p99Before, p99Free, p99Throttled []time.Duration
	for i := 0; i < b.N; i++ {
		for _, rate := range []int{0, throttle} {
			topic := fmt.Sprintf("moved-%d-%d", i, rate)
			createOn(b, nodes, topic, 1)
			fill(b, nodes, topic, sizes[rate])
			if rate == 0 {
				st := measureProduce(b, nodes, topic, func() {}, func() bool { return false }, 5*time.Second)
				before = append(before, st.rate)
				p99Before = append(p99Before, st.p99)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			full := logSize(ctx, adm, 1, topic)
			args := []string{"reassign", "--bootstrap", nodes[0].KafkaAddr, "--execute", "--reassignment-json-file", writePlan(b, topic, 2)}
			if rate > 0 {
				args = append(args, "--throttle", fmt.Sprint(rate))
			}
			var start time.Time
			var copied time.Duration
			st := measureProduce(b, nodes, topic, func() {
				start = time.Now()
				ferryCLI(b, args...)
			}, func() bool {
				if logSize(ctx, adm, 2, topic) >= full {
					copied = time.Since(start)
					return true
				}
				return false
			}, 3*time.Minute)
			cancel()
			if copied == 0 {
				b.Fatalf("%s: the copy did not finish", topic)
			}
			mbps := float64(full) / copied.Seconds() / (1 << 20)
			if rate == 0 {
				free, duringFree, p99Free = append(free, mbps), append(duringFree, st.rate), append(p99Free, st.p99)
			} else {
				throttled, duringThrottled, p99Throttled = append(throttled, mbps), append(duringThrottled, st.rate), append(p99Throttled, st.p99)
			}
			harness.WaitFor(b, topic+" completes its move", 60*time.Second, func() bool {
				r, _ := replicasOf(b, nodes, topic)
				return slices.Equal(r, []int32{2})
			})
		}
	}
	b.ReportMetric(medianOf(free), "copy-MB/s-unthrottled")
	b.ReportMetric(medianOf(throttled), "copy-MB/s-throttled")
	b.ReportMetric(float64(throttle)/(1<<20), "throttle-MB/s")
	b.ReportMetric(medianOf(before), "produce-rec/s-before")
	b.ReportMetric(medianOf(duringFree), "produce-rec/s-during-unthrottled")
	b.ReportMetric(medianOf(duringThrottled), "produce-rec/s-during-throttled")
	b.ReportMetric(millis(medianDuration(p99Before)), "p99-ms-before")
	b.ReportMetric(millis(medianDuration(p99Free)), "p99-ms-during-unthrottled")
	b.ReportMetric(millis(medianDuration(p99Throttled)), "p99-ms-during-throttled")
}

type produceStats struct {
	rate float64 // acknowledged records per second
	p99  time.Duration
}

// measureProduce writes 100-byte records to topic's partition 0 (acks=all,
// up to 32 in flight): until 1000 acks have warmed it up, then begin runs, then
// until done reports true (asked every 100 ms) or limit passes; it
// returns the ack rate and the p99 latency of the records written after
// begin.
func measureProduce(tb testing.TB, nodes []*harness.Node, topic string, begin func(), done func() bool, limit time.Duration) produceStats {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(32), kgo.ProducerLinger(0))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit+30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var failed error
	counting := false
	var warm atomic.Int64 // acks before counting starts
	stop := make(chan struct{})
	var start time.Time
	go func() {
		defer close(stop)
		// Warm: connections and metadata settled once 1000 acks came back.
		for warm.Load() < 1000 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		counting, start = true, time.Now()
		mu.Unlock()
		begin()
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) && !done() {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	value := make([]byte, 100)
	for n := 0; n < 10_000_000; n++ {
		select {
		case <-stop:
			n = 10_000_000
			continue
		default:
		}
		sent := time.Now()
		mu.Lock()
		counted := counting
		mu.Unlock()
		cl.Produce(ctx, &kgo.Record{Value: value, Partition: 0}, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = err
			}
			if counted {
				lat = append(lat, time.Since(sent))
			} else {
				warm.Add(1)
			}
		})
	}
	mu.Lock()
	elapsed := time.Since(start)
	mu.Unlock()
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		tb.Fatalf("produce to %s: %v", topic, failed)
	}
	slices.Sort(lat)
	st := produceStats{rate: float64(len(lat)) / elapsed.Seconds()}
	if len(lat) > 0 {
		st.p99 = lat[len(lat)*99/100]
	}
	return st
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
