package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/jepsen"
)

// TestTxnChainExactlyOnceThroughKills: a consume-transform-produce chain
// of franz-go GroupTransactSession workers (transactional ids, read_committed,
// RequireStableFetchOffsets) copies an input topic to an output topic
// while input keeps arriving, workers join and leave the group, the broker
// coordinating a worker's transactions is killed (kill -9) and, later, the
// leader of an output partition is. Afterwards a read_committed reader of
// the output holds every input record exactly once.
func TestTxnChainExactlyOnceThroughKills(t *testing.T) {
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3")
	const (
		in, out = "chain-in", "chain-out"
		group   = "chain-group"
		total   = 3000
	)
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	for _, topic := range []string{in, out} {
		if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, "the topics have leaders", 30*time.Second, func() bool {
		return leaderOfPartition(adm, in, 2) > 0 && leaderOfPartition(adm, out, 2) > 0
	})

	var committed atomic.Int64 // records of committed transactions, duplicates included
	workers := &chainWorkers{t: t, nodes: nodes, in: in, out: out, group: group, committed: &committed}
	workers.start("w1")
	workers.start("w2")

	produced := make(chan error, 1)
	go func() { produced <- jepsen.ProducePaced(seeds(nodes), in, total, 50, 500*time.Millisecond) }() // over about 30 s: the inputs span the kills

	waitCommitted := func(n int64) {
		t.Helper()
		harness.WaitFor(t, fmt.Sprintf("%d records committed through the chain", n), 3*time.Minute, func() bool {
			return committed.Load() >= n
		})
	}

	waitCommitted(total / 10)
	workers.start("w3") // joins: the group rebalances mid-transaction
	waitCommitted(total / 4)

	// kill -9 the coordinator of w1's transactions mid-run.
	coord := txnCoordinatorOf(t, adm, "w1")
	t.Logf("killing broker %d, the transaction coordinator of w1", coord)
	nodes[coord-1].Kill()
	harness.WaitFor(t, "another broker coordinates w1", 60*time.Second, func() bool {
		return txnCoordinatorOf(t, adm, "w1") != coord
	})
	workers.stop("w2") // leaves while the coordinator is down
	nodes[coord-1].Restart()
	nodes[coord-1].WaitKafka()
	workers.start("w4")
	waitCommitted(total / 2)

	// kill -9 the leader of an output partition mid-run.
	var leader int32
	harness.WaitFor(t, "an output leader", 30*time.Second, func() bool {
		leader = leaderOfPartition(adm, out, 1)
		return leader > 0
	})
	t.Logf("killing broker %d, the leader of %s-1", leader, out)
	nodes[leader-1].Kill()
	harness.WaitFor(t, "another leader of "+out+"-1", 60*time.Second, func() bool {
		l := leaderOfPartition(adm, out, 1)
		return l > 0 && l != leader
	})
	nodes[leader-1].Restart()
	nodes[leader-1].WaitKafka()

	if err := <-produced; err != nil {
		t.Fatalf("input producer: %v", err)
	}
	got := readCommittedValues(t, nodes, out, total, 3*time.Minute)
	workers.stopAll()

	var missing []int
	for n := range total {
		if got[strconv.Itoa(n)] == 0 {
			missing = append(missing, n)
		}
	}
	var dups []string
	for v, c := range got {
		if c > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", v, c))
		}
	}
	if len(missing) > 0 {
		// Which of the chain's parts lost them: the input log, the
		// output log (read_uncommitted holds what was written there,
		// committed or not), or read_committed's view of it.
		input := readIsolatedValues(t, nodes, in, total, 30*time.Second, kgo.ReadUncommitted())
		written := readIsolatedValues(t, nodes, out, total, 30*time.Second, kgo.ReadUncommitted())
		var inInput, inOutput int
		for _, n := range missing {
			if input[strconv.Itoa(n)] > 0 {
				inInput++
			}
			if written[strconv.Itoa(n)] > 0 {
				inOutput++
			}
		}
		t.Logf("of the %d missing: %d in the input log, %d in the output log read uncommitted", len(missing), inInput, inOutput)
	}
	if len(missing) > 0 || len(dups) > 0 || len(got) != total {
		t.Fatalf("read_committed output: %d distinct of %d; missing %d (first %v); duplicated %d (first %v)",
			len(got), total, len(missing), first(missing, 10), len(dups), first(dups, 10))
	}
	t.Logf("%d inputs each exactly once in the output (%d records committed in all, %d transactions aborted)",
		total, committed.Load(), workers.aborted.Load())
}

