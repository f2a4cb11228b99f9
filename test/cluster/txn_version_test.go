package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ferry-mq/ferry/test/harness"
)

// addCounter counts the AddPartitionsToTxn requests a client wrote.
type addCounter struct{ n atomic.Int64 }

func (a *addCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key == int16(kmsg.AddPartitionsToTxn) {
		a.n.Add(1)
	}
}

// The same transactional chain (commits and aborts over three partitions
// led by three brokers, the coordinator on one of them) on a cluster at
// transaction.version 2 (its default), by a franz-go client that opts in (KIP-890 part
// 2: its produces add the partitions, through the leaders' calls to the
// coordinator) and by one held at Produce v11 (the transactions of Kafka
// 3.x); a read_committed reader sees exactly the committed records.
func TestTxnVersionsChainOnCluster(t *testing.T) {
	nodes := startTxnBrokers(t)
	waitAllAdvertise(t, nodes, 2) // a new cluster finalizes 2
	adm := txnAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tv1 := kversion.Stable()
	tv1.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
		tv2  bool
	}{
		{"TV2", nil, true},
		{"TV1", []kgo.Opt{kgo.MaxVersions(tv1)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "chain-" + tc.name
			if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
				t.Fatal(err)
			}
			harness.WaitFor(t, "leaders", 30*time.Second, func() bool {
				return leaderOfPartition(adm, topic, 0) > 0 && leaderOfPartition(adm, topic, 1) > 0 && leaderOfPartition(adm, topic, 2) > 0
			})
			adds := &addCounter{}
			cl := benchClient(t, nodes, topic, append(tc.opts, kgo.TransactionalID("chain-"+tc.name), kgo.WithHooks(adds),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
			var committed []string
			const txns, perTxn = 12, 9
			for i := range txns {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				var values []string
				for j := range perTxn {
					v := fmt.Sprintf("%d-%d", i, j)
					values = append(values, v)
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(j % 3)}).FirstErr(); err != nil {
						t.Fatalf("produce %s: %v", v, err)
					}
				}
				commit := i%3 != 1
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					t.Fatalf("end %d (commit %v): %v", i, commit, err)
				}
				if commit {
					committed = append(committed, values...)
				}
			}
			// An opted-in client (from its first transaction: its
			// connections' ApiVersions said the level) sends no adds.
			if n := adds.n.Load(); tc.tv2 && n > 0 || !tc.tv2 && n < txns {
				t.Fatalf("%d AddPartitionsToTxn sent (opted in: %v)", n, tc.tv2)
			}
			co, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.ConsumeTopics(topic),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer co.Close()
			var got []string
			rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
			defer rcancel()
			for len(got) < len(committed) && rctx.Err() == nil {
				co.PollFetches(rctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			// Nothing aborted shows up behind the committed ones.
			more := co.PollRecords(timeoutCtx(2*time.Second), 100)
			more.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			slices.Sort(got)
			slices.Sort(committed)
			if !slices.Equal(got, committed) {
				t.Fatalf("read_committed read %d records, want the %d committed: %v", len(got), len(committed), got)
			}
		})
	}
}

func timeoutCtx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return ctx
}
