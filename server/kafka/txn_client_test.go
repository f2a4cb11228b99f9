package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/server/txn"
	"github.com/ferry-mq/ferry/test/harness"
)

// franz-go's transactional producer against the coordinator. They need
// the partition side (transactional batches accepted, control batches,
// the last stable offset: Broker.WriteTxnMarkers, txnlog's branch) and
// skip until the broker has it; the coordinator's part of the same
// scenarios runs without it in txn_test.go and server/txn.

func needPartitionSide(t *testing.T, ts *testServer) {
	t.Helper()
	if _, ok := partitionSide(ts.broker); !ok {
		t.Skip("needs the partition side's Broker.WriteTxnMarkers and transactional produce (txnlog's branch)")
	}
}

func txnClient(t *testing.T, ts *testServer, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.addr), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic("txn-out"), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceInTxn(t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
}

func endTxn(cl *kgo.Client, commit kgo.TransactionEndTry) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.EndTransaction(ctx, commit)
}

// readAll reads txn-out from the start at the isolation level until want
// values came or the wait ends.
func readAll(t *testing.T, ts *testServer, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("txn-out"), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(got) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// commitAbortCommit runs three transactions of the transactional id id
// on cl: c1 and c2 committed, a1 aborted, c3 committed; and waits until
// the coordinator has completed the last.
func commitAbortCommit(t *testing.T, ts *testServer, cl *kgo.Client, id string) {
	t.Helper()
	produceInTxn(t, cl, "c1", "c2")
	if err := endTxn(cl, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	produceInTxn(t, cl, "a1")
	if err := endTxn(cl, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	produceInTxn(t, cl, "c3")
	if err := endTxn(cl, kgo.TryCommit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	harness.WaitFor(t, "the last commit completes", 10*time.Second, func() bool {
		d, code := ts.txns.Describe(id)
		return code == 0 && d.State == txn.CompleteCommit
	})
}

func TestFranzGoTransactionalCommitAndAbort(t *testing.T) {
	ts, sink := newTxnTestServer(t)
	needPartitionSide(t, ts)
	createTopic(t, ts, "txn-out", 1)
	cl := txnClient(t, ts, "producer-1")
	commitAbortCommit(t, ts, cl, "producer-1")
	var outcomes []bool
	for _, m := range sink.markers() {
		if m.Topic != "txn-out" || m.Partition != 0 {
			t.Fatalf("marker for %s-%d", m.Topic, m.Partition)
		}
		outcomes = append(outcomes, m.Commit)
	}
	if !slices.Equal(outcomes, []bool{true, false, true}) {
		t.Fatalf("markers commit/abort: %v", outcomes)
	}
	t.Run("read_committed", func(t *testing.T) {
		if got := readAll(t, ts, kgo.ReadCommitted(), 3); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
			t.Fatalf("read_committed: %v", got)
		}
		if got := readAll(t, ts, kgo.ReadUncommitted(), 4); !slices.Equal(got, []string{"c1", "c2", "a1", "c3"}) {
			t.Fatalf("read_uncommitted: %v", got)
		}
	})
}

// A second producer with the same transactional id fences the first: the
// first one's open transaction is aborted and its commit refused.
func TestFranzGoZombieFenced(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	needPartitionSide(t, ts)
	createTopic(t, ts, "txn-out", 1)
	zombie := txnClient(t, ts, "shared")
	produceInTxn(t, zombie, "zombie")
	fresh := txnClient(t, ts, "shared")
	produceInTxn(t, fresh, "fresh")
	err := endTxn(zombie, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the zombie's commit: %v, want it fenced", err)
	}
	if err := endTxn(fresh, kgo.TryCommit); err != nil {
		t.Fatalf("the new producer's commit: %v", err)
	}
	t.Run("read_committed", func(t *testing.T) {
		if got := readAll(t, ts, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"fresh"}) {
			t.Fatalf("read_committed: %v", got)
		}
	})
}

// A transaction left open past transaction.timeout.ms is aborted by the
// coordinator, which fences its producer.
func TestFranzGoTransactionTimeoutAborts(t *testing.T) {
	ts, _ := newTxnTestServerTuned(t, func(c *txn.Config) { c.AbortTimedOutInterval = 50 * time.Millisecond })
	needPartitionSide(t, ts)
	createTopic(t, ts, "txn-out", 1)
	cl := txnClient(t, ts, "slow", kgo.TransactionTimeout(time.Second))
	produceInTxn(t, cl, "late")
	harness.WaitFor(t, "the coordinator aborts the transaction", 10*time.Second, func() bool {
		d, code := ts.txns.Describe("slow")
		return code == 0 && d.State == txn.CompleteAbort
	})
	if err := endTxn(cl, kgo.TryCommit); err == nil {
		t.Fatal("a commit after the timeout abort succeeded")
	}
	t.Run("read_committed", func(t *testing.T) {
		if got := readAll(t, ts, kgo.ReadCommitted(), 1); len(got) != 0 {
			t.Fatalf("read_committed sees the aborted %v", got)
		}
	})
}

// franz-go's consume-transform-produce session (as its TestTxnEtl): each
// input record copied once to the output and its offset committed in the
// same transaction.
func TestFranzGoGroupTransactSession(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	needPartitionSide(t, ts)
	copyThroughGroupSession(t, ts, 50)
}

// copyThroughGroupSession writes n records to etl-in and copies them to
// txn-out with a GroupTransactSession (group "etl"), each poll one
// transaction, then checks read_committed holds n records and the group's
// offset is n.
func copyThroughGroupSession(t *testing.T, ts *testServer, n int, opts ...kgo.Opt) {
	t.Helper()
	createTopic(t, ts, "etl-in", 1)
	createTopic(t, ts, "txn-out", 1)
	in, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("etl-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if err := in.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(append(opts, kgo.SeedBrokers(ts.addr), kgo.TransactionalID("etl-session"),
		kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("etl-in"), kgo.DefaultProduceTopic("txn-out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	copied := 0
	for copied < n && ctx.Err() == nil {
		fetches := sess.PollFetches(ctx)
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			copied += fetches.NumRecords()
		}
	}
	if got := readAll(t, ts, kgo.ReadCommitted(), n); len(got) != n {
		t.Fatalf("read_committed holds %d records, want %d", len(got), n)
	}
	harness.WaitFor(t, "the group's offset is committed", 10*time.Second, func() bool {
		offs, err := kadm.NewClient(in).FetchOffsets(ctx, "etl")
		o, ok := offs.Lookup("etl-in", 0)
		return err == nil && ok && o.At == int64(n)
	})
}
