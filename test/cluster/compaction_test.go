package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestCompactedLogReplicates: a follower that was down while its leader
// compacted catches up by fetching across the leader's gaps, cleans its
// own log, and, once the only broker left, serves every key's last value
// in order as the leader did.
func TestCompactedLogReplicates(t *testing.T) {
	nodes := startCluster(t, 3, "--log-cleaner-backoff-ms=100")
	const topic = "compacted"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	configs := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"} {
		configs[k] = &v
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, configs, topic); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, topic, 3)
	leader := leaderOf(t, adm, topic)
	late := nodes[leader%3] // a follower: ids are 1..3
	late.Stop()
	waitISR(t, adm, topic, 2)

	latest := map[string]string{}
	for round := 0; round < 30; round++ {
		for k := 0; k < 10; k++ {
			key, value := fmt.Sprintf("key-%d", k), fmt.Sprintf("v-%d-%d", k, round)
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			latest[key] = value
		}
	}
	var before []*kgo.Record
	harness.WaitFor(t, "the leader to compact", 30*time.Second, func() bool {
		prev := before
		before = readPartition0(t, seeds(nodes), topic)
		return len(before) < 100 && len(before) == len(prev)
	})
	checkLatest(t, before, latest)

	late.Restart()
	waitISR(t, adm, topic, 3)
	lateID, _ := strconv.Atoi(late.Args[1])
	for _, n := range nodes {
		if n != late {
			n.Stop()
		}
	}
	one := kadm.NewClient(newClient(t, late.KafkaAddr))
	harness.WaitFor(t, "the caught-up follower to lead", 60*time.Second, func() bool {
		return leaderOf(t, one, topic) == int32(lateID)
	})
	var after []*kgo.Record
	harness.WaitFor(t, "the new leader to have compacted its copy", 30*time.Second, func() bool {
		after = readPartition0(t, []string{late.KafkaAddr}, topic)
		return len(after) < 100
	})
	checkLatest(t, after, latest)
	t.Logf("leader kept %d records, the follower that caught up across its gaps %d", len(before), len(after))
}

func newClient(t *testing.T, addr string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitISR waits until topic's partition 0 has n in-sync replicas.
func waitISR(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	harness.WaitFor(t, fmt.Sprintf("%d in-sync replicas", n), 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil || len(md.Topics[topic].Partitions) != 1 {
			return false
		}
		p := md.Topics[topic].Partitions[0]
		return p.Leader > 0 && len(p.ISR) == n
	})
}

// createFullISRTopic creates topic, one partition on three replicas, and
// waits until all three are in sync.
func createFullISRTopic(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, topic, 3)
}

// readPartition0 reads partition 0 from its start to its end offset.
func readPartition0(t *testing.T, seedAddrs []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil
	}
	end, _ := ends.Lookup(topic, 0)
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s to %d: %d records", topic, end.Offset, len(out))
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// checkLatest: offsets increase and every key's last value is there.
func checkLatest(t *testing.T, recs []*kgo.Record, latest map[string]string) {
	t.Helper()
	seen := map[string]string{}
	for i, r := range recs {
		if i > 0 && r.Offset <= recs[i-1].Offset {
			t.Fatalf("offset %d after %d", r.Offset, recs[i-1].Offset)
		}
		seen[string(r.Key)] = string(r.Value)
	}
	for k, v := range latest {
		if seen[k] != v {
			t.Fatalf("key %s: last value %q, want %q", k, seen[k], v)
		}
	}
}
