package cluster_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// benchWindow is how long each measurement writes (FERRY_BENCH_WINDOW, a
// Go duration; default 5 s).
func benchWindow() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("FERRY_BENCH_WINDOW")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

// BenchmarkTxnProduce: on three brokers (a topic of three partitions,
// replication factor 3, acks=all), records of 100 bytes and of 1 KiB
// written by a transactional producer (begin, k records, commit) against
// the same loop by an idempotent producer (k records, flush) at k = 10,
// 100 and 1,000, and against the floor (the idempotent loop ending with
// one acknowledged write, the least a commit costs), alternating the
// three within each of three rounds, each measurement on a topic of its
// own (withFreshTopic); reports the medians in records per second, the
// txn/idempotent ratios (targets: >= 0.85 at 1,000, >= 0.60 at 100) and
// floor/idempotent, the best any transaction could do here.
func BenchmarkTxnProduce(b *testing.B) { benchTxnProduce(b, 1) }

// BenchmarkTxnProduceConcurrent is BenchmarkTxnProduce with several
// producers writing at once (FERRY_BENCH_PRODUCERS, default 4), as the
// tasks of a Kafka Streams or Flink job do, each with its own
// transactional id: the brokers' throughput rather than one producer's
// round trips. One producer waits, per transaction, for its EndTxn and
// its next transaction's first add, both replicated writes; with several,
// the others' records fill those waits, so the ratio shows what a
// transaction costs the brokers. Reports the summed records per second.
func BenchmarkTxnProduceConcurrent(b *testing.B) {
	producers := 4
	if v, err := strconv.Atoi(os.Getenv("FERRY_BENCH_PRODUCERS")); err == nil && v > 0 {
		producers = v
	}
	benchTxnProduce(b, producers)
}

// benchTxnProduce measures every cell with producers idempotent, as
// many idempotent producers ending each loop with one acknowledged write
// (the floor: the least a commit costs, so floor/idem bounds txn/idem),
// and as many transactional producers, summing their rates.
func benchTxnProduce(b *testing.B, producers int) {
	for range b.N {
		nodes := startTxnBrokers(b)
		adm := txnAdmin(b, nodes)
		createFloorTopic(b, adm)
		idem := make([]*kgo.Client, producers)
		txn := make([]*kgo.Client, producers)
		for i := range producers {
			idem[i] = benchClient(b, nodes, "")
			txn[i] = benchClient(b, nodes, "", kgo.TransactionalID(fmt.Sprintf("bench-txn-%d", i)))
		}
		// 100-byte records, and 1 KiB ones: the size of KIP-98's own
		// throughput comparison, where a transaction's fixed cost weighs
		// against ten times the bytes.
		for _, size := range []int{100, 1024} {
			value := make([]byte, size)
			for _, k := range []int{10, 100, 1000} {
				rates := map[side][]float64{}
				for round := range 3 {
					for _, sd := range sides {
						withFreshTopic(b, adm, fmt.Sprintf("bench-txn-%dx%d-%d-%v", k, size, round, sd), func(topic string) {
							rates[sd] = append(rates[sd], produceTogether(b, producers, func(i int) (float64, error) {
								return sd.loop(idem[i], txn[i], i, topic, k, value, benchWindow())
							}))
						})
					}
				}
				idemRates, floorRates, txnRates := rates[idempotentSide], rates[floorSide], rates[transactionalSide]
				im, fm, tm := medianOf(idemRates), medianOf(floorRates), medianOf(txnRates)
				b.ReportMetric(im, fmt.Sprintf("idempotent-rec/s@%dx%dB", k, size))
				b.ReportMetric(tm, fmt.Sprintf("txn-rec/s@%dx%dB", k, size))
				b.ReportMetric(tm/im, fmt.Sprintf("txn/idem@%dx%dB", k, size))
				b.ReportMetric(fm/im, fmt.Sprintf("floor/idem@%dx%dB", k, size))
				b.Logf("%d producers, %d records of %d bytes per transaction: idempotent %.0f rec/s %v, floor %.0f rec/s %v, transactional %.0f rec/s %v; txn/idem %.2f, floor/idem %.2f",
					producers, k, size, im, idemRates, fm, floorRates, tm, txnRates, tm/im, fm/im)
			}
		}
	}
}

// floorTopic holds the floor loops' one acknowledged record per loop: a
// commit's own write at the least, as the transaction coordinators'
// records spread over __transaction_state's partitions.
const floorTopic = "bench-txn-floor-commits"

func createFloorTopic(b *testing.B, adm *kadm.Client) {
	b.Helper()
	if _, err := adm.CreateTopic(context.Background(), 3, 3, nil, floorTopic); err != nil {
		b.Fatal(err)
	}
	harness.WaitFor(b, "leaders of "+floorTopic, 30*time.Second, func() bool { return leaderOfPartition(adm, floorTopic, 2) > 0 })
}

