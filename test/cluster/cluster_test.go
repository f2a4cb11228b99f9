// Package cluster_test runs ferry brokers as real processes coordinated by
// a real ZooKeeper (test/zkserver), with real Kafka clients, on loopback.
package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

var zks zkserver.Shared

func TestMain(m *testing.M) {
	if os.Getenv(txnProducerCliEnv) != "" {
		os.Exit(runTxnProducerCli(os.Args[1:])) // librdkafka's test 0098 runs it
	}
	os.Exit(zks.Main(m))
}

// startCluster starts n brokers (ids 1..n) in parallel under their own
// chroot of the shared ZooKeeper.
func startCluster(t *testing.T, n int, extra ...string) []*harness.Node {
	t.Helper()
	return startClusterOn(t, zks.Require(t).Addr(), n, extra...)
}

// startClusterOn is startCluster on the ZooKeeper at zkAddr.
func startClusterOn(t *testing.T, zkAddr string, n int, extra ...string) []*harness.Node {
	t.Helper()
	return startClusterAt(t, freshChroot(t, zkAddr), n, extra...)
}

// freshChroot is a new chroot on the ZooKeeper at zkAddr: -count reruns a
// test against the same server.
func freshChroot(t *testing.T, zkAddr string) string {
	return zkAddr + "/" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// startClusterAt starts n brokers on the ZooKeeper connect string (with
// its chroot), in parallel.
func startClusterAt(t *testing.T, connect string, n int, extra ...string) []*harness.Node {
	t.Helper()
	nodes := make([]*harness.Node, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"--broker-id", strconv.Itoa(i + 1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", "6000"}, extra...)
			nodes[i] = harness.Start(t, args...)
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n == nil {
			t.FailNow() // a broker did not start; harness logged why
		}
	}
	waitControllerSeesAll(t, nodes)
	return nodes
}

// waitControllerSeesAll waits until the controller has described every
// node, at the address it listens on, to every node (GET /cluster's
// brokers). A node is ready once it serves HTTP, which can be before the
// controller heard of it: a node the harness restarted on new ports (its
// first ports were taken) came up last, and a CreateTopic of replication
// factor 3 sent at once was answered INVALID_REPLICATION_FACTOR. Counting
// brokers is not enough: the killed first attempt's registration, at its
// old address, counted until its ZooKeeper session expired (one local CI
// run). A node whose /cluster needs credentials (--security) is not asked.
func waitControllerSeesAll(t testing.TB, nodes []*harness.Node) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range nodes {
		want[n.KafkaAddr] = true
	}
	harness.WaitFor(t, "the controller describing every broker to every broker", 60*time.Second, func() bool {
		for _, n := range nodes {
			res, err := http.Get(n.URL + "/cluster")
			if err != nil {
				return false
			}
			var c clusterSummary
			err = json.NewDecoder(res.Body).Decode(&c)
			res.Body.Close()
			switch {
			case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
				continue
			case res.StatusCode != http.StatusOK || err != nil:
				return false
			}
			seen := 0
			for _, b := range c.Brokers {
				if want[net.JoinHostPort(b.Host, strconv.Itoa(b.Port))] {
					seen++
				}
			}
			if seen < len(want) {
				return false
			}
		}
		return true
	})
}

func seeds(nodes []*harness.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.KafkaAddr)
	}
	return out
}

// replicatedProducer creates topic (one partition, replication factor 3),
// waits for its leader, and returns an idempotent acks=all producer that
// retries through leader changes, with an admin client on it.
func replicatedProducer(t *testing.T, nodes []*harness.Node, topic string, extra ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60 * time.Second)}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	harness.WaitFor(t, "the topic has a leader", 30*time.Second, func() bool { return leaderOf(t, adm, topic) > 0 })
	return cl, adm
}

// scrape is a node's /metrics text ("" when it does not answer).
func scrape(n *harness.Node) string {
	res, err := http.Get(n.URL + "/metrics")
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return string(body)
}

// produceNumbered produces count records valued from, from+1, … one at a
// time (each acknowledged before the next is sent; the client retries
// through leader changes), failing the test on any error, and returns the
// next number.
func produceNumbered(t *testing.T, cl *kgo.Client, from, count int) int {
	t.Helper()
	for n := from; n < from+count; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(n))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
	}
	return from + count
}

// leaderOf is the broker id leading topic's partition 0 in the cluster's
// metadata, or -1.
func leaderOf(t testing.TB, adm *kadm.Client, topic string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 || td.Partitions[0].Err != nil {
		return -1
	}
	return td.Partitions[0].Leader
}

