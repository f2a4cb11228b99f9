package partition_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

	var committed, aborted atomic.Int64
	ctx, stopWorkers := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for i := range c.nodes {
		name := fmt.Sprintf("chain-w%d", i+1)
		// A transaction timeout under the nemeses' 15–30 s holds, so a
		// worker cut off mid-transaction is aborted by its coordinator.
		s, err := jepsen.CopySession(c.seeds(), name, group, in, out,
			kgo.TransactionTimeout(10*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		workers.Go(func() {
			defer s.Close()
			jepsen.Copy(ctx, s, func(o jepsen.CopyOutcome) {
				switch {
				case o.Committed:
					committed.Add(o.Copied)
				case o.Begun:
					aborted.Add(1)
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
	harness.WaitFor(t, "every input in the read_committed output", 3*time.Minute, func() bool {
		got = readOutput(t, c, out)
		return len(got) >= total
	})
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
	t.Logf("%s: %d inputs each exactly once in the output; %d records in committed transactions, %d transactions aborted; %v",
		n.name, total, committed.Load(), aborted.Load(), time.Since(began).Round(time.Second))
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
