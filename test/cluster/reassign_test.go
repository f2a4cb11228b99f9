package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/test/harness"
)

// ackingProducer writes numbered records to topic's partition 0 with an
// idempotent acks=all producer until stop, recording each acknowledged
// offset.
type ackingProducer struct {
	mu    sync.Mutex
	acked map[int64]string
	errs  []error
	stop  chan struct{}
	done  chan struct{}
}

func startAckingProducer(t *testing.T, nodes []*harness.Node, topic string) *ackingProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p := &ackingProducer{acked: map[int64]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer cl.Close()
		for i := 0; i < 100000; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := fmt.Sprintf("m%06d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 0})
			cancel()
			p.mu.Lock()
			if err := res.FirstErr(); err != nil {
				p.errs = append(p.errs, err)
			} else {
				p.acked[res[0].Record.Offset] = v
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *ackingProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops the producer and checks that every acknowledged record is
// in the partition exactly once, at its acknowledged offset.
func (p *ackingProducer) finish(t *testing.T, nodes []*harness.Node, topic string) {
	t.Helper()
	close(p.stop)
	<-p.done
	if len(p.errs) > 0 {
		t.Fatalf("%d produce errors, the first: %v", len(p.errs), p.errs[0])
	}
	end := int64(0)
	for off := range p.acked {
		end = max(end, off+1)
	}
	got := readValues(t, nodes, topic, int(end))
	seen := map[string]int64{}
	for off, v := range got {
		if first, dup := seen[v]; dup {
			t.Fatalf("%s stored twice, at %d and %d", v, first, off)
		}
		seen[v] = int64(off)
	}
	for off, v := range p.acked {
		if int(off) >= len(got) || got[off] != v {
			t.Fatalf("acknowledged %s at offset %d; read back %d records", v, off, len(got))
		}
	}
	t.Logf("%d records acknowledged during the move, all kept once at their offsets", len(p.acked))
}

// replicasOf is partition 0's assigned replicas and ISR in Metadata.
func replicasOf(t testing.TB, nodes []*harness.Node, topic string) (replicas, isr []int32) {
	t.Helper()
	md, err := metadataFrom(t, nodes, topic)
	if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) == 0 {
		return nil, nil
	}
	p := md.Topics[topic].Partitions[0]
	return p.Replicas, p.ISR
}

// Four brokers; a topic of replication factor 2 is moved to the two
// brokers that do not hold it, under continuous acks=all produce: once
// through /admin/reassign_partitions (Kafka 0.8's way), once through
// AlterPartitionReassignments (franz-go's kadm). The new replicas catch
// up and join the ISR before anything is dropped, the leader moves to
// them, the old replicas' files go, and no acknowledged record is lost,
// duplicated or moved.
func TestReassignmentMovesAPartitionUnderLoad(t *testing.T) {
	nodes := startCluster(t, 4)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zk := zkOf(t, nodes[0])

	vias := []string{"znode", "kadm", "cli", "http"}
	// Created up front: a new topic's LeaderAndIsr racing an earlier move's
	// replica deletion on the same broker was once seen not to take under
	// CI load (see docs/replication.md, known gaps).
	for _, via := range vias {
		if _, err := adm.CreateTopic(ctx, 1, 2, nil, "move-"+via); err != nil {
			t.Fatal(err)
		}
	}
	for _, via := range vias {
		topic := "move-" + via
		var from []int32
		harness.WaitFor(t, "both replicas are in sync", 30*time.Second, func() bool {
			r, isr := replicasOf(t, nodes, topic)
			from = r
			return len(r) == 2 && len(isr) == 2
		})
		var to []int32
		for id := int32(1); id <= 4; id++ {
			if !slices.Contains(from, id) {
				to = append(to, id)
			}
		}
		producer := startAckingProducer(t, nodes, topic)
		harness.WaitFor(t, "records acknowledged before the move", 30*time.Second, func() bool { return producer.ackedCount() >= 200 })
		switch via {
		case "znode":
			if err := zk.CreateReassignment([]zookeeper.Reassignment{{TopicPartition: zookeeper.TopicPartition{Topic: topic, Partition: 0}, Replicas: to}}); err != nil {
				t.Fatal(err)
			}
		case "kadm":
			req := kadm.AlterPartitionAssignmentsReq{}
			req.Assign(topic, 0, to)
			res, err := adm.AlterPartitionAssignments(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if r := res[topic][0]; r.Err != nil {
				t.Fatalf("AlterPartitionAssignments: %v %s", r.Err, r.ErrMessage)
			}
		case "http":
			var plan struct {
				Plan struct {
					Proposed []struct {
						Replicas []int32 `json:"replicas"`
					} `json:"proposed"`
				} `json:"plan"`
			}
			postJSON(t, nodes[2].URL+"/admin/reassignments", fmt.Sprintf(`{"topics":[%q],"brokers":[%d,%d]}`, topic, to[0], to[1]), &plan)
			if len(plan.Plan.Proposed) != 1 || !sameSet(plan.Plan.Proposed[0].Replicas, to) {
				t.Fatalf("HTTP plan %+v, want replicas %v", plan, to)
			}
			var started struct {
				Results []struct {
					ErrorCode int16  `json:"error_code"`
					Message   string `json:"message"`
				} `json:"results"`
			}
			postJSON(t, nodes[3].URL+"/admin/reassignments",
				fmt.Sprintf(`{"partitions":[{"topic":%q,"partition":0,"replicas":[%d,%d]}]}`, topic, to[0], to[1]), &started)
			if len(started.Results) != 1 || started.Results[0].ErrorCode != 0 {
				t.Fatalf("HTTP start: %+v", started)
			}
		case "cli":
			// --generate proposes a placement on the target brokers; the
			// test moves to exactly `to` so the outcome is known.
			dir := t.TempDir()
			topicsFile := filepath.Join(dir, "topics.json")
			os.WriteFile(topicsFile, []byte(`{"topics":[{"topic":"`+topic+`"}],"version":1}`), 0o644)
			out, err := exec.Command(harness.Binary(t), "reassign", "--bootstrap", nodes[0].KafkaAddr, "--generate",
				"--topics-to-move-json-file", topicsFile, "--broker-list", fmt.Sprintf("%d,%d", to[0], to[1])).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Proposed partition reassignment configuration") {
				t.Fatalf("ferry reassign --generate: %v\n%s", err, out)
			}
			var proposed struct {
				Partitions []struct {
					Replicas []int32 `json:"replicas"`
				} `json:"partitions"`
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &proposed); err != nil || len(proposed.Partitions) != 1 ||
				!sameSet(proposed.Partitions[0].Replicas, to) {
				t.Fatalf("proposed %s (%v), want replicas %v", lines[len(lines)-1], err, to)
			}
			planFile := filepath.Join(dir, "plan.json")
			os.WriteFile(planFile, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d,%d]}]}`, topic, to[0], to[1])), 0o644)
			out, err = exec.Command(harness.Binary(t), "reassign", "--bootstrap", nodes[1].KafkaAddr, "--execute",
				"--reassignment-json-file", planFile, "--wait", "25s").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Successfully started partition reassignments for "+topic+"-0") ||
				!strings.Contains(string(out), "Reassignment of partition "+topic+"-0 is completed.") {
				t.Fatalf("ferry reassign --execute --wait: %v\n%s", err, out)
			}
		}
		harness.WaitFor(t, fmt.Sprintf("%s moves from %v to %v", topic, from, to), 60*time.Second, func() bool {
			r, isr := replicasOf(t, nodes, topic)
			leader, _ := partitionState(t, nodes, topic)
			return slices.Equal(r, to) && len(isr) == 2 && slices.Contains(to, leader)
		})
		moved := producer.ackedCount()
		harness.WaitFor(t, "acks from the new leader", 30*time.Second, func() bool { return producer.ackedCount() >= moved+20 })
		producer.finish(t, nodes, topic)
		for _, id := range from {
			harness.WaitFor(t, fmt.Sprintf("broker %d deletes its old replica", id), 30*time.Second, func() bool {
				return len(partitionDirs(t, nodes[id-1], topic)) == 0
			})
		}
		var listed struct {
			Reassignments []json.RawMessage `json:"reassignments"`
		}
		getJSON(t, nodes[0].URL+"/admin/reassignments", &listed)
		if listed.Reassignments == nil || len(listed.Reassignments) != 0 {
			t.Fatalf("GET /admin/reassignments after the move: %s", listed.Reassignments)
		}
		moving, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(moving) != 0 {
			t.Fatalf("reassignments still listed after the move: %v", moving)
		}
		if rs, err := zk.Reassignments(); err != nil || len(rs) != 0 {
			t.Fatalf("/admin/reassign_partitions after the move: %v %v", rs, err)
		}
	}
}

func postJSON(t *testing.T, url, body string, v any) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, res.StatusCode, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("POST %s: %v: %s", url, err, data)
	}
}

// Changing the replication factor is a reassignment: 2 → 3 adds a replica
// that copies the log and joins the ISR; 3 → 1 drops two, deleting their
// files; every acknowledged record stays in place.
func TestReplicationFactorChangeIsAReassignment(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "rf"); err != nil {
		t.Fatal(err)
	}
	var from []int32
	harness.WaitFor(t, "both replicas are in sync", 30*time.Second, func() bool {
		r, isr := replicasOf(t, nodes, "rf")
		from = r
		return len(r) == 2 && len(isr) == 2
	})
	producer := startAckingProducer(t, nodes, "rf")
	harness.WaitFor(t, "records acknowledged", 30*time.Second, func() bool { return producer.ackedCount() >= 200 })
	var third int32
	for id := int32(1); id <= 3; id++ {
		if !slices.Contains(from, id) {
			third = id
		}
	}
	for _, target := range [][]int32{append(slices.Clone(from), third), {third}} {
		req := kadm.AlterPartitionAssignmentsReq{}
		req.Assign("rf", 0, target)
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil || res.Error() != nil {
			t.Fatalf("reassign to %v: %v %v", target, err, res.Error())
		}
		harness.WaitFor(t, fmt.Sprintf("the replicas become %v, all in sync", target), 60*time.Second, func() bool {
			r, isr := replicasOf(t, nodes, "rf")
			return slices.Equal(r, target) && sameSet(isr, target)
		})
	}
	producer.finish(t, nodes, "rf")
	for _, id := range from {
		harness.WaitFor(t, fmt.Sprintf("broker %d deletes its dropped replica", id), 30*time.Second, func() bool {
			return len(partitionDirs(t, nodes[id-1], "rf")) == 0
		})
	}
	// `ferry brokers list` (Metadata and DescribeLogDirs): the one replica,
	// its leadership and its bytes are on the third broker now.
	out, err := exec.Command(harness.Binary(t), "brokers", "list", "--bootstrap", nodes[0].KafkaAddr).CombinedOutput()
	if err != nil {
		t.Fatalf("ferry brokers list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		var id, replicas, leaders int32
		var addr, rack, rest string
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("brokers list line %q", line)
		}
		fmt.Sscan(f[0], &id)
		addr, rack, rest = f[1], f[2], strings.Join(f[3:], " ")
		fmt.Sscan(f[len(f)-3], &replicas)
		fmt.Sscan(f[len(f)-2], &leaders)
		bytes := f[len(f)-1]
		want := int32(0)
		if id == third {
			want = 1
		}
		if replicas != want || leaders != want || (id == third && (bytes == "-" || bytes == "0")) {
			t.Fatalf("broker %d (%s %s %s): replicas %d leaders %d bytes %s, want %d\n%s", id, addr, rack, rest, replicas, leaders, bytes, want, out)
		}
	}
}

// `ferry brokers decommission N` moves every replica off broker N (each to
// the least loaded other broker) and waits for the moves: N then holds
// nothing, and a producer writing meanwhile loses nothing.
func TestDecommissionDrainsABroker(t *testing.T) {
	nodes := startCluster(t, 4)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 2, nil, "drain"); err != nil {
		t.Fatal(err)
	}
	var drained int32
	harness.WaitFor(t, "every replica in sync", 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes, "drain")
		if err != nil || len(md.Topics["drain"].Partitions) != 4 {
			return false
		}
		for _, p := range md.Topics["drain"].Partitions {
			if len(p.ISR) != 2 {
				return false
			}
		}
		drained = md.Topics["drain"].Partitions[0].Leader // the producer's partition moves too
		return true
	})
	producer := startAckingProducer(t, nodes, "drain")
	harness.WaitFor(t, "records acknowledged", 30*time.Second, func() bool { return producer.ackedCount() >= 200 })
	out, err := exec.Command(harness.Binary(t), "brokers", "decommission", fmt.Sprint(drained),
		"--bootstrap", nodes[(drained%4)].KafkaAddr, "--wait", "25s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is completed.") {
		t.Fatalf("ferry brokers decommission %d: %v\n%s", drained, err, out)
	}
	producer.finish(t, nodes, "drain")
	md, err := metadataFrom(t, nodes, "drain")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics["drain"].Partitions {
		if slices.Contains(p.Replicas, drained) || len(p.Replicas) != 2 {
			t.Fatalf("drain-%d still on broker %d or lost a replica: %v", p.Partition, drained, p.Replicas)
		}
	}
	harness.WaitFor(t, "the drained broker holds no replica", 30*time.Second, func() bool {
		return len(partitionDirs(t, nodes[drained-1], "drain")) == 0
	})
}