// Three brokers and ZooKeeper: a topic of replication factor 3 created on
// any broker gets leaders; an idempotent acks=all producer writes while the
// leader is killed (kill -9) again and again; after each kill the
// controller elects a new leader from the ISR, the producer goes on, and
// every acknowledged record is in the log exactly once, at its
// acknowledged offset.
func TestReplicatedProduceSurvivesLeaderKills(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, adm := replicatedProducer(t, nodes, "orders")
	acked := map[int64]string{}
	produce := func(from, count int) {
		for i := from; i < from+count; i++ {
			v := fmt.Sprintf("v%05d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)})
			cancel()
			if err := res.FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[res[0].Record.Offset] = v
		}
	}
	produce(0, 50)
	kills := 2
	if os.Getenv("FERRY_LONG") != "" {
		kills = 10
	}
	for k := 0; k < kills; k++ {
		leader := leaderOf(t, adm, "orders")
		node := nodes[leader-1]
		node.Kill()
		produce(50+k*50, 50) // the producer retries until a new leader answers
		node.Restart()
	}
	// Read everything back from the current leader.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[int64]string{}
	readCtx, readCancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer readCancel()
	for len(seen) < len(acked) && readCtx.Err() == nil {
		fs := consumer.PollFetches(readCtx)
		fs.EachRecord(func(r *kgo.Record) {
			if prev, dup := seen[r.Offset]; dup {
				t.Fatalf("offset %d read twice (%s, %s)", r.Offset, prev, r.Value)
			}
			seen[r.Offset] = string(r.Value)
		})
	}
	values := map[string]int64{}
	for off, v := range seen {
		if first, dup := values[v]; dup {
			t.Fatalf("%s stored twice, at %d and %d", v, first, off)
		}
		values[v] = off
	}
	for off, v := range acked {
		if seen[off] != v {
			t.Fatalf("acknowledged %s at offset %d; the log has %q there", v, off, seen[off])
		}
	}
}

// A rolling restart with controlled shutdown: each broker in turn is
// stopped with SIGTERM (it asks the controller to move its leaderships
// first) and started again, while an acks=all producer writes; no produce
// fails, and every acknowledged record is there.
func TestRollingRestartLosesNothing(t *testing.T) {
	nodes := startCluster(t, 3)
	harness.WaitFor(t, "exactly one broker reports ferry_controller_active 1", 30*time.Second, func() bool {
		active := 0
		for _, n := range nodes {
			if strings.Contains(scrape(n), "\nferry_controller_active 1\n") {
				active++
			}
		}
		return active == 1
	})
	cl, adm := replicatedProducer(t, nodes, "rolling")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every broker describes every partition, also those it holds no
	// replica of (replication factor 1 over three brokers).
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "spread"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for _, n := range nodes {
		one, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		oneAdm := kadm.NewClient(one)
		harness.WaitFor(t, "broker "+n.KafkaAddr+" describes the 3 partitions of spread", 30*time.Second, func() bool {
			md, err := oneAdm.Metadata(ctx, "spread")
			if err != nil || len(md.Topics["spread"].Partitions) != 3 {
				return false
			}
			for _, p := range md.Topics["spread"].Partitions {
				if p.Leader < 1 {
					return false
				}
			}
			return true
		})
		one.Close()
	}
	acked := 0
	produce := func(count int) { acked = produceNumbered(t, cl, acked, count) }
	produce(30)
	for _, n := range nodes {
		n.Stop() // SIGTERM: controlled shutdown
		if !strings.Contains(n.Logs(), "controlled shutdown: no partition led here any more") {
			t.Fatalf("broker stopped without a completed controlled shutdown:\n%s", n.Logs())
		}
		produce(30)
		n.Restart()
		produce(10)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	offs, err := adm.ListEndOffsets(ctx2, "rolling")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offs.Lookup("rolling", 0); end.Offset != int64(acked) {
		t.Fatalf("log end %d after %d acknowledged records (idempotent producer: no duplicates)", end.Offset, acked)
	}
}

// A leader frozen (SIGSTOP) past its ZooKeeper session timeout while an
// acks=all producer writes: the controller elects another ISR member, the
// producer goes on with it, and the old leader, thawed, believes it still
// leads but cannot acknowledge anything (its followers fetch elsewhere and
// its ISR write is fenced); it learns its new role and catches up. No
// acknowledged record is lost or doubled, and no two leaders accept
// writes: the log holds exactly the acknowledged records.
func TestFrozenLeaderIsReplacedWithoutSplitBrain(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, adm := replicatedProducer(t, nodes, "frozen")
	acked := 0
	produce := func(count int) { acked = produceNumbered(t, cl, acked, count) }
	produce(30)
	old := leaderOf(t, adm, "frozen")
	nodes[old-1].Freeze()
	produce(30) // answered once another broker leads (after the 6 s session timeout)
	harness.WaitFor(t, "a new leader", 30*time.Second, func() bool {
		l := leaderOf(t, adm, "frozen")
		return l > 0 && l != old
	})
	nodes[old-1].Thaw()
	produce(30)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, "frozen")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offs.Lookup("frozen", 0); end.Offset != int64(acked) {
		t.Fatalf("log end %d after %d acknowledged records", end.Offset, acked)
	}
	// The thawed broker rejoins as a follower and holds the same records.
	one, err := kgo.NewClient(kgo.SeedBrokers(nodes[old-1].KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	harness.WaitFor(t, "the thawed broker follows the new leader", 30*time.Second, func() bool {
		md, err := kadm.NewClient(one).Metadata(ctx, "frozen")
		if err != nil || len(md.Topics["frozen"].Partitions) != 1 {
			return false
		}
		p := md.Topics["frozen"].Partitions[0]
		return p.Leader != old && len(p.ISR) == 3
	})
}
