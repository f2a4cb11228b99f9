package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferry-mq/ferry/server/features"
	"github.com/ferry-mq/ferry/test/harness"
)

// KIP-890 part 2 (transaction.version 2) next to the transactions of
// Kafka 3.x: the same franz-go chain, with the client opted in and with
// it held back by a MaxVersions cap (Produce 11), against one broker
// with transaction.version 2.

// keyCounter counts the requests a client wrote, by key.
type keyCounter struct {
	mu   sync.Mutex
	keys map[int16]int
}

func (k *keyCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[int16]int{}
	}
	k.keys[key]++
}

func (k *keyCounter) count(key kmsg.Key) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[int16(key)]
}

func tv1Versions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	return v
}

// clientTransactionVersions are the two kinds of transactional client: one
// that uses transaction.version 2, and one capped at version 1's requests.
func clientTransactionVersions() []struct {
	name string
	opts []kgo.Opt
	tv2  bool
} {
	return []struct {
		name string
		opts []kgo.Opt
		tv2  bool
	}{
		{"TV2", nil, true},
		{"TV1 capped at Produce v11", []kgo.Opt{kgo.MaxVersions(tv1Versions())}, false},
	}
}

func newTV2Server(t *testing.T) (*testServer, *markerSink) {
	ts, sink := newTxnTestServerTuned(t, nil) // a new node finalizes transaction.version 2
	needPartitionSide(t, ts)
	return ts, sink
}

func TestTransactionVersionsCommitAndAbort(t *testing.T) {
	for _, tc := range clientTransactionVersions() {
		t.Run(tc.name, func(t *testing.T) {
			ts, sink := newTV2Server(t)
			createTopic(t, ts, "txn-out", 1)
			keys := &keyCounter{}
			cl := txnClient(t, ts, "producer-1", append(tc.opts, kgo.WithHooks(keys))...)
			commitAbortCommit(t, ts, cl, "producer-1")
			var commits []bool
			var epochs []int16
			for _, m := range sink.markers() {
				commits, epochs = append(commits, m.Commit), append(epochs, m.ProducerEpoch)
			}
			if !slices.Equal(commits, []bool{true, false, true}) {
				t.Fatalf("markers commit/abort: %v", commits)
			}
			adds := keys.count(kmsg.AddPartitionsToTxn)
			d, _ := ts.txns.Describe("producer-1")
			if tc.tv2 {
				// franz-go opts in at its first BeginTransaction, from
				// the features its connections' ApiVersions answers
				// said; each end bumps the epoch (InitProducerId gave
				// 0) and the markers carry the bumped one. No
				// AddPartitionsToTxn: the leader adds the partition.
				if !slices.Equal(epochs, []int16{1, 2, 3}) || d.ProducerEpoch != 3 {
					t.Fatalf("marker epochs %v, coordinator epoch %d: want 1 2 3, 3", epochs, d.ProducerEpoch)
				}
				if adds != 0 {
					t.Fatalf("an opted-in client sent %d AddPartitionsToTxn, want none", adds)
				}
			} else {
				if !slices.Equal(epochs, []int16{0, 0, 0}) || d.ProducerEpoch != 0 {
					t.Fatalf("marker epochs %v, coordinator epoch %d: want 0 0 0, 0", epochs, d.ProducerEpoch)
				}
				if adds != 3 {
					t.Fatalf("a capped client sent %d AddPartitionsToTxn, want 3", adds)
				}
			}
			if got := readAll(t, ts, kgo.ReadCommitted(), 3); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
				t.Fatalf("read_committed: %v", got)
			}
			if got := readAll(t, ts, kgo.ReadUncommitted(), 4); !slices.Equal(got, []string{"c1", "c2", "a1", "c3"}) {
				t.Fatalf("read_uncommitted: %v", got)
			}
		})
	}
}

// A consume-transform-produce session: under transaction.version 2 the
// group's offsets join the transaction through TxnOffsetCommit v5 alone.
func TestTransactionVersionsGroupSession(t *testing.T) {
	for _, tc := range clientTransactionVersions() {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := newTV2Server(t)
			keys := &keyCounter{}
			copyThroughGroupSession(t, ts, 30, append(tc.opts, kgo.WithHooks(keys))...)
			addOffsets := keys.count(kmsg.AddOffsetsToTxn)
			if tc.tv2 != (addOffsets == 0) {
				t.Fatalf("AddOffsetsToTxn sent %d times (transaction.version 2 in use: %v)", addOffsets, tc.tv2)
			}
		})
	}
}

