package cluster_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestTxnZombieFencedAcrossCoordinatorKill: a transactional producer (the
// zombie) writes into an open transaction; the broker coordinating its id
// is killed (kill -9); a second producer with the same transactional id
// starts on the new coordinator, which fences the zombie (its open
// transaction aborted, its epoch bumped) and commits its own. The zombie's
// further produce and commit fail with a fencing error; read_committed
// readers see only the new producer's records, read_uncommitted readers
// see the zombie's aborted ones too.
func TestTxnZombieFencedAcrossCoordinatorKill(t *testing.T) {
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3")
	const topic, id = "txn-zombie", "zombie-id"
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createFullISRTopic(ctx, t, adm, topic)

	zombie := txnClient(t, nodes, id, topic)
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, kgo.StringRecord("zombie-1")).FirstErr(); err != nil {
		t.Fatalf("zombie produce: %v", err)
	}

	coord := txnCoordinatorOf(t, adm, id)
	leader := leaderOf(t, adm, topic)
	t.Logf("killing broker %d, the coordinator of %s (partition leader %d)", coord, id, leader)
	nodes[coord-1].Kill()

	fresh := txnClient(t, nodes, id, topic)
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, kgo.StringRecord("fresh-1")).FirstErr(); err != nil {
		t.Fatalf("fresh produce: %v", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("fresh commit: %v", err)
	}

	// The zombie is fenced: its next produce in the old transaction and its
	// commit both fail, and it cannot make anything visible.
	zctx, zcancel := context.WithTimeout(ctx, 30*time.Second)
	perr := zombie.ProduceSync(zctx, kgo.StringRecord("zombie-2")).FirstErr()
	cerr := zombie.EndTransaction(zctx, kgo.TryCommit)
	zcancel()
	if perr == nil && cerr == nil {
		t.Fatal("the zombie produced and committed after being fenced")
	}
	t.Logf("zombie after fencing: produce %v; commit %v", perr, cerr)
	if !isFencing(perr) && !isFencing(cerr) {
		t.Fatalf("zombie: produce %v, commit %v; want a fencing error (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH)", perr, cerr)
	}

	nodes[coord-1].Restart()
	committed := readAllAt(t, nodes, topic, kgo.ReadCommitted(), 1)
	if !slices.Equal(committed, []string{"fresh-1"}) {
		t.Fatalf("read_committed holds %v, want [fresh-1]", committed)
	}
	uncommitted := readAllAt(t, nodes, topic, kgo.ReadUncommitted(), 2)
	if !slices.Contains(uncommitted, "zombie-1") || !slices.Contains(uncommitted, "fresh-1") || slices.Contains(uncommitted, "zombie-2") {
		t.Fatalf("read_uncommitted holds %v, want zombie-1 and fresh-1 and not zombie-2", uncommitted)
	}
}

// TestTxnTimeoutAbortOnCluster: a producer that opens a transaction and
// goes quiet past transaction.timeout.ms has it aborted by the coordinator
// (markers on the partition's replicas, the LSO past it); a later
// transaction of another producer on the same partition becomes visible to
// read_committed readers, the timed-out one never does, and the quiet
// producer's commit fails.
func TestTxnTimeoutAbortOnCluster(t *testing.T) {
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3",
		"--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500")
	const topic = "txn-timeout"
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createFullISRTopic(ctx, t, adm, topic)

	quiet := txnClient(t, nodes, "quiet", topic, kgo.TransactionTimeout(2*time.Second))
	if err := quiet.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := quiet.ProduceSync(ctx, kgo.StringRecord("quiet-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the coordinator to abort the timed-out transaction", 30*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctx, "quiet")
		if err != nil {
			return false
		}
		s := d["quiet"]
		return s.Err == nil && s.State == "CompleteAbort"
	})

	other := txnClient(t, nodes, "other", topic)
	if err := other.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := other.ProduceSync(ctx, kgo.StringRecord("other-1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	err := quiet.EndTransaction(qctx, kgo.TryCommit)
	qcancel()
	if err == nil {
		t.Fatal("the timed-out transaction committed")
	}
	t.Logf("timed-out producer's commit: %v", err)

	if got := readAllAt(t, nodes, topic, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"other-1"}) {
		t.Fatalf("read_committed holds %v, want [other-1]", got)
	}
	if got := readAllAt(t, nodes, topic, kgo.ReadUncommitted(), 2); !slices.Equal(got, []string{"other-1", "quiet-1"}) {
		t.Fatalf("read_uncommitted holds %v, want [other-1 quiet-1]", got)
	}
}

func txnClient(t *testing.T, nodes []*harness.Node, id, topic string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds(nodes)...), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(100), kgo.RetryTimeout(60 * time.Second)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readAllAt reads topic from the start at the isolation level until it has
// at least want records and nothing more arrives for 2 s; values sorted.
func readAllAt(t *testing.T, nodes []*harness.Node, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)); n++ })
		if n == 0 && len(got) >= want {
			break
		}
	}
	sort.Strings(got)
	return got
}

func isFencing(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}