// floorEnd is producer i's end of a floor loop: one record, acks=all,
// keyed so that producers spread over floorTopic's partitions.
func floorEnd(cl *kgo.Client, i int) func(context.Context) error {
	key := []byte(fmt.Sprintf("commit-%d", i))
	return func(ctx context.Context) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: floorTopic, Key: key, Value: []byte("commit")}).FirstErr()
	}
}

// withFreshTopic runs measure on a new topic of three partitions
// (replication factor 3) named name, and deletes it after. Each
// measurement has a topic of its own: on these machines a broker's writes
// cost more the more data its disks hold (about 2.5 times less
// throughput once each broker holds 2 GB, back to full once the topic is
// deleted), so a side measured on a topic the other had just filled
// would be measured slower; and four producers write several GB a
// minute, which would fill the disk.
func withFreshTopic(b *testing.B, adm *kadm.Client, name string, measure func(topic string)) {
	b.Helper()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, name); err != nil {
		b.Fatal(err)
	}
	harness.WaitFor(b, "leaders of "+name, 30*time.Second, func() bool { return leaderOfPartition(adm, name, 2) > 0 })
	measure(name)
	if _, err := adm.DeleteTopic(ctx, name); err != nil {
		b.Fatal(err)
	}
}

// side is one of the loops every cell compares.
type side int

const (
	// idempotentSide: k records, flush.
	idempotentSide side = iota
	// floorSide: the idempotent loop ending with one acknowledged write
	// (floorEnd), the least a commit costs.
	floorSide
	// transactionalSide: begin, k records, flush, commit.
	transactionalSide
)

// sides are measured in this order within each round.
var sides = []side{idempotentSide, floorSide, transactionalSide}

func (s side) String() string { return [...]string{"idempotent", "floor", "transactional"}[s] }

// loop runs s for window with producer i's clients (idem, txn) on topic
// and returns records per second.
func (s side) loop(idem, txn *kgo.Client, i int, topic string, k int, value []byte, window time.Duration) (float64, error) {
	switch s {
	case floorSide:
		return loopFor(idem, topic, k, value, window, nil, floorEnd(idem, i))
	case transactionalSide:
		return loopFor(txn, topic, k, value, window, txn.BeginTransaction,
			func(ctx context.Context) error { return txn.EndTransaction(ctx, kgo.TryCommit) })
	}
	return loopFor(idem, topic, k, value, window, nil, nil)
}

