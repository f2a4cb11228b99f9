package cluster_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// clusterAdmin is an admin client of the cluster, closed with the test.
func clusterAdmin(tb testing.TB, nodes []*harness.Node) *kadm.Client {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createOn creates a one-partition topic whose replicas are exactly
// replicas, and waits until they are all in sync.
func createOn(t testing.TB, nodes []*harness.Node, topic string, replicas ...int32) {
	t.Helper()
	cl, br := brokerClient(t, nodes[0])
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), br)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s on %v: %v %+v", topic, replicas, err, resp)
	}
	harness.WaitFor(t, topic+" has all its replicas in sync", 30*time.Second, func() bool {
		r, isr := replicasOf(t, nodes, topic)
		return slices.Equal(r, replicas) && sameSet(isr, replicas)
	})
}

// fill writes about size bytes of incompressible 16 KiB records to
// topic's partition 0.
func fill(t testing.TB, nodes []*harness.Node, topic string, size int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const recordSize = 16 << 10
	for i := 0; i < size/recordSize; i++ {
		v := make([]byte, recordSize)
		rand.Read(v)
		cl.Produce(ctx, &kgo.Record{Value: v, Partition: 0}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("fill %s: %v", topic, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// logSize is a broker's partition 0 of topic in bytes (DescribeLogDirs),
// -1 when it holds none.
func logSize(ctx context.Context, adm *kadm.Client, broker int32, topic string) int64 {
	dirs, err := adm.DescribeBrokerLogDirs(ctx, broker, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return -1
	}
	size := int64(-1)
	dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
		if p.Topic == topic && p.Partition == 0 {
			size = max(size, 0) + p.Size
		}
	})
	return size
}

func writePlan(t testing.TB, topic string, replicas ...int32) string {
	t.Helper()
	ids := make([]string, len(replicas))
	for i, id := range replicas {
		ids[i] = fmt.Sprint(id)
	}
	f := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(f, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%s]}]}`,
		topic, strings.Join(ids, ","))), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func ferryCLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(harness.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ferry %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A move started with `ferry reassign --execute --throttle B` copies at
// B bytes/s: the new replica's size, sampled while it copies, grows at
// the throttle (within 20%); GET /admin/reassignments shows the progress
// and the throttle meanwhile; `--verify` once done removes the throttle
// from the brokers and the topic.
func TestThrottledReassignmentCopiesAtTheSetRate(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := clusterAdmin(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const size, rate = 24 << 20, 2 << 20
	createOn(t, nodes, "throttled", 1)
	fill(t, nodes, "throttled", size)
	full := logSize(ctx, adm, 1, "throttled")
	if full < size {
		t.Fatalf("broker 1 holds %d bytes of throttled, want >= %d", full, size)
	}
	plan := writePlan(t, "throttled", 2)
	out := ferryCLI(t, "reassign", "--bootstrap", nodes[0].KafkaAddr, "--execute", "--reassignment-json-file", plan,
		"--throttle", fmt.Sprint(rate))
	if !strings.Contains(out, fmt.Sprintf("throttle limit was set to %d B/s", rate)) {
		t.Fatalf("--execute --throttle printed:\n%s", out)
	}
	for _, id := range []int32{1, 2} {
		rc, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		set := 0
		for _, c := range rc[0].Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.rate") && deref(c.Value) == fmt.Sprint(rate) &&
				c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				set++
			}
		}
		if set != 2 {
			t.Fatalf("broker %d describes %d of its 2 throttle rates as set to %d: %+v", id, set, rate, rc[0].Configs)
		}
	}
	type sample struct {
		at   time.Time
		size int64
	}
	var samples []sample
	var progressSeen bool
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		s := logSize(ctx, adm, 2, "throttled")
		now := time.Now()
		if s >= 0 {
			samples = append(samples, sample{now, s})
		}
		if s >= full {
			break
		}
		if !progressSeen && s > full/10 {
			var moving struct {
				Reassignments []struct {
					Progress *struct {
						Copied int64 `json:"bytes_copied"`
						ToCopy int64 `json:"bytes_to_copy"`
					} `json:"progress"`
				} `json:"reassignments"`
				Throttle int64 `json:"throttle_bytes_per_sec"`
			}
			getJSON(t, nodes[1].URL+"/admin/reassignments", &moving)
			if len(moving.Reassignments) != 1 || moving.Reassignments[0].Progress == nil {
				t.Logf("GET /admin/reassignments at %d of %d bytes copied: %+v", s, full, moving)
			}
			if len(moving.Reassignments) == 1 && moving.Reassignments[0].Progress != nil {
				p := moving.Reassignments[0].Progress
				if p.ToCopy != full || p.Copied <= 0 || p.Copied >= full || moving.Throttle != rate {
					t.Fatalf("progress %+v throttle %d during the move; want 0 < copied < %d and %d", *p, moving.Throttle, full, rate)
				}
				progressSeen = true
				// --verify mid-way: in progress, with a bar per partition
				// and the total.
				out, err := exec.Command(harness.Binary(t), "reassign", "--bootstrap", nodes[2].KafkaAddr, "--verify",
					"--reassignment-json-file", plan).CombinedOutput()
				if err == nil || !strings.Contains(string(out), "Reassignment of partition throttled-0 is still in progress.") ||
					!regexp.MustCompile(`throttled-0 +\[#*\.+\] +\d+% [\d.]+ [KM]iB of 24\.0 MiB`).Match(out) ||
					!regexp.MustCompile(`total +\[#*\.+\]`).Match(out) {
					t.Fatalf("--verify mid-way (%v):\n%s", err, out)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !progressSeen {
		t.Fatal("GET /admin/reassignments never showed the move's progress")
	}
	// The rate between a quarter and three quarters of the copy: the
	// start (a second's worth saved up, the truncation) and the end are
	// left out.
	first := slices.IndexFunc(samples, func(s sample) bool { return s.size >= full/4 })
	last := slices.IndexFunc(samples, func(s sample) bool { return s.size >= full*3/4 })
	if first < 0 || last <= first {
		t.Fatalf("the copy was not sampled between a quarter and three quarters: %v", samples)
	}
	a, b := samples[first], samples[last]
	measured := float64(b.size-a.size) / b.at.Sub(a.at).Seconds()
	t.Logf("copied %d bytes at %.0f B/s (throttle %d B/s) between %d and %d bytes", full, measured, rate, a.size, b.size)
	if measured < 0.8*rate || measured > 1.2*rate {
		t.Fatalf("copy rate %.0f B/s, want within 20%% of %d", measured, rate)
	}
	var verify string
	harness.WaitFor(t, "--verify reports the move completed", 60*time.Second, func() bool {
		out, _ := exec.Command(harness.Binary(t), "reassign", "--bootstrap", nodes[2].KafkaAddr, "--verify",
			"--reassignment-json-file", plan).CombinedOutput()
		verify = string(out)
		return strings.Contains(verify, "is completed.")
	})
	if !strings.Contains(verify, "Throttle was removed.") {
		t.Fatalf("--verify did not remove the throttle:\n%s", verify)
	}
	for id := int32(1); id <= 3; id++ {
		rc, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rc[0].Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.rate") && c.Source != kmsg.ConfigSourceDefaultConfig {
				t.Fatalf("broker %d keeps %s=%s after --verify", id, c.Key, deref(c.Value))
			}
		}
	}
	tc, err := adm.DescribeTopicConfigs(ctx, "throttled")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tc[0].Configs {
		if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && deref(c.Value) != "" {
			t.Fatalf("topic keeps %s=%s after --verify", c.Key, deref(c.Value))
		}
	}
}