// chainWorkers runs named GroupTransactSession workers copying in to out.
type chainWorkers struct {
	t                  *testing.T
	nodes              []*harness.Node
	in, out, group     string
	committed, aborted *atomic.Int64

	mu      sync.Mutex
	running map[string]func() // name → stop and wait

	clientLog chainClientLog
}

// chainClientLog keeps the workers' franz-go logs (info and above): a
// failure prints them, so the transactions' ends and resets can be read
// against the brokers' logs.
type chainClientLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *chainClientLog) logger(name string) kgo.Logger {
	return kgo.BasicLogger(chainLogWriter{l}, kgo.LogLevelInfo, func() string {
		return time.Now().UTC().Format("15:04:05.000 ") + name + " "
	})
}

type chainLogWriter struct{ l *chainClientLog }

func (w chainLogWriter) Write(b []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.buf.Write(b)
}

func (l *chainClientLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (w *chainWorkers) start(name string) {
	w.t.Helper()
	if w.aborted == nil {
		w.aborted = new(atomic.Int64)
		w.t.Cleanup(func() {
			if w.t.Failed() {
				w.t.Logf("workers' client logs:\n%s", w.clientLog.String())
			}
		})
	}
	open := func() (*kgo.GroupTransactSession, error) {
		return jepsen.CopySession(seeds(w.nodes), name, w.group, w.in, w.out, kgo.WithLogger(w.clientLog.logger(name)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		jepsen.Copy(ctx, open, func(o jepsen.CopyOutcome) {
			if len(o.Failed) > 0 {
				w.t.Logf("%s: %d produces of the transaction failed, so it was aborted: %v", name, len(o.Failed), first(o.Failed, 3))
			}
			if o.Err != nil {
				w.t.Logf("%s: %v", name, o.Err)
			}
			switch {
			case o.Committed:
				w.committed.Add(o.Copied)
			case o.Begun:
				w.aborted.Add(1)
			}
		})
	}()
	w.mu.Lock()
	if w.running == nil {
		w.running = map[string]func(){}
	}
	w.running[name] = func() { cancel(); <-done }
	w.mu.Unlock()
}

// newChainSession is a chain worker's GroupTransactSession
// (jepsen.CopySession) through nodes.
func newChainSession(t *testing.T, nodes []*harness.Node, name, group, in, out string, opts ...kgo.Opt) *kgo.GroupTransactSession {
	t.Helper()
	s, err := jepsen.CopySession(seeds(nodes), name, group, in, out, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (w *chainWorkers) stop(name string) {
	w.mu.Lock()
	stop := w.running[name]
	delete(w.running, name)
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (w *chainWorkers) stopAll() {
	w.mu.Lock()
	var names []string
	for n := range w.running {
		names = append(names, n)
	}
	w.mu.Unlock()
	for _, n := range names {
		w.stop(n)
	}
}

// readCommittedValues reads topic from the start at read_committed until
// it holds want distinct values (or timeout) and counts each value.
func readCommittedValues(t *testing.T, nodes []*harness.Node, topic string, want int, timeout time.Duration) map[string]int {
	t.Helper()
	return readIsolatedValues(t, nodes, topic, want, timeout, kgo.ReadCommitted())
}

// readValues is readCommittedValues at the isolation level given.
func readIsolatedValues(t *testing.T, nodes []*harness.Node, topic string, want int, timeout time.Duration, isolation kgo.IsolationLevel) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int{}
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	}
	// A little longer: duplicates may follow the last new value.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	cancel()
	return got
}

func txnAdmin(t testing.TB, nodes []*harness.Node) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// txnCoordinatorOf is the broker coordinating transactional id id.
func txnCoordinatorOf(t *testing.T, adm *kadm.Client, id string) int32 {
	t.Helper()
	var coord int32
	harness.WaitFor(t, "the coordinator of "+id, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := adm.FindTxnCoordinators(ctx, id)[id]
		if r.Err != nil {
			return false
		}
		coord = r.NodeID
		return coord > 0
	})
	return coord
}

// txnIDCoordinatedBy is the first of prefix-0, prefix-1, … (fifty at most)
// whose transaction coordinator satisfies want.
func txnIDCoordinatedBy(t *testing.T, adm *kadm.Client, prefix string, want func(coordinator int32) bool) string {
	t.Helper()
	for i := range 50 {
		if id := fmt.Sprintf("%s-%d", prefix, i); want(txnCoordinatorOf(t, adm, id)) {
			return id
		}
	}
	t.Fatalf("none of %s-0…49 is coordinated where wanted", prefix)
	return ""
}

// leaderOfPartition is the broker leading topic's partition p, or -1.
func leaderOfPartition(adm *kadm.Client, topic string, p int32) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return -1
	}
	pd, ok := td.Partitions[p]
	if !ok || pd.Err != nil {
		return -1
	}
	return pd.Leader
}

func first[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// TestTxnCopyCommitsOnlyWhatItProduced: a chain worker's produces fail
// (their context ends while the output partition's leader is dead, as
// when TestTxnChainExactlyOnceThroughKills stops a worker right after a
// kill), and the transaction must not commit the inputs' offsets then:
// at every point each input below the group's committed offset is in the
// read_committed output, and a worker that goes on copies each input
// exactly once. At both transaction.version levels: the client commits
// the same way at either.
func TestTxnCopyCommitsOnlyWhatItProduced(t *testing.T) {
	// An output partition's leader dies mid-transaction. Under one
	// transaction.version the transaction's coordinator dies with it (the
	// worker's End fails and it replaces its session), under the other
	// the coordinator lives (the worker's abort is answered).
	for _, c := range []struct {
		level           int16
		coordinatorDies bool
	}{{2, true}, {1, false}} {
		t.Run(fmt.Sprintf("transaction.version=%d/coordinator_dies=%v", c.level, c.coordinatorDies), func(t *testing.T) {
			testCopyCommitsOnlyWhatItProduced(t, c.level, c.coordinatorDies)
		})
	}
}

func testCopyCommitsOnlyWhatItProduced(t *testing.T, level int16, coordinatorDies bool) {
	nodes := startCluster(t, 3)
	if level != 2 {
		if code, msg := setTV(t, nodes, level, 2); code != 0 {
			t.Fatalf("transaction.version %d: %d %q", level, code, msg)
		}
		waitAllAdvertise(t, nodes, level)
	}
	const (
		in, out, group = "copy-in", "copy-out", "copy-group"
		total          = 20
	)
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, in); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, out); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the topics have leaders", 30*time.Second, func() bool {
		return leaderOfPartition(adm, in, 0) > 0 && leaderOfPartition(adm, out, 0) > 0 &&
			leaderOfPartition(adm, out, 1) > 0 && leaderOfPartition(adm, out, 2) > 0
	})
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.DefaultProduceTopic(in), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	var inputs []*kgo.Record
	for n := range total {
		v := []byte(strconv.Itoa(n)) // keyed: the copies spread over out's partitions
		inputs = append(inputs, &kgo.Record{Key: v, Value: v})
	}
	if err := producer.ProduceSync(ctx, inputs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	producer.Close()

	leader := leaderOfPartition(adm, out, 0)
	copier := txnIDCoordinatedBy(t, adm, "copier", func(coordinator int32) bool { return (coordinator == leader) == coordinatorDies })
	s := newChainSession(t, nodes, copier, group, in, out)
	defer func() { s.Close() }()
	// franz-go keeps a session whose End failed in its transaction (every
	// later Begin fails), so the application replaces it, as jepsen.Copy
	// does.
	replaceOnError := func(err error) {
		if err != nil {
			s.Close()
			s = newChainSession(t, nodes, copier, group, in, out)
		}
	}
	poll := func() kgo.Fetches {
		t.Helper()
		var all kgo.Fetches
		deadline := time.Now().Add(30 * time.Second)
		for all.NumRecords() < total && time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			all = append(all, s.PollFetches(pctx)...)
			pcancel()
		}
		if all.NumRecords() < total {
			t.Fatalf("polled %d of the %d inputs", all.NumRecords(), total)
		}
		return all
	}
	fs := poll()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	// One output partition loses its leader: the copies to the others
	// are written, those to it wait. The worker is stopped before a new
	// leader is known, and they end with their context.
	if now := leaderOfPartition(adm, out, 0); now != leader {
		t.Fatalf("%s-0's leader moved from broker %d to %d before the kill", out, leader, now)
	}
	nodes[leader-1].Kill()
	produceCtx, stopWorker := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, stopWorker)
	_, committed, failed, err := jepsen.CopyTransaction(produceCtx, s, fs)
	t.Logf("with %s-0's leader (broker %d) dead, %s's coordinator dead too: %v; committed %v, %d produces failed (first %v), end error %v",
		out, leader, copier, coordinatorDies, committed, len(failed), first(failed, 3), err)
	if len(failed) == 0 {
		t.Fatal("no produce failed: the test did not reach the case it is for")
	}
	if committed {
		t.Fatal("committed although a produce failed")
	}
	replaceOnError(err)
	nodes[leader-1].Restart()
	nodes[leader-1].WaitKafka()
	checkCopied(t, adm, nodes, group, in, out, 0)

	// Going on, the worker copies everything, each input once.
	harness.WaitFor(t, "the inputs copied", 2*time.Minute, func() bool {
		fs := poll()
		if err := s.Begin(); err != nil {
			t.Logf("begin: %v", err)
			replaceOnError(err)
			return false
		}
		_, committed, failed, err := jepsen.CopyTransaction(ctx, s, fs)
		if !committed {
			t.Logf("not committed: %d produces failed (first %v), end error %v", len(failed), first(failed, 3), err)
		}
		replaceOnError(err)
		return committed
	})
	checkCopied(t, adm, nodes, group, in, out, total)
	values := readCommittedValues(t, nodes, out, total, 30*time.Second)
	for n := range total {
		if c := values[strconv.Itoa(n)]; c != 1 {
			t.Errorf("input %d is %d times in the output", n, c)
		}
	}
}

// checkCopied waits until the group's committed offset of in-0 is at
// least atLeast (a commit's marker reaches the group after EndTxn is
// answered), then fails the test unless every input below it is in out's
// read_committed records.
func checkCopied(t *testing.T, adm *kadm.Client, nodes []*harness.Node, group, in, out string, atLeast int64) {
	t.Helper()
	committed := int64(0)
	harness.WaitFor(t, fmt.Sprintf("a committed offset of %s-0 at least %d", in, atLeast), 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		offsets, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		if o, ok := offsets.Lookup(in, 0); ok {
			committed = o.At
		}
		return committed >= atLeast
	})
	values := readCommittedValues(t, nodes, out, int(committed), 30*time.Second)
	for n := range committed {
		if values[strconv.FormatInt(n, 10)] == 0 {
			t.Fatalf("input %d is below the group's committed offset %d but not in the read_committed output (%d values there)",
				n, committed, len(values))
		}
	}
}
