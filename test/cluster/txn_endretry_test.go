package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// endTxnV5 sends EndTxn v5 (transaction.version 2) for id through cl,
// which finds the coordinator; it returns the answer.
func endTxnV5(ctx context.Context, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) (*kmsg.EndTxnResponse, error) {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return req.RequestWith(ctx, cl)
}

// An EndTxn v5 whose answer is lost with its coordinator (killed right
// after it answered) and that the producer retries at the new
// coordinator is answered as the retry it is: success and the bumped
// epoch, not PRODUCER_FENCED (the coordinator elected after the failover
// reads the end's client transaction version from __transaction_state).
// The transaction's records are committed.
func TestEndTxnV5RetryAcrossCoordinatorFailover(t *testing.T) {
	nodes := startTxnBrokers(t)
	waitAllAdvertise(t, nodes, 2)
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, id = "end-retry", "end-retry-tx"
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "a leader", 30*time.Second, func() bool { return leaderOfPartition(adm, topic, 0) > 0 })
	producer := benchClient(t, nodes, topic, kgo.TransactionalID(id))
	// A committed transaction first: the one in doubt is not the producer's first.
	for _, v := range []string{"warm-up", "in-doubt"} {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if v == "warm-up" {
			if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	pid, epoch, err := producer.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	coord := txnCoordinatorOf(t, adm, id)
	raw := benchClient(t, nodes, topic)
	resp, err := endTxnV5(ctx, raw, id, pid, epoch, true)
	if err != nil || resp.ErrorCode != 0 || resp.Version < 5 || resp.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %+v %v, want the epoch bumped to %d", resp, err, epoch+1)
	}
	nodes[coord-1].Kill()
	alive := slices.Delete(slices.Clone(nodes), int(coord-1), int(coord))
	retry := benchClient(t, alive, topic)
	harness.WaitFor(t, "the retry answered by the new coordinator", 90*time.Second, func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		resp, err = endTxnV5(rctx, retry, id, pid, epoch, true)
		if err != nil {
			return false
		}
		switch kerr.ErrorForCode(resp.ErrorCode) {
		case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.ConcurrentTransactions:
			return false
		}
		return true
	})
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch+1 {
		t.Fatalf("the retry: %s, producer %d/%d; want success with %d/%d", kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, pid, epoch+1)
	}
	if c := txnCoordinatorOf(t, txnAdmin(t, alive), id); c == coord {
		t.Fatalf("the coordinator is still the killed broker %d", c)
	}
	abort, err := endTxnV5(ctx, retry, id, pid, epoch, false)
	if err != nil || abort.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("an abort at the old epoch after the commit: %+v %v, want INVALID_TXN_STATE", abort, err)
	}
	reader := benchClient(t, alive, topic, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"warm-up", "in-doubt"}) {
		t.Fatalf("read_committed: %v", got)
	}
}

// A downgrade of transaction.version to 1 while version-2 transactions
// are open on a cluster loses and mixes nothing: the open transaction
// goes on to partitions led by other brokers (added by the produce on a
// connection that negotiated version 2, or by AddPartitionsToTxn on one
// opened after the downgrade) and commits; a producer that connects
// after the downgrade runs version 1; a read_committed reader sees every
// committed record once.
func TestDowngradeWithOpenTransactionOnCluster(t *testing.T) {
	nodes := startTxnBrokers(t)
	waitAllAdvertise(t, nodes, 2)
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "downgrade-open"
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "leaders", 30*time.Second, func() bool {
		return leaderOfPartition(adm, topic, 0) > 0 && leaderOfPartition(adm, topic, 1) > 0 && leaderOfPartition(adm, topic, 2) > 0
	})
	adds := &addCounter{}
	open := benchClient(t, nodes, topic, kgo.TransactionalID("open-across"), kgo.WithHooks(adds), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(cl *kgo.Client, v string, p int32) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: p}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	// A committed transaction first: the open one is not the producer's first.
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(open, "warm-up", 0)
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	addsBefore := adds.n.Load()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(open, "before-0", 0)
	if code, msg := setTV(t, nodes, 1, 2); code != 0 {
		t.Fatalf("downgrade: %d %s", code, msg)
	}
	waitAllAdvertise(t, nodes, 1)
	produce(open, "after-1", 1)
	produce(open, "after-2", 2)
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit across the downgrade: %v", err)
	}
	// The client may add the partitions whose leaders it first reached
	// after the downgrade explicitly (those connections negotiated
	// Produce v11): the coordinator keeps one partition set either way.
	t.Logf("AddPartitionsToTxn of the open transaction after the downgrade: %d", adds.n.Load()-addsBefore)
	lateAdds := &addCounter{}
	late := benchClient(t, nodes, topic, kgo.TransactionalID("after-downgrade"), kgo.WithHooks(lateAdds), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := late.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(late, "v1", 1)
	if err := late.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if lateAdds.n.Load() == 0 {
		t.Fatal("a producer connecting after the downgrade used version 2")
	}
	reader := benchClient(t, nodes, topic, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 5 && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"after-1", "after-2", "before-0", "v1", "warm-up"}) {
		t.Fatalf("read_committed: %v", got)
	}
}
