package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// metadataFrom is the cluster's metadata as the live brokers answer it,
// through a client of its own (no cache from before a kill).
func metadataFrom(t testing.TB, nodes []*harness.Node, topics ...string) (kadm.Metadata, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return kadm.NewClient(cl).Metadata(ctx, topics...)
}

// partitionState is partition 0's leader and ISR of topic (-1, nil when
// the metadata has none).
func partitionState(t *testing.T, nodes []*harness.Node, topic string) (int32, []int32) {
	t.Helper()
	md, err := metadataFrom(t, nodes, topic)
	if err != nil {
		return -1, nil
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 || td.Partitions[0].Err != nil {
		return -1, nil
	}
	p := td.Partitions[0]
	return p.Leader, p.ISR
}

// The controller is killed (kill -9): another broker wins the election and
// does the controller's work — a topic created now gets leaders, the dead
// broker's leaderships move, and when it returns it is given its replicas
// back and rejoins every ISR.
func TestControllerKillHandsOverTheWork(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, _ := replicatedProducer(t, nodes, "before")
	next := produceNumbered(t, cl, 0, 20)
	md, err := metadataFrom(t, nodes)
	if err != nil {
		t.Fatal(err)
	}
	old := md.Controller
	if old < 1 || old > 3 {
		t.Fatalf("controller %d", old)
	}
	nodes[old-1].Kill()
	harness.WaitFor(t, "another broker is the controller", 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes)
		return err == nil && md.Controller > 0 && md.Controller != old
	})

	// The new controller assigns and elects for a topic created now.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 1, 2, nil, "after"); err != nil {
		t.Fatalf("create a topic without the old controller: %v", err)
	}
	harness.WaitFor(t, "the new topic has a leader", 30*time.Second, func() bool {
		leader, _ := partitionState(t, nodes, "after")
		return leader > 0
	})
	// The old topic's leadership left the dead broker; writes go on.
	next = produceNumbered(t, cl, next, 20)
	if leader, _ := partitionState(t, nodes, "before"); leader == old {
		t.Fatalf("the dead broker %d still leads", old)
	}

	nodes[old-1].Restart()
	harness.WaitFor(t, "the returning broker rejoins the ISR", 60*time.Second, func() bool {
		_, isr := partitionState(t, nodes, "before")
		return slices.Contains(isr, old)
	})
	produceNumbered(t, cl, next, 10)
}

// ZooKeeper stops (SIGTERM) for a few seconds: leaders that exist go on
// taking acks=all writes and serving fetches, as Kafka's do; when it is
// back the brokers' sessions resume and the controller works again.
func TestZooKeeperRestartDoesNotStopProduceAndFetch(t *testing.T) {
	zk := zkserver.Start(t)
	nodes := startClusterOn(t, zk.Addr(), 3)
	cl, _ := replicatedProducer(t, nodes, "steady")
	next := produceNumbered(t, cl, 0, 20)

	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	next = produceNumbered(t, cl, next, 50)
	consumed := consumeAll(t, nodes, "steady", next)
	if consumed != next {
		t.Fatalf("read %d records while ZooKeeper was down, want %d", consumed, next)
	}
	if err := zk.Restart(); err != nil {
		t.Fatal(err)
	}
	next = produceNumbered(t, cl, next, 20)
	// The controller acts again: a new topic gets its leader.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A long outage (a slow restart) expires the sessions: the brokers
	// register again, and a replication-factor-3 topic waits for all three.
	var createErr error
	harness.WaitFor(t, "a topic can be created after ZooKeeper's restart", 60*time.Second, func() bool {
		_, createErr = kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "later")
		return createErr == nil || errors.Is(createErr, kerr.TopicAlreadyExists)
	})
	harness.WaitFor(t, "the new topic has a leader", 30*time.Second, func() bool {
		leader, isr := partitionState(t, nodes, "later")
		return leader > 0 && len(isr) == 3
	})
	if got := consumeAll(t, nodes, "steady", next); got != next {
		t.Fatalf("read %d records after ZooKeeper's restart, want %d", got, next)
	}
}

// consumeAll is how many records of topic's partition 0 readValues reads.
func consumeAll(t *testing.T, nodes []*harness.Node, topic string, want int) int {
	t.Helper()
	return len(readValues(t, nodes, topic, want))
}

// sarama and kcat (librdkafka) produce with acks=all to a replicated topic
// through any broker and read every record back, each from its leader.
func TestSaramaAndKcatOnACluster(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	harness.RequireService(t, "kcat", err)
	nodes := startCluster(t, 3)
	const topic = "mixed"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "every partition has a leader", 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes, topic)
		if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if p.Leader < 1 || len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 20
	producer, err := sarama.NewSyncProducer(seeds(nodes)[2:], cfg) // one seed: it learns the rest
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := range 60 {
		v := fmt.Sprintf("sarama-%02d", i)
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(v), Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatalf("sarama produce %s: %v", v, err)
		}
		want[v] = true
	}
	producer.Close()

	var lines strings.Builder
	for i := range 60 {
		v := fmt.Sprintf("kcat-%02d", i)
		fmt.Fprintf(&lines, "%s:%s\n", v, v)
		want[v] = true
	}
	runKcat(t, kcat, lines.String(), "-P", "-b", nodes[0].KafkaAddr, "-t", topic, "-K", ":", "-X", "acks=all")

	// Every record, read with both clients.
	out := runKcat(t, kcat, "", "-C", "-b", nodes[1].KafkaAddr, "-t", topic, "-o", "beginning", "-e", "-f", "%s\n")
	gotKcat := strings.Fields(out)
	consumer, err := sarama.NewConsumer(seeds(nodes)[:1], cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	gotSarama := map[string]bool{}
	for p := int32(0); p < 3; p++ {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		hw := pc.HighWaterMarkOffset()
		for read := int64(0); read < hw; read++ {
			select {
			case m := <-pc.Messages():
				gotSarama[string(m.Value)] = true
				if m.Offset+1 >= hw {
					read = hw
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("sarama: partition %d stopped before its high watermark %d", p, hw)
			}
		}
		pc.Close()
	}
	if len(gotKcat) != len(want) || len(gotSarama) != len(want) {
		t.Fatalf("kcat read %d, sarama %d records; %d were produced", len(gotKcat), len(gotSarama), len(want))
	}
	for _, v := range gotKcat {
		if !want[v] || !gotSarama[v] {
			t.Fatalf("%s: produced %v, read by sarama %v", v, want[v], gotSarama[v])
		}
	}
}

func runKcat(t *testing.T, kcat, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// brokerClient is a client whose requests go to node itself.
func brokerClient(t testing.TB, node *harness.Node) (*kgo.Client, *kgo.Broker) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, cl.SeedBrokers()[0]
}

// setTopicConfig sends IncrementalAlterConfigs (SET) to one broker.
func setTopicConfig(t *testing.T, node *harness.Node, topic, key, value string) {
	t.Helper()
	_, br := brokerClient(t, node)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = key, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("set %s=%s on %s: error %d", key, value, topic, code)
	}
}

