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

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
	"github.com/ferry-mq/ferry/test/harness"
)

// TestTxnStateReplicatesToFollowers: transactional batches and markers
// written on a partition's leader (as a coordinator writes them, with raw
// Produce and WriteTxnMarkers requests) reach its followers, which build
// the same aborted-transaction index (byte for byte) and the same open
// transactions: after the leader is killed, the new leader answers a
// read_committed fetch with the old leader's LSO and aborted transactions,
// and ends the open transaction when its marker comes.
func TestTxnStateReplicatesToFollowers(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "txn-replicated"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, topic, 3)
	leader := leaderOf(t, adm, topic)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[topic].ID // Fetch v13+ names topics by id

	produce := func(to int32, b []byte) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(to)))
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce to broker %d: %v %+v", to, err, resp)
		}
	}
	marker := func(to int32, id int64, commit bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = id, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl.Broker(int(to)))
		if err != nil || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("marker on broker %d: %v %+v", to, err, resp)
		}
	}
	produce(leader, txnBatch(t, 100, "a1", "a2")) // 0-1, aborted at 3
	produce(leader, txnBatch(t, 200, "c1"))       // 2, committed at 4
	marker(leader, 100, false)
	marker(leader, 200, true)
	produce(leader, txnBatch(t, 300, "o1")) // 5, left open
	before := readCommitted(t, ctx, cl, leader, topic, topicID)
	if before.LastStableOffset != 5 || before.HighWatermark != 6 || len(before.AbortedTransactions) != 1 {
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
		return after.ErrorCode == 0 && after.HighWatermark == 6
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
	marker(next, 300, true) // the open transaction carried over
	harness.WaitFor(t, "the LSO to pass the committed transaction", 30*time.Second, func() bool {
		p := readCommitted(t, ctx, cl, next, topic, topicID)
		return p.LastStableOffset == 7
	})
}

func txnBatch(t *testing.T, id int64, values ...string) []byte {
	t.Helper()
	var b records.Builder
	for _, v := range values {
		b.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
	}
	data, err := b.AppendBatch(nil, records.BatchOptions{ProducerID: id})
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.ReadHeader(data)
	h.Attributes |= recordbatch.AttrTransactional
	h.Put(data)
	return data
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