// ApiVersions advertises the supported range of transaction.version and
// its finalized level (what clients opt in by), and the KIP-890 part 2
// versions at every level, as Kafka 4 does.
func TestTransactionVersionAdvertised(t *testing.T) {
	for _, tv := range []int16{1, 2} {
		ts, _ := newTxnTestServerTuned(t, nil, func(c *Config) {
			c.Features = features.NewFixed(map[string]int16{features.TransactionVersion: tv})
		})
		for _, v := range []int16{3, 4} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-test", "1"
			resp := do[*kmsg.ApiVersionsResponse](ts.dial(t), req, v)
			maxOf := map[int16]int16{}
			for _, k := range resp.ApiKeys {
				maxOf[k.ApiKey] = k.MaxVersion
			}
			var finalized int16
			for _, f := range resp.FinalizedFeatures {
				if f.Name == "transaction.version" {
					finalized = f.MaxVersionLevel
				}
			}
			want := [3]int16{12, 5, 5} // at every level, as Kafka 4
			if got := [3]int16{maxOf[0], maxOf[26], maxOf[28]}; got != want {
				t.Fatalf("tv %d, v%d: Produce/EndTxn/TxnOffsetCommit max %v, want %v", tv, v, got, want)
			}
			if finalized != tv || len(resp.SupportedFeatures) != 1 || resp.SupportedFeatures[0].MaxVersion != 2 {
				t.Fatalf("tv %d, v%d: features %+v %+v", tv, v, resp.SupportedFeatures, resp.FinalizedFeatures)
			}
			for _, f := range resp.SupportedFeatures {
				if v == 3 && f.MinVersion == 0 {
					t.Fatalf("v3 answered a feature with min version 0 (KAFKA-17011): %+v", f)
				}
			}
		}
	}
}

func produceTxnAt(t *testing.T, c *client, version int16, txnID, topic string, data []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceReq(topic, 0, -1, data)
	req.TransactionID = kmsg.StringPtr(txnID)
	return do[*kmsg.ProduceResponse](c, req, version).Topics[0].Partitions[0]
}

// The wire rules of transaction.version 2, request by request: Produce
// v12 adds its partition (an unknown or fenced producer is refused and
// nothing is written), Produce v11 still only verifies, EndTxn v5 answers
// the bumped epoch and a retry of it is answered the same, the old epoch
// is fenced afterwards.
func TestProduceV12AddsPartitionAndEndTxnV5Bumps(t *testing.T) {
	ts, _ := newTV2Server(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	createTopic(t, ts, "tx-v11", 1)
	pid, epoch := startTxn(t, c, "p")

	if p := produceTxnAt(t, c, 12, "nobody", "tx", txnBatchOf(t, 999, 0, 0, "x")); p.ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("unknown transactional id: %s, want INVALID_PRODUCER_ID_MAPPING", codeName(p.ErrorCode))
	}
	if p := produceTxnAt(t, c, 11, "p", "tx-v11", txnBatchOf(t, pid, epoch, 0, "y")); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("v11 of a partition never added: %s, want INVALID_TXN_STATE", codeName(p.ErrorCode))
	}
	if p := produceTxnAt(t, c, 12, "p", "tx", txnBatchOf(t, pid, epoch, 0, "a")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("v12: %s at %d, want NONE at 0 (the refused ones wrote nothing)", codeName(p.ErrorCode), p.BaseOffset)
	}
	if p := produceTxnAt(t, c, 12, "p", "tx", txnBatchOf(t, pid, epoch, 1, "b")); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("v12 second batch: %s at %d", codeName(p.ErrorCode), p.BaseOffset)
	}
	d := describeTxn(c, "p")
	if d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "tx" {
		t.Fatalf("after the v12 produce the coordinator holds %s %+v, want Ongoing with tx", d.State, d.Topics)
	}

	end := do[*kmsg.EndTxnResponse](c, endTxnReq("p", pid, epoch, true), 5)
	if end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %s, producer %d/%d, want NONE %d/%d", codeName(end.ErrorCode), end.ProducerID, end.ProducerEpoch, pid, epoch+1)
	}
	again := do[*kmsg.EndTxnResponse](c, endTxnReq("p", pid, epoch, true), 5)
	if again.ErrorCode != 0 || again.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 retried: %s epoch %d", codeName(again.ErrorCode), again.ProducerEpoch)
	}
	harness.WaitFor(t, "the commit completes", 10*time.Second, func() bool { return describeTxn(c, "p").State == "CompleteCommit" })
	if p := produceTxnAt(t, c, 12, "p", "tx", txnBatchOf(t, pid, epoch, 2, "late")); p.ErrorCode == 0 {
		t.Fatal("a batch of the ended transaction's epoch was appended after the bump")
	}
	if p := produceTxnAt(t, c, 12, "p", "tx", txnBatchOf(t, pid, epoch+1, 0, "next")); p.ErrorCode != 0 {
		t.Fatalf("the next transaction's first batch: %s", codeName(p.ErrorCode))
	}
	if abort := do[*kmsg.EndTxnResponse](c, endTxnReq("p", pid, epoch+1, false), 5); abort.ErrorCode != 0 || abort.ProducerEpoch != epoch+2 {
		t.Fatalf("abort v5: %s epoch %d", codeName(abort.ErrorCode), abort.ProducerEpoch)
	}
	harness.WaitFor(t, "the abort completes", 10*time.Second, func() bool { return describeTxn(c, "p").State == "CompleteAbort" })
	if got := readTopic(t, ts, "tx"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("read_committed of tx: %v, want [a b]", got)
	}
}

func readTopic(t *testing.T, ts *testServer, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var got []string
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
