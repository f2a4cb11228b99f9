package partition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/jepsen"
)

// Transactions under the partition nemeses: one transactional producer
// per broker writes four records per transaction across the partitions,
// aborting every fourth on purpose, while a read_committed consumer per
// broker reads; each nemesis is applied and healed, the producers stop,
// every transaction ends, and test/jepsen's CheckTxn finds no aborted read
// (G1a), no read before a commit was asked, no lost or torn commit, no
// duplicate, no record out of order or passed over. Each round logs its
// commits and each producer's longest stretch without one (a stall).
// `make test` runs the split-brain nemesis once; FERRY_LONG=1 runs every
// nemesis three rounds; FERRY_JEPSEN_DIR keeps the histories.
func TestTxnPartitionNemeses(t *testing.T) {
	nemeses, rounds, hold := []nemesis{splitBrain}, 1, 15*time.Second
	if os.Getenv("FERRY_LONG") != "" {
		nemeses = []nemesis{splitBrain, followerIsolated, leaderFromZK, controllerFromZK, oneVsRest, twoVsOne, zkWithMinority, flapping}
		rounds, hold = 3, 20*time.Second
	}
	for _, n := range nemeses {
		if n.hold == 0 {
			n.hold = hold
		}
		t.Run(n.name, func(t *testing.T) { runTxnNemesis(t, n, rounds) })
	}
}

func runTxnNemesis(t *testing.T, n nemesis, rounds int) {
	c := startCluster(t, "--transaction-state-log-num-partitions", "3",
		"--transaction-abort-timed-out-transaction-cleanup-interval-ms", "1000")
	c.createTopic(topic, partitions)

	ctx, cancel := context.WithCancel(context.Background())
	history, live := &jepsen.TxnHistory{}, &jepsen.Reads{}
	var producers, consumers sync.WaitGroup
	readCtx, stopReading := context.WithCancel(context.Background())
	for i, node := range c.nodes {
		name := fmt.Sprintf("b%d", i+1)
		p := jepsen.TxnProducer{Name: "tx" + name, Topic: topic, Partitions: partitions, PerTxn: 4,
			AbortEvery: 4, Every: 100 * time.Millisecond, Max: 5000, Timeout: 30 * time.Second}
		opts := []kgo.Opt{kgo.SeedBrokers(node.KafkaAddr), kgo.TransactionalID(p.Name),
			kgo.TransactionTimeout(10 * time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.MetadataMinAge(250 * time.Millisecond), kgo.ProducerLinger(0)}
		opts = append(opts, clientDebugLog(t, "txn-"+n.name+"-"+p.Name)...)
		newClient := func() (*kgo.Client, error) { return kgo.NewClient(opts...) }
		producers.Go(func() { jepsen.ProduceTxns(ctx, history, newClient, p) })
		consumers.Go(func() {
			if err := jepsen.ConsumeCommitted(readCtx, live, []string{node.KafkaAddr}, "live "+name, topic, partitions); err != nil {
				t.Errorf("consumer through %s: %v", name, err)
			}
		})
	}
	t.Cleanup(func() { cancel(); stopReading(); producers.Wait(); consumers.Wait() })

	began := time.Now()
	for round := 1; round <= rounds; round++ {
		waitCommits(t, history, 3, 60*time.Second)
		startAt := time.Now()
		what := holdNemesis(t, c, n)
		healAt := time.Now()
		perPartition := c.waitFullISR(topic, partitions, isrBound)
		// Commits after the heal, enough to measure how the producers resumed.
		waitCommits(t, history, 20, 60*time.Second)
		t.Logf("round %d: %s; held %v; ISR whole %v after the heal; %s", round, what, n.hold,
			slices.Max(perPartition).Round(time.Millisecond), commitFigures(history.Txns(), startAt, healAt, time.Now()))
	}
	cancel()
	producers.Wait()
	waitNoOpenTransactions(t, c)

	rctx, rcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer rcancel()
	final, err := jepsen.ReadCommitted(rctx, c.seeds(), topic, partitions, 5*time.Second)
	if err != nil {
		t.Fatalf("final read_committed read: %v", err)
	}
	stopReading()
	consumers.Wait()
	txns := history.Txns()
	report := jepsen.CheckTxn(txns, append(final, live.Records()...))
	t.Logf("%s: %s; %d transactions attempted in %v", n.name, report, len(txns), time.Since(began).Round(time.Second))
	keepHistory(t, c, n.name, txns, append(final, live.Records()...))
	if report.Txns[jepsen.Committed] == 0 || report.Txns[jepsen.Aborted] == 0 {
		t.Errorf("%s: the workload needs commits and aborts: %s", n.name, report)
	}
	if report.Total() != 0 {
		t.Errorf("%s: %d anomalies:\n%s\nstate: %s", n.name, report.Total(), report, c.describe(topic, partitions))
	}
}

// holdNemesis applies n, holds it (cutting and healing in turn when it
// flaps) and heals.
func holdNemesis(t *testing.T, c *cluster, n nemesis) string {
	t.Helper()
	startAt := time.Now()
	what := n.start(c)
	t.Logf("%s (cuts: %s)", what, c.net.Cuts())
	if n.flap > 0 {
		cuts := true
		for time.Since(startAt) < n.hold {
			time.Sleep(n.flap)
			if cuts {
				mustOK(c, c.net.Heal())
			} else {
				n.start(c)
			}
			cuts = !cuts
		}
	} else {
		time.Sleep(n.hold) // the fault's duration is the point
	}
	mustOK(c, c.net.Heal())
	return what
}

// waitCommits waits for more committed transactions than now.
func waitCommits(t *testing.T, h *jepsen.TxnHistory, more int, timeout time.Duration) {
	t.Helper()
	count := func() int {
		n := 0
		for _, x := range h.Txns() {
			if x.Outcome == jepsen.Committed {
				n++
			}
		}
		return n
	}
	from := count()
	harness.WaitFor(t, fmt.Sprintf("%d more committed transactions", more), timeout, func() bool { return count() >= from+more })
}

// waitNoOpenTransactions waits until no coordinator lists a transaction
// that is not complete (a producer cut off mid-transaction is timed out
// and aborted), so that the final read sees every outcome.
func waitNoOpenTransactions(t *testing.T, c *cluster) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	harness.WaitFor(t, "every transaction to end", 90*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ls, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
		return err == nil && len(ls) == 0
	})
}