// loopFor writes batches of k records to topic for window and returns
// records per second: begin (when not nil), k records, flush, then end
// (when not nil) once every record is acknowledged.
func loopFor(cl *kgo.Client, topic string, k int, value []byte, window time.Duration,
	begin func() error, end func(context.Context) error) (float64, error) {
	ctx := context.Background()
	start := time.Now()
	n := 0
	for time.Since(start) < window {
		if begin != nil {
			if err := begin(); err != nil {
				return 0, err
			}
		}
		var wg sync.WaitGroup
		var failed error
		var mu sync.Mutex
		for range k {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
				wg.Done()
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		wg.Wait()
		if failed != nil {
			return 0, failed
		}
		if end != nil {
			if err := end(ctx); err != nil {
				return 0, err
			}
		}
		n += k
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// produceTogether runs loop for producers 0..n-1 at once and returns
// their summed records per second.
func produceTogether(b *testing.B, n int, loop func(i int) (float64, error)) float64 {
	b.Helper()
	rates := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { rates[i], errs[i] = loop(i) })
	}
	wg.Wait()
	total := 0.0
	for i := range n {
		if errs[i] != nil {
			b.Fatalf("producer %d: %v", i, errs[i])
		}
		total += rates[i]
	}
	return total
}

// BenchmarkTxnEndToEnd: the time from producing a record to a
// read_committed consumer receiving it, for transactions of 10 records
// committed one after another, against an idempotent producer's records
// read at read_uncommitted; p50 and p99 in microseconds.
func BenchmarkTxnEndToEnd(b *testing.B) {
	for range b.N {
		nodes := startTxnBrokers(b)
		adm := txnAdmin(b, nodes)
		for _, topic := range []string{"e2e-txn", "e2e-idem"} {
			if _, err := adm.CreateTopic(context.Background(), 1, 3, nil, topic); err != nil {
				b.Fatal(err)
			}
			harness.WaitFor(b, "a leader", 30*time.Second, func() bool { return leaderOfPartition(adm, topic, 0) > 0 })
		}
		tx := endToEnd(b, nodes, "e2e-txn", true)
		id := endToEnd(b, nodes, "e2e-idem", false)
		b.ReportMetric(float64(tx[0].Microseconds()), "txn-p50-us")
		b.ReportMetric(float64(tx[1].Microseconds()), "txn-p99-us")
		b.ReportMetric(float64(id[0].Microseconds()), "idem-p50-us")
		b.ReportMetric(float64(id[1].Microseconds()), "idem-p99-us")
		b.Logf("read_committed after transactions of 10: p50 %v p99 %v; idempotent at read_uncommitted: p50 %v p99 %v",
			tx[0], tx[1], id[0], id[1])
	}
}

// endToEnd produces batches of 10 records (timestamped with their send
// time) for benchWindow while a consumer (read_committed when txn) reads
// them, and returns the p50 and p99 of receive time minus send time.
func endToEnd(b *testing.B, nodes []*harness.Node, topic string, txn bool) [2]time.Duration {
	b.Helper()
	opts := []kgo.Opt{}
	iso := kgo.ReadUncommitted()
	if txn {
		opts = append(opts, kgo.TransactionalID("e2e-"+topic))
		iso = kgo.ReadCommitted()
	}
	pr := benchClient(b, nodes, topic, opts...)
	co, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer co.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu       sync.Mutex
		lat      []time.Duration
		warmedUp atomic.Bool
	)
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(lat) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := co.PollFetches(ctx)
			now := time.Now()
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Value) == warmUpValue {
					warmedUp.Store(true)
					return
				}
				sent, _ := strconv.ParseInt(string(r.Value), 10, 64)
				lat = append(lat, now.Sub(time.Unix(0, sent)))
			})
			mu.Unlock()
		}
	}()
	// One record read back shows the consumer assigned and fetching, so
	// no measured record waits for the group's join.
	produceBatch(b, pr, txn, []*kgo.Record{{Value: []byte(warmUpValue)}})
	harness.WaitFor(b, "the consumer reads the warm-up record", 60*time.Second, warmedUp.Load)
	// Ten records every 10 ms: about 1,000 records/s, whatever a batch
	// takes.
	pace := time.NewTicker(10 * time.Millisecond)
	defer pace.Stop()
	start := time.Now()
	sent := 0
	for time.Since(start) < benchWindow() {
		var rs []*kgo.Record
		for range 10 {
			rs = append(rs, &kgo.Record{Value: []byte(strconv.FormatInt(time.Now().UnixNano(), 10))})
		}
		produceBatch(b, pr, txn, rs)
		sent += 10
		<-pace.C
	}
	harness.WaitFor(b, "the last records arrive", 60*time.Second, func() bool { return received() >= sent })
	cancel()
	<-done
	if len(lat) < sent*9/10 {
		b.Fatalf("%s: the consumer received %d of %d records", topic, len(lat), sent)
	}
	slices.Sort(lat)
	return [2]time.Duration{lat[len(lat)/2], lat[len(lat)*99/100]}
}

func benchClient(b testing.TB, nodes []*harness.Node, topic string, extra ...kgo.Opt) *kgo.Client {
	b.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds(nodes)...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(10000)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl
}

// startTxnBrokers is startCluster for benchmarks: three brokers with
// three __transaction_state partitions.
func startTxnBrokers(tb testing.TB, extra ...string) []*harness.Node {
	tb.Helper()
	// FERRY_BENCH_TXN_VERSION is the transaction.version the cluster
	// finalizes (kafka-features.sh's UpdateFeatures once the brokers are
	// up; a new cluster is at 2), to measure KIP-890 part 2 against
	// version 1 in the same conditions.
	level := int16(0)
	if v := os.Getenv("FERRY_BENCH_TXN_VERSION"); v != "" && len(extra) == 0 {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 || n > 2 {
			tb.Fatalf("FERRY_BENCH_TXN_VERSION=%q: want 1 or 2", v)
		}
		level = int16(n)
	}
	connect := zks.Require(tb).Addr() + "/" + tb.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	nodes := make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			nodes[i] = harness.Start(tb, append([]string{"--broker-id", strconv.Itoa(i + 1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", "6000", "--transaction-state-log-num-partitions", "3"}, extra...)...)
		})
	}
	wg.Wait()
	if slices.Contains(nodes, nil) {
		tb.FailNow()
	}
	waitControllerSeesAll(tb, nodes)
	if level > 0 {
		waitAllAdvertise(tb, nodes, 2)
		if level < 2 {
			if code, msg := setTV(tb, nodes, level, 2); code != 0 {
				tb.Fatalf("finalize transaction.version %d: %d %s", level, code, msg)
			}
		}
		waitAllAdvertise(tb, nodes, level)
	}
	return nodes
}

// warmUpValue marks the record that shows a latency consumer is reading.
const warmUpValue = "warm-up"

// produceBatch writes rs and waits for them, in one transaction when txn.
func produceBatch(b *testing.B, pr *kgo.Client, txn bool, rs []*kgo.Record) {
	b.Helper()
	ctx := context.Background()
	if txn {
		if err := pr.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
	}
	if err := pr.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	if txn {
		if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
}
