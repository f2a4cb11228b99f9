package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestTxnStateReplicatesToFollowers: transactions written by franz-go
// transactional producers through the coordinator (one aborted, one
// committed, one left open) reach a partition's followers, which build the
// same aborted-transaction index (byte for byte) and the same open
// transactions: after the leader is killed, the new leader answers a
// read_committed fetch with the old leader's LSO and aborted transactions,
// and ends the open transaction when its producer commits.
func TestTxnStateReplicatesToFollowers(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "txn-replicated"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createFullISRTopic(ctx, t, adm, topic)
	leader := leaderOf(t, adm, topic)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[topic].ID // Fetch v13+ names topics by id

	transaction := func(id string, values ...string) (*kgo.Client, int64) {
		t.Helper()
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.TransactionalID(id),
			kgo.TransactionTimeout(2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for _, v := range values {
			rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		res := p.ProduceSync(ctx, rs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %v: %v", values, err)
		}
		return p, res[len(res)-1].Record.Offset
	}
	end := func(p *kgo.Client, how kgo.TransactionEndTry) {
		t.Helper()
		if err := p.EndTransaction(ctx, how); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	aborted, _ := transaction("txn-replicated-a", "a1", "a2")
	end(aborted, kgo.TryAbort)
	committed, _ := transaction("txn-replicated-c", "c1")
	end(committed, kgo.TryCommit)
	open, openAt := transaction("txn-replicated-o", "o1") // left open
	// Markers are written after EndTxn answers: wait for both.
	var before kmsg.FetchResponseTopicPartition
	harness.WaitFor(t, "the leader's LSO to reach the open transaction", 30*time.Second, func() bool {
		before = readCommitted(t, ctx, cl, leader, topic, topicID)
		return before.LastStableOffset == openAt
	})
	if before.HighWatermark != openAt+1 || len(before.AbortedTransactions) != 1 {
		t.Fatalf("leader: LSO %d, high watermark %d, aborted %+v", before.LastStableOffset, before.HighWatermark, before.AbortedTransactions)
	}

	want := txnIndex(t, nodes[leader-1], topic)
	if len(want) != 34 {
		t.Fatalf("the leader's .txnindex holds %d bytes, want one entry", len(want))
	}
	for _, n := range nodes {
		harness.WaitFor(t, "a follower's .txnindex to match the leader's", 30*time.Second, func() bool {
			return bytes.Equal(txnIndex(t, n, topic), want)
		})
	}

	nodes[leader-1].Kill()
	var next int32
	harness.WaitFor(t, "a new leader", 60*time.Second, func() bool {
		next = leaderOf(t, adm, topic)
		return next > 0 && next != leader
	})
	var after kmsg.FetchResponseTopicPartition
	harness.WaitFor(t, "the new leader to answer reads", 30*time.Second, func() bool {
		after = readCommitted(t, ctx, cl, next, topic, topicID)
		return after.ErrorCode == 0 && after.HighWatermark == openAt+1
	})
	abortedOf := func(p kmsg.FetchResponseTopicPartition) []string {
		var out []string
		for _, a := range p.AbortedTransactions {
			out = append(out, fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset))
		}
		return out
	}
	if after.LastStableOffset != before.LastStableOffset || !slices.Equal(abortedOf(after), abortedOf(before)) {
		t.Fatalf("new leader: LSO %d aborted %v; the old leader had %d and %v",
			after.LastStableOffset, abortedOf(after), before.LastStableOffset, abortedOf(before))
	}
	end(open, kgo.TryCommit) // the open transaction carried over
	harness.WaitFor(t, "the LSO to pass the committed transaction", 60*time.Second, func() bool {
		p := readCommitted(t, ctx, cl, next, topic, topicID)
		return p.LastStableOffset == openAt+2 && p.HighWatermark == openAt+2
	})
}

// readCommitted fetches partition 0 from broker `from` at read_committed.
func readCommitted(t *testing.T, ctx context.Context, cl *kgo.Client, from int32, topic string, id [16]byte) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.IsolationLevel, req.MaxBytes, req.SessionEpoch = -1, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl.Broker(int(from)))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{ErrorCode: -1}
	}
	return resp.Topics[0].Partitions[0]
}

// txnIndex is the concatenated .txnindex files of a node's replica of
// partition 0.
func txnIndex(t *testing.T, n *harness.Node, topic string) []byte {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(n.DataDir, topic+"-0", "*.txnindex"))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue // being rewritten; the next poll reads it
		}
		out = append(out, b...)
	}
	return out
}