// commitFigures is one round's commits: how many, each producer's longest
// stretch without one from the fault to now, and how long after the heal
// each committed again (a stall shows as a long one).
func commitFigures(txns []jepsen.Txn, startAt, healAt, now time.Time) string {
	committed := 0
	firstAfterHeal := map[string]time.Duration{}
	for _, x := range txns {
		if x.Outcome != jepsen.Committed || x.End.Before(startAt) {
			continue
		}
		committed++
		if d := x.End.Sub(healAt); d >= 0 {
			if prev, ok := firstAfterHeal[x.Producer]; !ok || d < prev {
				firstAfterHeal[x.Producer] = d
			}
		}
	}
	gaps := jepsen.CommitGaps(txns, startAt, now)
	producers := slices.Sorted(maps.Keys(gaps))
	var b strings.Builder
	fmt.Fprintf(&b, "%d commits; longest without a commit, first commit after the heal:", committed)
	for _, p := range producers {
		after := "none"
		if d, ok := firstAfterHeal[p]; ok {
			after = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, " %s %v (from +%v), %s;", p, gaps[p].Duration.Round(time.Millisecond),
			gaps[p].From.Sub(startAt).Round(time.Millisecond), after)
	}
	return b.String()
}

// keepHistory writes the transactions and reads as JSON, and each
// broker's log, under $FERRY_JEPSEN_DIR when set, for checking again
// offline and finding a stall's cause.
func keepHistory(t *testing.T, c *cluster, name string, txns []jepsen.Txn, reads []jepsen.Record) {
	dir := os.Getenv("FERRY_JEPSEN_DIR")
	if dir == "" {
		return
	}
	prefix := filepath.Join(dir, "txn-"+strings.ReplaceAll(name, "|", "_"))
	b, err := json.Marshal(map[string]any{"txns": txns, "reads": reads})
	if err == nil {
		err = os.WriteFile(prefix+".json", b, 0o644)
	}
	for i, node := range c.nodes {
		if err == nil {
			err = os.WriteFile(fmt.Sprintf("%s-b%d.log", prefix, i+1), []byte(node.Logs()), 0o644)
		}
	}
	if err != nil {
		t.Errorf("keep the history: %v", err)
	}
}

// clientDebugLog is, when FERRY_JEPSEN_DIR names a directory, the option
// that writes a franz-go client's debug log to name.client.log there:
// what a client asked and was answered, to read against the brokers'
// logs after a failure.
func clientDebugLog(t *testing.T, name string) []kgo.Opt {
	dir := os.Getenv("FERRY_JEPSEN_DIR")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(name, "|", "_")+".client.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	stamp := func() string { return time.Now().Format("15:04:05.000 ") }
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, stamp))}
}
