package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestCompactedReplicasServeIdenticalReads: on four brokers, a compacted
// partition with three replicas is written and cleaned; each replica
// cleans its own log, and each, made the only live replica and so the
// leader, serves exactly the records the first leader served (offsets,
// keys, values). The partition is then reassigned onto the fourth broker,
// which copies the compacted log across its gaps: made the leader, it
// serves the same records too.
func TestCompactedReplicasServeIdenticalReads(t *testing.T) {
	nodes := startCluster(t, 4, "--log-cleaner-backoff-ms=100")
	const topic = "compacted-everywhere"
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	configs := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"} {
		configs[k] = &v
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, configs, topic); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, topic, 3)
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
	want := compactedRead(t, seeds(nodes), topic)
	checkLatest(t, want, latest)
	replicas, _ := replicasOf(t, nodes, topic)
	for _, id := range replicas {
		servesSame(t, nodes, replicas, id, topic, want)
	}

	outsider := int32(0)
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(replicas, id) {
			outsider = id
		}
	}
	to := []int32{outsider, replicas[0], replicas[1]}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, to)
	res, err := kadm.NewClient(adminOn(t, nodes)).AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("AlterPartitionAssignments: %v %s", r.Err, r.ErrMessage)
	}
	harness.WaitFor(t, "the move onto the fourth broker", 60*time.Second, func() bool {
		got, isr := replicasOf(t, nodes, topic)
		return sameSet(got, to) && len(isr) == 3
	})
	servesSame(t, nodes, to, outsider, topic, want)
	t.Logf("%d records survive compaction; replicas %v and the moved-to broker %d serve them alike", len(want), replicas, outsider)
}

// compactedRead reads the partition once its reads have held for a
// second (ten cleaner backoffs) and fewer than a third of the 300
// records written are left.
func compactedRead(t *testing.T, seedAddrs []string, topic string) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	var stableSince time.Time
	harness.WaitFor(t, "a compacted read that holds", 60*time.Second, func() bool {
		prev := recs
		recs = readPartition0(t, seedAddrs, topic)
		if !sameRecords(recs, prev) || stableSince.IsZero() {
			stableSince = time.Now()
		}
		return len(recs) < 100 && time.Since(stableSince) >= time.Second
	})
	return recs
}

// servesSame stops every replica but id, waits for id to lead, checks
// that its compacted read is want, and restarts the others.
func servesSame(t *testing.T, nodes []*harness.Node, replicas []int32, id int32, topic string, want []*kgo.Record) {
	t.Helper()
	var stopped []*harness.Node
	for _, r := range replicas {
		if r != id {
			nodes[r-1].Stop()
			stopped = append(stopped, nodes[r-1])
		}
	}
	one := kadm.NewClient(newClient(t, nodes[id-1].KafkaAddr))
	harness.WaitFor(t, fmt.Sprintf("broker %d to lead", id), 60*time.Second, func() bool {
		return leaderOf(t, one, topic) == id
	})
	got := compactedRead(t, []string{nodes[id-1].KafkaAddr}, topic)
	if !sameRecords(got, want) {
		t.Fatalf("broker %d serves %d records, the first leader %d:\n got %s\nwant %s", id, len(got), len(want), describe(got), describe(want))
	}
	for _, n := range stopped {
		n.Restart()
	}
	waitISR(t, one, topic, len(replicas))
}

func sameRecords(a, b []*kgo.Record) bool {
	return slices.EqualFunc(a, b, func(x, y *kgo.Record) bool {
		return x.Offset == y.Offset && string(x.Key) == string(y.Key) && string(x.Value) == string(y.Value)
	})
}

func describe(recs []*kgo.Record) string {
	var s string
	for _, r := range recs {
		s += fmt.Sprintf("%d:%s=%s ", r.Offset, r.Key, r.Value)
	}
	return s
}
