package cluster_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestHTTPTransactionLeaderKilledMidBatch: a POST /kafka batch over
// partitions led by three brokers commits on all of them, through the
// coordinating node and through another (coordinator over the
// forwarder), where a batch one remote leader refuses is aborted; the next batch
// is caught with one leader frozen (the batch appended on the two others,
// waiting on it) and that leader is then killed: the request is answered
// with an error naming the abort, and read_committed readers on every node
// never see any of its records, also once the killed broker is back (its
// partition gets the abort marker then). The transaction coordinator is
// the serving node itself (one __transaction_state partition, one
// replica, led there), so that the killed broker holds no coordinator
// state: the coordinator is called in process, the killed leader over the
// inter-broker forwarder.
func TestHTTPTransactionLeaderKilledMidBatch(t *testing.T) {
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "1",
		"--transaction-state-log-replication-factor", "1", "--transaction-state-log-min-isr", "1")
	createAssigned(t, nodes, "txk-boot", [][]int32{{1}}, nil)
	harness.WaitFor(t, "the first HTTP transaction (creates __transaction_state)", 60*time.Second, func() bool {
		a, err := post(nodes[0].URL+"/kafka", "application/json", `{"records":[{"topic":"txk-boot","partition":0,"value":"x"}]}`)
		return err == nil && a.status == http.StatusOK
	})
	var coordinator int32 = -1
	harness.WaitFor(t, "__transaction_state-0 to have a leader", 30*time.Second, func() bool {
		var info topicView
		if getJSONQuiet(nodes[0].URL+"/topics/__transaction_state", &info) != nil || len(info.Partitions) != 1 {
			return false
		}
		coordinator = info.Partitions[0].Leader
		return coordinator > 0
	})
	serving := nodes[coordinator-1]
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != coordinator {
			others = append(others, id)
		}
	}
	victimID, thirdID := others[0], others[1]
	victim := nodes[victimID-1]
	t.Logf("coordinator and serving node: broker %d; leader killed: broker %d; other leader: broker %d", coordinator, victimID, thirdID)
	// Partition 0 on the serving node, 1 on the victim, 2 on the third.
	createAssigned(t, nodes, "txk", [][]int32{{coordinator}, {victimID}, {thirdID}}, nil)
	createAssigned(t, nodes, "txk-small", [][]int32{{coordinator}}, map[string]string{"max.message.bytes": "1024"})
	leaderOf := map[int32]*harness.Node{0: serving, 1: victim, 2: nodes[thirdID-1]}

	batch := func(prefix string, partitions ...int32) string {
		var recs []string
		for _, p := range partitions {
			recs = append(recs, fmt.Sprintf(`{"topic":"txk","partition":%d,"value":"%s%d"}`, p, prefix, p))
		}
		return `{"records":[` + strings.Join(recs, ",") + `]}`
	}
	committed := func(p int32, want ...string) {
		t.Helper()
		harness.WaitFor(t, fmt.Sprintf("txk-%d read_committed on its leader to be %v", p, want), 30*time.Second, func() bool {
			return slices.Equal(valuesAt(t, leaderOf[p], "txk", p, "read_committed"), want)
		})
	}

	if a := httpPost(t, serving.URL+"/kafka", "application/json", batch("c", 0, 1, 2)); a.status != http.StatusOK {
		t.Fatalf("a batch over three leaders: %d %s", a.status, a.body)
	}
	for p := range int32(3) {
		committed(p, fmt.Sprintf("c%d", p))
	}

	// Through a node that does not coordinate: InitProducerId,
	// AddPartitionsToTxn and EndTxn go to the coordinator over the
	// forwarder; a record a remote leader refuses aborts the whole batch.
	third := nodes[thirdID-1]
	if a := httpPost(t, third.URL+"/kafka", "application/json", batch("r", 0, 1, 2)); a.status != http.StatusOK {
		t.Fatalf("a batch through a remote coordinator: %d %s", a.status, a.body)
	}
	big := strings.Repeat("x", 4096)
	if a := httpPost(t, third.URL+"/kafka", "application/json", fmt.Sprintf(`{"records":[
		{"topic":"txk","partition":2,"value":"refused2"},{"topic":"txk","partition":1,"value":"refused1"},
		{"topic":"txk-small","partition":0,"value":%q}]}`, big)); a.status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(string(a.body), "aborted") {
		t.Fatalf("a batch with a record a remote leader refuses: %d %s", a.status, a.body)
	}
	for p := range int32(3) {
		committed(p, fmt.Sprintf("c%d", p), fmt.Sprintf("r%d", p))
	}

	victim.Freeze()
	answer := make(chan httpAnswer, 1)
	go func() {
		a, err := post(serving.URL+"/kafka", "application/json", batch("lost", 0, 1, 2))
		if err != nil {
			a = httpAnswer{status: -1, body: []byte(err.Error())}
		}
		answer <- a
	}()
	// Mid-batch: appended on the two live leaders, not committed.
	for _, p := range []int32{0, 2} {
		harness.WaitFor(t, fmt.Sprintf("the batch appended to txk-%d", p), 30*time.Second, func() bool {
			return slices.Contains(valuesAt(t, leaderOf[p], "txk", p, "read_uncommitted"), fmt.Sprintf("lost%d", p))
		})
	}
	victim.Kill()
	var a httpAnswer
	select {
	case a = <-answer:
	case <-time.After(90 * time.Second):
		t.Fatal("the batch whose leader was killed was not answered")
	}
	if a.status == http.StatusOK || !strings.Contains(string(a.body), "aborted") {
		t.Fatalf("the batch whose leader was killed: %d %s", a.status, a.body)
	}
	t.Logf("answer: %d %s", a.status, a.body)

	// A later batch on the live partitions is visible to read_committed
	// readers only once the aborted one is decided there.
	harness.WaitFor(t, "a batch after the abort", 60*time.Second, func() bool {
		a, err := post(serving.URL+"/kafka", "application/json", batch("after", 0, 2))
		return err == nil && a.status == http.StatusOK
	})
	committed(0, "c0", "r0", "after0")
	committed(2, "c2", "r2", "after2")

	victim.Restart()
	victim.WaitReady()
	harness.WaitFor(t, "a batch on the restarted broker's partition", 60*time.Second, func() bool {
		a, err := post(serving.URL+"/kafka", "application/json", batch("after", 1))
		return err == nil && a.status == http.StatusOK
	})
	committed(1, "c1", "r1", "after1")
	for _, n := range nodes {
		for p := range int32(3) {
			if got := valuesAt(t, n, "txk", p, "read_committed"); slices.ContainsFunc(got, func(v string) bool {
				return strings.HasPrefix(v, "lost") || strings.HasPrefix(v, "refused")
			}) {
				t.Fatalf("txk-%d read_committed on %s holds a record of the aborted batch: %v", p, n.URL, got)
			}
		}
	}
}
