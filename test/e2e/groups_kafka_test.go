package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// groupLedger counts how often each record was handed to a group member.
type groupLedger struct {
	mu    sync.Mutex
	seen  map[string]int
	byWho map[string]int
}

func (l *groupLedger) add(who string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[fmt.Sprintf("%d:%d", r.Partition, r.Offset)]++
	l.byWho[who]++
}

func (l *groupLedger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// runMember consumes as a group member until ctx ends: each poll's records
// are committed before a rebalance may take their partitions
// (BlockRebalanceOnPoll), so a record is read twice only if the broker's
// group or offsets are wrong.
func runMember(ctx context.Context, t *testing.T, addr, group, topic, who string, l *groupLedger) (*kgo.Client, <-chan struct{}) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ClientID(who))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fetches := cl.PollRecords(ctx, 50)
			if fetches.IsClientClosed() {
				return
			}
			fetches.EachRecord(func(r *kgo.Record) { l.add(who, r) })
			if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
				t.Errorf("%s commit: %v", who, err)
			}
			cl.AllowRebalance()
		}
	}()
	return cl, done
}

func produceN(t *testing.T, addr, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestFranzGoGroupRebalanceNoSkipNoDup: three kgo members share a
// 6-partition topic; one leaves mid-way; the other two take over its
// partitions from its committed offsets. Every record is read exactly once
// and the committed offsets end at the high watermarks.
func TestFranzGoGroupRebalanceNoSkipNoDup(t *testing.T) {
	node := kafkaNode(t)
	adm, err := kgo.NewClient(kgo.SeedBrokers(node.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)
	ctx := context.Background()
	if _, err := admin.CreateTopic(ctx, 6, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	produceN(t, node.KafkaAddr, "events", 0, 600)

	ledger := &groupLedger{seen: map[string]int{}, byWho: map[string]int{}}
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	leaveCtx, stopLeaver := context.WithCancel(runCtx)
	var clients []*kgo.Client
	var dones []<-chan struct{}
	for i, c := range []context.Context{runCtx, runCtx, leaveCtx} {
		cl, done := runMember(c, t, node.KafkaAddr, "g3", "events", fmt.Sprintf("m%d", i), ledger)
		clients, dones = append(clients, cl), append(dones, done)
	}
	defer func() {
		stopAll()
		for i, cl := range clients {
			cl.Close()
			<-dones[i]
		}
	}()
	harness.WaitFor(t, "the group to consume 300 records", 60*time.Second, func() bool { return ledger.total() >= 300 })
	harness.WaitFor(t, "all three members to get records", 30*time.Second, func() bool {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		return len(ledger.byWho) == 3
	})
	// m2 leaves: stop its loop (its last poll is committed), then Close
	// sends LeaveGroup.
	stopLeaver()
	<-dones[2]
	clients[2].Close()
	produceN(t, node.KafkaAddr, "events", 600, 600)
	harness.WaitFor(t, "all 1200 records", 90*time.Second, func() bool { return ledger.total() >= 1200 })

	ends, err := admin.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "committed offsets at the end of every partition", 30*time.Second, func() bool {
		offs, err := admin.FetchOffsets(ctx, "g3")
		if err != nil {
			return false
		}
		ok := true
		ends.Each(func(e kadm.ListedOffset) {
			o, found := offs.Lookup("events", e.Partition)
			ok = ok && found && o.At == e.Offset
		})
		return ok
	})
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	var total int64
	ends.Each(func(e kadm.ListedOffset) {
		total += e.Offset
		for off := int64(0); off < e.Offset; off++ {
			if n := ledger.seen[fmt.Sprintf("%d:%d", e.Partition, off)]; n != 1 {
				t.Errorf("record %d:%d read %d times", e.Partition, off, n)
			}
		}
	})
	if total != 1200 {
		t.Fatalf("high watermarks sum to %d, want 1200", total)
	}
	t.Logf("records per member: %v", ledger.byWho)
	// DescribeGroups through the Kafka protocol sees the two survivors.
	described, err := admin.DescribeGroups(ctx, "g3")
	if err != nil {
		t.Fatal(err)
	}
	if g := described["g3"]; g.State != "Stable" || len(g.Members) != 2 {
		t.Fatalf("described: state %s, %d members", g.State, len(g.Members))
	}
}

// TestKcatGroupMember: kcat -G (librdkafka's balanced consumer) joins a
// group, reads every record once and commits; GET /groups/{group} shows
// the committed offsets at the high watermarks.
func TestKcatGroupMember(t *testing.T) {
	kcat := kcatPath(t)
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"kc","partitions":2}`, 201)
	var lines []string
	for i := 0; i < 20; i++ {
		lines = append(lines, fmt.Sprintf(`{"key":"k%d","value":{"id":%d}}`, i, i))
	}
	mustPost(t, node.URL+"/kafka/kc", "application/json", `{"records":[`+strings.Join(lines, ",")+`]}`, 200)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", node.KafkaAddr, "-G", "kcg", "-o", "beginning",
		"-c", "20", "-f", "%p:%o\n", "-X", "auto.commit.interval.ms=100", "kc")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		if seen[line] {
			t.Fatalf("kcat read %s twice", line)
		}
		seen[line] = true
	}
	if len(seen) != 20 {
		t.Fatalf("kcat read %d distinct records, want 20:\n%s", len(seen), out)
	}
	var d struct {
		Offsets []struct {
			Partition     int32 `json:"partition"`
			Committed     int64 `json:"committed_offset"`
			HighWatermark int64 `json:"high_watermark"`
		} `json:"offsets"`
	}
	harness.WaitFor(t, "kcat's commits", 20*time.Second, func() bool {
		status, data := restCall(t, "GET", node.URL+"/groups/kcg", "", "", "")
		if status != 200 || json.Unmarshal(data, &d) != nil || len(d.Offsets) != 2 {
			return false
		}
		for _, o := range d.Offsets {
			if o.Committed != o.HighWatermark {
				return false
			}
		}
		return true
	})
}

// TestRestAndFranzGoShareGroup: a REST Proxy consumer and a franz-go
// consumer in one group split the partitions (the coordinator runs the
// cooperative-sticky assignor for its own member): after the Kafka member
// joins, no record is read by both, none is missed.
func TestRestAndFranzGoShareGroup(t *testing.T) {
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"mixed","partitions":4}`, 201)
	produceN(t, node.KafkaAddr, "mixed", 0, 40)
	// The REST instance alone owns all four partitions and commits what it read.
	inst, _ := restConsume(t, node, "mix", "r", "mixed", 40)
	mustRest(t, 200, "POST", inst+"/offsets", "")

	ledger := &groupLedger{seen: map[string]int{}, byWho: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	cl, done := runMember(ctx, t, node.KafkaAddr, "mix", "mixed", "kgo", ledger)
	defer func() { cancel(); cl.Close(); <-done }()
	harness.WaitFor(t, "the group to give the Kafka member partitions", 60*time.Second, func() bool {
		status, data := restCall(t, "GET", inst+"/assignments", "", "", "")
		var a struct {
			Partitions []struct{} `json:"partitions"`
		}
		// Keep the REST member polling so it sees the rebalance.
		restCall(t, "GET", inst+"/records?timeout=100", "", "application/vnd.kafka.json.v2+json", "")
		return status == 200 && json.Unmarshal(data, &a) == nil && len(a.Partitions) == 2
	})
	produceN(t, node.KafkaAddr, "mixed", 40, 40)
	restSeen := map[string]int{}
	harness.WaitFor(t, "the 40 new records between the two members", 60*time.Second, func() bool {
		status, data := restCall(t, "GET", inst+"/records?timeout=200", "", "application/vnd.kafka.json.v2+json", "")
		var batch []restRecord
		if status == 200 && json.Unmarshal(data, &batch) == nil {
			for _, r := range batch {
				restSeen[fmt.Sprintf("%d:%d", r.Partition, r.Offset)]++
			}
		}
		return len(restSeen)+ledger.total() >= 40
	})
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	for key, n := range ledger.seen {
		if restSeen[key] > 0 || n != 1 {
			t.Errorf("record %s: Kafka member read it %d times, REST member %d times", key, n, restSeen[key])
		}
	}
	if len(restSeen) == 0 || len(ledger.seen) == 0 || len(restSeen)+len(ledger.seen) != 40 {
		t.Fatalf("REST read %d, Kafka read %d of the 40 new records", len(restSeen), len(ledger.seen))
	}
}
