package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkProducePWhileCleaning measures the latency of acks=all
// produces of one record (franz-go, one at a time) to a plain topic for
// ten seconds while a background producer keeps rewriting the keys of a
// compacted topic (5 MB/s), first with the log cleaner off, then, on the same data
// directory, with it on and cleaning continuously (dirty ratio 0.01,
// backoff 100 ms, unthrottled as Kafka's default). Reported: p50 and p99
// of each, and p99 with the cleaner over p99 without (target <= 1.2).
func BenchmarkProducePWhileCleaning(b *testing.B) {
	for range b.N {
		node := harness.Start(b, "--log-cleaner-enable=false", "--log-cleaner-backoff-ms=100")
		node.WaitKafka()
		mustPostB(b, node, `{"name":"table","partitions":1,"configs":{"cleanup.policy":"compact",`+
			`"segment.bytes":"4194304","min.cleanable.dirty.ratio":"0.01"}}`)
		mustPostB(b, node, `{"name":"events","partitions":1}`)
		off := measureProduce(b, node, 10*time.Second)
		node.Stop()
		node.Args = slices.DeleteFunc(node.Args, func(a string) bool { return a == "--log-cleaner-enable=false" })
		node.Restart()
		node.WaitKafka()
		on := measureProduce(b, node, 10*time.Second)
		passes := len(regexp.MustCompile(`msg="log cleaned"[^\n]*topic=table`).FindAllString(node.Logs(), -1))
		b.Logf("table: %d bytes", topicSize(b, node, "table"))
		node.Stop()
		b.ReportMetric(float64(off.p50.Microseconds()), "p50-off-us")
		b.ReportMetric(float64(off.p99.Microseconds()), "p99-off-us")
		b.ReportMetric(float64(on.p50.Microseconds()), "p50-cleaning-us")
		b.ReportMetric(float64(on.p99.Microseconds()), "p99-cleaning-us")
		b.ReportMetric(float64(on.p99)/float64(off.p99), "p99-ratio")
		b.ReportMetric(float64(passes), "passes")
		b.Logf("without the cleaner: %d produces, p50 %v p99 %v; cleaning (%d passes): %d produces, p50 %v p99 %v",
			off.n, off.p50, off.p99, passes, on.n, on.p50, on.p99)
	}
}

type latencies struct {
	n        int
	p50, p99 time.Duration
}

// measureProduce times single-record produces to "events" for d while
// another client rewrites 20,000 keys of "table" (1 KiB values) at 5 MB
// a second.
func measureProduce(b *testing.B, node *harness.Node, d time.Duration) latencies {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	bg, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr), kgo.DefaultProduceTopic("table"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(2000))
	if err != nil {
		b.Fatal(err)
	}
	defer bg.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		value := make([]byte, 1024)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; {
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			for range 50 { // 5,000 records, 5 MB a second
				bg.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "key-%05d", i%20000), Value: value}, func(_ *kgo.Record, err error) {
					if err != nil && ctx.Err() == nil {
						b.Errorf("background produce: %v", err)
					}
				})
				i++
			}
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr), kgo.DefaultProduceTopic("events"), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var took []time.Duration
	for ctx.Err() == nil {
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("event")}).FirstErr(); err != nil {
			if ctx.Err() != nil {
				break
			}
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	wg.Wait()
	slices.Sort(took)
	if len(took) == 0 {
		b.Fatal("no produce finished")
	}
	return latencies{len(took), took[len(took)/2], took[len(took)*99/100]}
}

func mustPostB(b *testing.B, node *harness.Node, body string) {
	b.Helper()
	resp, err := node.HTTPClient.Post(node.URL+"/topics", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		b.Fatalf("create topic: %d", resp.StatusCode)
	}
}

// BenchmarkCoordinatorLoadCompacted commits FERRY_BENCH_COMMITS offsets
// (default 1,000,000: commits of 100 partitions at a time) with the log
// cleaner off, restarts and reads the coordinator's load time from its
// log ("committed offsets loaded ... took="), then restarts with the
// cleaner on, waits for it to clean __consumer_offsets, restarts again
// and reads the load time of what compaction left.
func BenchmarkCoordinatorLoadCompacted(b *testing.B) {
	commits := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("FERRY_BENCH_COMMITS")); err == nil && v > 0 {
		commits = v
	}
	for range b.N {
		node := harness.Start(b, "--log-cleaner-enable=false", "--log-cleaner-backoff-ms=100",
			"--offsets-topic-num-partitions=1", "--offsets-topic-segment-bytes=1048576")
		node.WaitKafka()
		mustPostB(b, node, `{"name":"committed","partitions":100}`)
		commitMany(b, node, commits)
		before, sizeBefore := restartedLoad(b, node)
		node.Stop()
		node.Args = slices.DeleteFunc(node.Args, func(a string) bool { return a == "--log-cleaner-enable=false" })
		node.Restart()
		node.WaitKafka()
		// Cleaned when the size is down and has held for a second.
		var size int64
		var stableSince time.Time
		harness.WaitFor(b, "the cleaner to clean __consumer_offsets", 5*time.Minute, func() bool {
			prev := size
			size = topicSize(b, node, "__consumer_offsets")
			if size != prev || stableSince.IsZero() {
				stableSince = time.Now()
			}
			return size < sizeBefore/2 && time.Since(stableSince) >= time.Second
		})
		after, sizeAfter := restartedLoad(b, node)
		node.Stop()
		b.ReportMetric(before.Seconds()*1000, "load-ms-before")
		b.ReportMetric(after.Seconds()*1000, "load-ms-after")
		b.ReportMetric(float64(sizeBefore), "bytes-before")
		b.ReportMetric(float64(sizeAfter), "bytes-after")
		b.Logf("%d commits: coordinator load %v over %d bytes before compaction, %v over %d bytes after",
			commits, before, sizeBefore, after, sizeAfter)
	}
}

func commitMany(b *testing.B, node *harness.Node, commits int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	for round := 1; round*100 <= commits; round++ {
		var os kadm.Offsets
		for p := int32(0); p < 100; p++ {
			os.AddOffset("committed", p, int64(round), -1)
		}
		if err := adm.CommitAllOffsets(ctx, "loaded", os); err != nil {
			b.Fatalf("commit round %d: %v", round, err)
		}
	}
}

var loadTook = regexp.MustCompile(`msg="committed offsets loaded"[^\n]*took=([0-9.]+[a-zµ]+)`)

// restartedLoad restarts node and returns its coordinator's load time
// and the size of __consumer_offsets.
func restartedLoad(b *testing.B, node *harness.Node) (time.Duration, int64) {
	node.Stop()
	node.Restart()
	node.WaitKafka()
	all := loadTook.FindAllStringSubmatch(node.Logs(), -1)
	if len(all) == 0 {
		b.Fatal("no load time in the log")
	}
	d, err := time.ParseDuration(all[len(all)-1][1])
	if err != nil {
		b.Fatal(err)
	}
	return d, topicSize(b, node, "__consumer_offsets")
}
