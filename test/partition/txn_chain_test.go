package partition_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/jepsen"
)

// Exactly-once under the partition nemeses, as Kafka Streams and Flink
// use it: three franz-go GroupTransactSession workers in one group copy
// an input topic to an output topic, each poll's offsets committed in the
// transaction of its copy (TxnOffsetCommit, read_committed,
// RequireStableFetchOffsets), while input keeps arriving and a nemesis is
// held and healed. Afterwards the read_committed output must hold every
// input exactly once: an offset committed without its output loses an
// input, an output committed without its offset duplicates one.
// `make test` runs the split-brain nemesis; FERRY_LONG=1 runs every one.
func TestTxnChainPartitionNemeses(t *testing.T) {
	nemeses, hold := []nemesis{splitBrain}, 15*time.Second
	if os.Getenv("FERRY_LONG") != "" {
		nemeses = []nemesis{splitBrain, followerIsolated, leaderFromZK, controllerFromZK, oneVsRest, twoVsOne, zkWithMinority, flapping}
		hold = 20 * time.Second
	}
	for _, n := range nemeses {
		if n.hold == 0 {
			n.hold = hold
		}
		t.Run(n.name, func(t *testing.T) { runChainNemesis(t, n) })
	}
}

func runChainNemesis(t *testing.T, n nemesis) {
	// The output is the topic the nemeses aim at (the leader of its
	// partition 0).
	const (
		in, out = "chain-in", topic
		group   = "chain"
		// 20 inputs every 100 ms: 30 s of input, spanning the fault.
		total = 6000
	)
	c := startCluster(t, "--transaction-state-log-num-partitions", "3",
		"--transaction-abort-timed-out-transaction-cleanup-interval-ms", "1000")
	c.createTopic(in, partitions)
	c.createTopic(out, partitions)

	var committed, aborted, reopened atomic.Int64
	ctx, stopWorkers := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for i := range c.nodes {
		name := fmt.Sprintf("chain-w%d", i+1)
		// A transaction timeout under the nemeses' 15–30 s holds, so a
		// worker cut off mid-transaction is aborted by its coordinator.
		opts := append([]kgo.Opt{kgo.TransactionTimeout(10 * time.Second), kgo.MetadataMinAge(250 * time.Millisecond)},
			clientDebugLog(t, "chain-"+n.name+"-"+name)...)
		open := func() (*kgo.GroupTransactSession, error) {
			return jepsen.CopySession(c.seeds(), name, group, in, out, opts...)
		}
		workers.Go(func() {
			jepsen.Copy(ctx, open, func(o jepsen.CopyOutcome) {
				switch {
				case o.Committed:
					committed.Add(o.Copied)
				case o.Begun:
					aborted.Add(1)
				}
				if o.Reopened {
					reopened.Add(1)
					t.Logf("%s: %v; a new session goes on", name, o.Err)
				}
			})
		})
	}
	t.Cleanup(func() { stopWorkers(); workers.Wait() })

	produced := make(chan error, 1)
	go func() { produced <- jepsen.ProducePaced(c.seeds(), in, total, 20, 100*time.Millisecond) }()
	harness.WaitFor(t, "the chain copies", 90*time.Second, func() bool { return committed.Load() >= 200 })

	began := time.Now()
	what := holdNemesis(t, c, n)
	c.waitFullISR(in, partitions, isrBound)
	c.waitFullISR(out, partitions, isrBound)
	t.Logf("%s; held %v; %d records committed through the chain by the heal", what, n.hold, committed.Load())
	if err := <-produced; err != nil {
		t.Fatalf("input producer: %v", err)
	}

	// Every input copied (the workers keep going until then), then the
	// workers stop and every transaction ends before the final read.
	var got map[string]int
	if !harness.Poll(3*time.Minute, func() bool {
		got = readOutput(t, c, out)
		return len(got) >= total
	}) {
		t.Fatalf("%s: %d of %d inputs in the read_committed output after 3m; %d records in committed transactions, %d aborted\n%s",
			n.name, len(got), total, committed.Load(), aborted.Load(), chainState(c, group, in, out))
	}
	stopWorkers()
	workers.Wait()
	waitNoOpenTransactions(t, c)
	got = readOutput(t, c, out)

	var missing, dups []string
	for i := range total {
		if got[strconv.Itoa(i)] == 0 {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	for v, count := range got {
		if count > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", v, count))
		}
	}
	if len(missing) > 0 || len(dups) > 0 || len(got) != total {
		t.Fatalf("%s: read_committed output: %d distinct of %d; missing %d (first %v); duplicated %d (first %v)\nstate: %s",
			n.name, len(got), total, len(missing), missing[:min(10, len(missing))], len(dups), dups[:min(10, len(dups))],
			c.describe(out, partitions))
	}
	t.Logf("%s: %d inputs each exactly once in the output; %d records in committed transactions, %d transactions aborted, %d sessions replaced; %v",
		n.name, total, committed.Load(), aborted.Load(), reopened.Load(), time.Since(began).Round(time.Second))
}

// readOutput is every value of the output topic below its last stable
// offset, read at read_committed, with how often each appears.
func readOutput(t *testing.T, c *cluster, topic string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs, err := jepsen.ReadCommitted(ctx, c.seeds(), topic, partitions, 5*time.Second)
	if err != nil {
		t.Fatalf("read_committed read of %s: %v", topic, err)
	}
	got := map[string]int{}
	for _, r := range recs {
		got[r.Value]++
	}
	return got
}

// chainState is what a stalled chain is stuck on: each partition's end
// offsets at both isolation levels, the group's committed offsets, and
// the transactions not yet ended.
func chainState(c *cluster, group string, topics ...string) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	ends, err := adm.ListEndOffsets(ctx, topics...)
	fmt.Fprintf(&b, "end offsets (read_uncommitted): %v %v\n", ends, err)
	committed, err := adm.ListCommittedOffsets(ctx, topics...)
	fmt.Fprintf(&b, "end offsets (read_committed): %v %v\n", committed, err)
	offsets, err := adm.FetchOffsets(ctx, group)
	fmt.Fprintf(&b, "group %s offsets: %v %v\n", group, offsets, err)
	// What the workers' OffsetFetch (RequireStable, KIP-447) is answered:
	// UNSTABLE_OFFSET_COMMIT while a transaction's offsets wait for their
	// marker.
	stable := kmsg.NewPtrOffsetFetchRequest()
	stable.Group, stable.RequireStable = group, true // v0–v7
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	stable.Groups = append(stable.Groups, g) // v8+
	if resp, err := stable.RequestWith(ctx, cl); err != nil {
		fmt.Fprintf(&b, "stable offset fetch: %v\n", err)
	} else {
		fmt.Fprintf(&b, "stable offset fetch: error %d;", resp.ErrorCode)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, " %s-%d: %d (error %d)", t.Topic, p.Partition, p.Offset, p.ErrorCode)
			}
		}
		for _, rg := range resp.Groups {
			fmt.Fprintf(&b, " group error %d:", rg.ErrorCode)
			for _, t := range rg.Topics {
				for _, p := range t.Partitions {
					fmt.Fprintf(&b, " %s-%d: %d (error %d)", t.Topic, p.Partition, p.Offset, p.ErrorCode)
				}
			}
		}
		b.WriteString("\n")
	}
	ls, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
	fmt.Fprintf(&b, "transactions not ended: %v %v\n", ls, err)
	if len(ls) > 0 {
		ds, err := adm.DescribeTransactions(ctx, ls.TransactionalIDs()...)
		fmt.Fprintf(&b, "described: %+v %v\n", ds, err)
	}
	for _, t := range topics {
		b.WriteString(c.describe(t, partitions) + "\n")
	}
	return b.String()
}