// topicConfigAt is a topic config's value as one broker describes it.
func topicConfigAt(t *testing.T, node *harness.Node, topic, key string) string {
	t.Helper()
	_, br := brokerClient(t, node)
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{key}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, br)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return ""
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// A topic config changed through one broker reaches every broker's
// replicas (/config/changes), and unclean.leader.election.enable turned on
// while a partition has no in-sync replica alive makes the controller
// elect the out-of-ISR replica that is back, as Kafka does; the old leader
// then returns with a divergent tail and truncates it.
func TestTopicConfigChangesReachEveryBrokerAndTheController(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, _ := replicatedProducer(t, nodes, "cfg")
	next := produceNumbered(t, cl, 0, 10)

	leader, _ := partitionState(t, nodes, "cfg")
	followers := []int32{}
	for id := int32(1); id <= 3; id++ {
		if id != leader {
			followers = append(followers, id)
		}
	}
	setTopicConfig(t, nodes[leader-1], "cfg", "retention.ms", "3600000")
	for _, f := range followers {
		harness.WaitFor(t, fmt.Sprintf("broker %d applies the new retention.ms", f), 10*time.Second, func() bool {
			return topicConfigAt(t, nodes[f-1], "cfg", "retention.ms") == "3600000"
		})
	}

	// Both followers die: the controller leaves the leader alone in the ISR.
	for _, f := range followers {
		nodes[f-1].Kill()
	}
	harness.WaitFor(t, "the ISR is the leader alone", 30*time.Second, func() bool {
		_, isr := partitionState(t, nodes, "cfg")
		return slices.Equal(isr, []int32{leader})
	})
	next = produceNumbered(t, cl, next, 5) // only the dead leader will hold these
	nodes[leader-1].Kill()
	back := followers[0]
	nodes[back-1].Restart()
	harness.WaitFor(t, "the returning broker is live", 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes)
		return err == nil && slices.Contains(md.Brokers.NodeIDs(), back)
	})
	if l, _ := partitionState(t, nodes, "cfg"); l != -1 {
		t.Fatalf("broker %d leads without unclean election; it was not in the ISR", l)
	}

	setTopicConfig(t, nodes[back-1], "cfg", "unclean.leader.election.enable", "true")
	harness.WaitFor(t, "the out-of-ISR replica is elected", 30*time.Second, func() bool {
		l, isr := partitionState(t, nodes, "cfg")
		return l == back && slices.Equal(isr, []int32{back})
	})
	lost := next - 5 // 10..14 were only on the old leader
	next = produceNumbered(t, cl, next, 5)

	// The old leader returns with a divergent tail (10..14 at the offsets
	// where the new leader holds 15..19, in an older epoch): it truncates
	// to the new leader's epoch boundary, copies, and rejoins the ISR.
	nodes[leader-1].Restart()
	harness.WaitFor(t, "the old leader rejoins the ISR", 60*time.Second, func() bool {
		_, isr := partitionState(t, nodes, "cfg")
		return slices.Contains(isr, leader)
	})
	nodes[back-1].Kill() // now only the old leader can lead: read its log
	harness.WaitFor(t, "the old leader leads again", 60*time.Second, func() bool {
		l, _ := partitionState(t, nodes, "cfg")
		return l == leader
	})
	got := readValues(t, nodes, "cfg", next-5)
	t.Logf("the old leader %d holds %v", leader, got)
	want := []string{}
	for n := range next {
		if n < lost || n >= lost+5 {
			want = append(want, fmt.Sprint(n))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the old leader's log after truncation: %v, want %v", got, want)
	}
}

// readValues reads want records of topic's partition 0 from the start
// (within 30 s) and returns their values in offset order.
func readValues(t *testing.T, nodes []*harness.Node, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(liveSeeds(nodes)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// A broker told to stop (SIGTERM) while ZooKeeper is gone still stops,
// cleanly, within the harness's stop bound: its controlled shutdown and
// its controller give up waiting for ZooKeeper.
func TestBrokerStopsWhileZooKeeperIsGone(t *testing.T) {
	zk := zkserver.Start(t)
	nodes := startClusterOn(t, zk.Addr(), 3)
	cl, _ := replicatedProducer(t, nodes, "gone")
	produceNumbered(t, cl, 0, 5)
	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		n.Stop() // fails the test on a timeout or a non-zero exit
	}
}