// startThrottledMove fills topic (on replicas from) with size bytes, then
// starts moving it to `to` under a throttle of rate bytes/s with an
// acks=all producer writing throughout, and waits until broker watch
// holds a tenth of the data: the move is under way.
func startThrottledMove(t *testing.T, nodes []*harness.Node, adm *kadm.Client, topic string, size, rate int, watch int32, from, to []int32) (*ackingProducer, string) {
	t.Helper()
	createOn(t, nodes, topic, from...)
	fill(t, nodes, topic, size)
	producer := startAckingProducer(t, nodes, topic)
	harness.WaitFor(t, "records acknowledged before the move", 30*time.Second, func() bool { return producer.ackedCount() >= 100 })
	plan := writePlan(t, topic, to...)
	ferryCLI(t, "reassign", "--bootstrap", nodes[0].KafkaAddr, "--execute", "--reassignment-json-file", plan, "--throttle", fmt.Sprint(rate))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	harness.WaitFor(t, fmt.Sprintf("broker %d copies a tenth of %s", watch, topic), 60*time.Second, func() bool {
		return logSize(ctx, adm, watch, topic) > int64(size/10)
	})
	if moving, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}}); err != nil || len(moving[topic]) != 1 {
		t.Fatalf("%s is not listed as moving a tenth of the way: %v %v", topic, moving, err)
	}
	return producer, plan
}

