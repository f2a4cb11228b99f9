package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestManyPartitionsUnderLowFDLimit: a node whose open-file limit is 1024
// serves 2,000 partitions (a node paying 4 descriptors per partition would
// stop near 250), each with several segments, producing to and reading
// from every one, before and after a restart; its descriptors stay near
// the log file budget whatever the partition count.
func TestManyPartitionsUnderLowFDLimit(t *testing.T) {
	const (
		fdLimit    = 1024
		budget     = fdLimit / 4 // the default: a quarter of the limit
		topics     = 2
		partitions = 1000
		rounds     = 3
	)
	node := harness.StartWithFDLimit(t, fdLimit)
	node.WaitKafka()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("many-%d", i)
	}
	// 1 KiB segments: every round of 600-byte records rolls a segment.
	createTopics(ctx, t, node, partitions, map[string]*string{"segment.bytes": kadm.StringPtr("1024")}, names...)
	cl := franz(t, node, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	for r := 0; r < rounds; r++ {
		produceEverywhere(ctx, t, cl, names, partitions, r)
	}
	maxFDs := budget + 150 // listeners, connections, transient files
	checkFDs(t, node, maxFDs)
	readEverywhere(ctx, t, node, names, partitions, rounds)
	checkFDs(t, node, maxFDs)

	node.Stop()
	node.Restart()
	node.WaitKafka()
	readEverywhere(ctx, t, node, names, partitions, rounds)
	cl = franz(t, node, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	produceEverywhere(ctx, t, cl, names, partitions, rounds)
	readEverywhere(ctx, t, node, names, partitions, rounds+1)
	checkFDs(t, node, maxFDs)
}

// createTopics creates topics of partitions partitions each with configs.
func createTopics(ctx context.Context, t *testing.T, node *harness.Node, partitions int32, configs map[string]*string, names ...string) {
	t.Helper()
	adm := kadm.NewClient(franz(t, node))
	for _, name := range names {
		res, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("create %s with %d partitions: %v", name, partitions, err)
		}
	}
}

// produceEverywhere writes record round to every partition of topics.
func produceEverywhere(ctx context.Context, t *testing.T, cl *kgo.Client, topics []string, partitions int32, round int) {
	t.Helper()
	pad := strings.Repeat("x", 600)
	var recs []*kgo.Record
	for _, topic := range topics {
		for p := int32(0); p < partitions; p++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d-%s", topic, p, round, pad))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce round %d: %v", round, err)
	}
}

// readEverywhere reads every partition of topics from the start and
// checks it holds exactly records 0..rounds-1 of produceEverywhere.
func readEverywhere(ctx context.Context, t *testing.T, node *harness.Node, topics []string, partitions int32, rounds int) {
	t.Helper()
	cl := franz(t, node, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	want := len(topics) * int(partitions) * rounds
	seen := map[string]int{}
	for got := 0; got < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records before the deadline", got, want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			prefix := fmt.Sprintf("%s-%d-%d-", r.Topic, r.Partition, r.Offset)
			if !strings.HasPrefix(string(r.Value), prefix) {
				t.Fatalf("%s-%d offset %d holds %.40q", r.Topic, r.Partition, r.Offset, r.Value)
			}
			seen[fmt.Sprintf("%s-%d", r.Topic, r.Partition)]++
			got++
		}
	}
	for _, topic := range topics {
		for p := int32(0); p < partitions; p++ {
			if n := seen[fmt.Sprintf("%s-%d", topic, p)]; n != rounds {
				t.Fatalf("%s-%d: %d records, want %d", topic, p, n, rounds)
			}
		}
	}
}

// checkFDs fails when the node holds more than max descriptors.
func checkFDs(t *testing.T, node *harness.Node, max int) {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", node.PID()))
	if err != nil {
		t.Skipf("cannot count the node's descriptors: %v", err)
	}
	if len(entries) > max {
		t.Fatalf("node holds %d descriptors, want at most %d", len(entries), max)
	}
	t.Logf("node holds %d descriptors", len(entries))
}

// rssKiB is the node's resident set size from /proc/<pid>/status.
func rssKiB(t *testing.T, node *harness.Node) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", node.PID()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in status")
	return 0
}

// TestLongFiftyThousandPartitions (FERRY_LONG=1, make test-long): one node
// under the default open-file limit of 20,000 creates 50,000 partitions,
// takes one record in each, and restarts within 10 s to /healthz with an
// RSS under 2 GiB; it logs the figures.
func TestLongFiftyThousandPartitions(t *testing.T) {
	if os.Getenv("FERRY_LONG") == "" {
		t.Skip("long: set FERRY_LONG=1 (make test-long)")
	}
	const (
		topics     = 50
		partitions = 1000
	)
	node := harness.StartWithFDLimit(t, 20000)
	node.StopTimeout, node.ReadyTimeout = 10*time.Minute, 5*time.Minute
	node.WaitKafka()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("long-%d", i)
	}
	start := time.Now()
	createTopics(ctx, t, node, partitions, nil, names...)
	created := time.Since(start)
	cl := franz(t, node, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	start = time.Now()
	produceEverywhere(ctx, t, cl, names, partitions, 0)
	produced := time.Since(start)
	cl.Close()
	rssBefore := rssKiB(t, node)
	checkFDs(t, node, 20000/4+200)

	start = time.Now()
	node.Stop()
	stopped := time.Since(start)
	start = time.Now()
	node.Restart()
	restarted := time.Since(start)
	rssAfter := rssKiB(t, node)
	t.Logf("50,000 partitions: create %v, produce %v, clean stop %v, restart to /healthz %v, RSS %d MiB before restart, %d MiB after",
		created.Round(time.Millisecond), produced.Round(time.Millisecond), stopped.Round(time.Millisecond),
		restarted.Round(time.Millisecond), rssBefore>>10, rssAfter>>10)
	node.WaitKafka()
	start = time.Now()
	readEverywhere(ctx, t, node, names, partitions, 1)
	t.Logf("read one record from each partition after the restart: %v", time.Since(start).Round(time.Millisecond))
	checkFDs(t, node, 20000/4+200)
	if restarted > 10*time.Second {
		t.Errorf("restart took %v, want < 10s", restarted)
	}
	if rssAfter > 2<<20 {
		t.Errorf("RSS %d MiB after restart, want < 2 GiB", rssAfter>>10)
	}
}
