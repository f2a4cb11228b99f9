package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
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
	go func() { produced <- produceInputPaced(nodes, in, total) }()

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
}

func (w *chainWorkers) start(name string) {
	w.t.Helper()
	if w.aborted == nil {
		w.aborted = new(atomic.Int64)
	}
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds(w.nodes)...),
		kgo.TransactionalID(name),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(w.group),
		kgo.ConsumeTopics(w.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(w.out),
		kgo.RecordRetries(100),
		kgo.RetryTimeout(60*time.Second),
		kgo.SessionTimeout(10*time.Second),
		kgo.RebalanceTimeout(30*time.Second),
	)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := s.PollFetches(ctx)
			if ctx.Err() != nil {
				break
			}
			if err := s.Begin(); err != nil {
				w.t.Logf("%s: begin: %v", name, err)
				time.Sleep(100 * time.Millisecond) // a backoff before the next poll's transaction
				continue
			}
			var n int64
			fs.EachRecord(func(r *kgo.Record) {
				n++
				s.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
			})
			endCtx, endCancel := context.WithTimeout(context.Background(), 60*time.Second)
			ok, err := s.End(endCtx, kgo.TryCommit)
			endCancel()
			switch {
			case ok:
				w.committed.Add(n)
			case err != nil && !errors.Is(err, context.Canceled):
				w.t.Logf("%s: end: %v", name, err)
				w.aborted.Add(1)
			default:
				w.aborted.Add(1)
			}
		}
	}()
	w.mu.Lock()
	if w.running == nil {
		w.running = map[string]func(){}
	}
	w.running[name] = func() { cancel(); <-done; s.Close() }
	w.mu.Unlock()
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

// produceInputPaced writes values 0..total-1 to topic over about 30 s
// (an idempotent acks=all producer retrying through broker kills), so the
// chain is mid-stream when brokers die.
func produceInputPaced(nodes []*harness.Node, topic string, total int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000), kgo.RetryTimeout(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	const step = 50
	for from := 0; from < total; from += step {
		var rs []*kgo.Record
		for n := from; n < min(from+step, total); n++ {
			v := strconv.Itoa(n)
			rs = append(rs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		err := cl.ProduceSync(ctx, rs...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("records %d..: %w", from, err)
		}
		time.Sleep(500 * time.Millisecond) // the pace: the inputs span the kills
	}
	return nil
}

// readCommittedValues reads topic from the start at read_committed until
// it holds want distinct values (or timeout) and counts each value.
func readCommittedValues(t *testing.T, nodes []*harness.Node, topic string, want int, timeout time.Duration) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
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