// A throttled move cancelled half-way (`ferry reassign --cancel`) returns
// the partition to its original replicas, in sync; the replica it was
// adding is deleted, and no acknowledged record is lost.
func TestCancelledMoveReturnsToTheOriginalReplicas(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := clusterAdmin(t, nodes)
	producer, plan := startThrottledMove(t, nodes, adm, "cancelled", 12<<20, 1<<20, 3, []int32{1, 2}, []int32{3, 1})
	// Partitions are not added to a topic being moved (Kafka's rule).
	bcl, br := brokerClient(t, nodes[1])
	if r := createPartitionsAt(t, br, "cancelled", 2); r.ErrorCode != kerr.ReassignmentInProgress.Code {
		t.Fatalf("CreatePartitions during the move: code %d %v, want 60 REASSIGNMENT_IN_PROGRESS", r.ErrorCode, deref(r.ErrorMessage))
	}
	bcl.Close()
	out := ferryCLI(t, "reassign", "--bootstrap", nodes[1].KafkaAddr, "--cancel", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Successfully cancelled partition reassignments for cancelled-0") {
		t.Fatalf("--cancel printed:\n%s", out)
	}
	harness.WaitFor(t, "the partition is back on [1 2], both in sync", 30*time.Second, func() bool {
		r, isr := replicasOf(t, nodes, "cancelled")
		return slices.Equal(r, []int32{1, 2}) && sameSet(isr, []int32{1, 2})
	})
	harness.WaitFor(t, "broker 3 deletes the replica it was given", 30*time.Second, func() bool {
		return len(partitionDirs(t, nodes[2], "cancelled")) == 0
	})
	moved := producer.ackedCount()
	harness.WaitFor(t, "acks after the cancel", 30*time.Second, func() bool { return producer.ackedCount() >= moved+20 })
	producer.finish(t, nodes, "cancelled")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if moving, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"cancelled": {0: {}}}); err != nil || len(moving) != 0 {
		t.Fatalf("still listed as moving after the cancel: %v %v", moving, err)
	}
}

// The broker a throttled move copies to is killed (kill -9) half-way: the
// partition keeps its ISR and its producer, the move stays listed, and
// once the broker is back the move completes; nothing acknowledged is
// lost, and the replica dropped is deleted.
func TestMoveCompletesAfterItsTargetBrokerIsKilled(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := clusterAdmin(t, nodes)
	producer, plan := startThrottledMove(t, nodes, adm, "target-killed", 12<<20, 1<<20, 3, []int32{1, 2}, []int32{2, 3})
	nodes[2].Kill()
	before := producer.ackedCount()
	harness.WaitFor(t, "acks while the target broker is dead", 30*time.Second, func() bool { return producer.ackedCount() >= before+50 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if moving, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"target-killed": {0: {}}}); err != nil || len(moving["target-killed"]) != 1 {
		t.Fatalf("the move is not listed while its target is dead: %v %v", moving, err)
	}
	if r, isr := replicasOf(t, nodes, "target-killed"); !sameSet(isr, []int32{1, 2}) {
		t.Fatalf("replicas %v ISR %v while the target is dead; want the ISR [1 2]", r, isr)
	}
	nodes[2].Restart()
	var verify string
	harness.WaitFor(t, "--verify reports the move completed", 90*time.Second, func() bool {
		out, _ := exec.Command(harness.Binary(t), "reassign", "--bootstrap", nodes[0].KafkaAddr, "--verify",
			"--reassignment-json-file", plan).CombinedOutput()
		verify = string(out)
		return strings.Contains(verify, "is completed.")
	})
	harness.WaitFor(t, "the partition is on [2 3], both in sync", 30*time.Second, func() bool {
		r, isr := replicasOf(t, nodes, "target-killed")
		return slices.Equal(r, []int32{2, 3}) && sameSet(isr, []int32{2, 3})
	})
	producer.finish(t, nodes, "target-killed")
	harness.WaitFor(t, "broker 1 deletes its dropped replica", 30*time.Second, func() bool {
		return len(partitionDirs(t, nodes[0], "target-killed")) == 0
	})
}
