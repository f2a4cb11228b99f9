package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// valuesAt reads partition p of topic over node's HTTP gateway at the
// given isolation, as the records' string values.
func valuesAt(t *testing.T, node *harness.Node, topic string, p int32, isolation string) []string {
	t.Helper()
	url := fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=0&max_records=1000&timeout_ms=0&isolation=%s", node.URL, topic, p, isolation)
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return []string{fmt.Sprintf("status %d %s", res.StatusCode, data)}
	}
	var answer struct {
		Records []httpRecord `json:"records"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	out := []string{}
	for _, r := range answer.Records {
		var s string
		_ = json.Unmarshal(r.Value, &s)
		out = append(out, s)
	}
	return out
}

// TestHTTPTransactionAcrossBrokers: POST /kafka on one node writes a batch
// to partitions led by three different brokers and a second topic as one
// transaction (its coordinator on whichever broker leads the producer's
// __transaction_state partition): every node's read_committed readers
// see all of it. A batch whose record one leader refuses is aborted on
// every leader: read_committed readers on every node never see its
// records, read_uncommitted ones do. A batch naming a partition without a
// leader answers 503 and writes nothing.
func TestHTTPTransactionAcrossBrokers(t *testing.T) {
	nodes := startCluster(t, 3)
	createAssigned(t, nodes, "txh", [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	createAssigned(t, nodes, "txh-small", [][]int32{{2, 3}}, map[string]string{"max.message.bytes": "1024"})
	createAssigned(t, nodes, "txh-lone", [][]int32{{3}}, nil)

	var a httpAnswer
	body := `{"records":[
		{"topic":"txh","partition":0,"value":"c0"},
		{"topic":"txh","partition":1,"value":"c1"},
		{"topic":"txh","partition":2,"value":"c2"},
		{"topic":"txh-small","partition":0,"value":"s0"}]}`
	// The first transaction creates __transaction_state and elects its
	// leaders: until then the coordinator is not available (503).
	harness.WaitFor(t, "the first HTTP transaction", 60*time.Second, func() bool {
		a = httpPost(t, nodes[0].URL+"/kafka", "application/json", body)
		return a.status != http.StatusServiceUnavailable
	})
	var ok struct {
		Offsets []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"offsets"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &ok) != nil || len(ok.Offsets) != 4 {
		t.Fatalf("transaction: %d %s", a.status, a.body)
	}
	want := map[string][]string{"txh/0": {"c0"}, "txh/1": {"c1"}, "txh/2": {"c2"}, "txh-small/0": {"s0"}}
	check := func(isolation string, want map[string][]string) {
		t.Helper()
		for _, n := range nodes {
			for tp, values := range want {
				topic, p, _ := strings.Cut(tp, "/")
				harness.WaitFor(t, fmt.Sprintf("%s %s on %s to read %v", tp, isolation, n.URL, values), 30*time.Second, func() bool {
					return slices.Equal(valuesAt(t, n, topic, int32(p[0]-'0'), isolation), values)
				})
			}
		}
	}
	check("read_committed", want)

	big := strings.Repeat("x", 4096)
	a = httpPost(t, nodes[1].URL+"/kafka", "application/json", fmt.Sprintf(`{"records":[
		{"topic":"txh","partition":0,"value":"lost0"},
		{"topic":"txh","partition":1,"value":"lost1"},
		{"topic":"txh","partition":2,"value":"lost2"},
		{"topic":"txh-small","partition":0,"value":%q}]}`, big))
	if a.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(a.body), "aborted") {
		t.Fatalf("a batch with a record too large: %d %s", a.status, a.body)
	}
	// A later transaction on the same partitions becomes visible only
	// once the aborted one is decided on every leader.
	a = httpPost(t, nodes[2].URL+"/kafka", "application/json", `{"records":[
		{"topic":"txh","partition":0,"value":"d0"},
		{"topic":"txh","partition":1,"value":"d1"},
		{"topic":"txh","partition":2,"value":"d2"}]}`)
	if a.status != http.StatusOK {
		t.Fatalf("transaction after the abort: %d %s", a.status, a.body)
	}
	check("read_committed", map[string][]string{"txh/0": {"c0", "d0"}, "txh/1": {"c1", "d1"}, "txh/2": {"c2", "d2"}})
	check("read_uncommitted", map[string][]string{"txh/0": {"c0", "lost0", "d0"}, "txh/1": {"c1", "lost1", "d1"}, "txh/2": {"c2", "lost2", "d2"}})

	// A partition without a leader: refused before anything is written.
	nodes[2].Kill()
	harness.WaitFor(t, "txh-lone to lose its only replica's leadership", 30*time.Second, func() bool {
		var info topicView
		return getJSONQuiet(nodes[0].URL+"/topics/txh-lone", &info) == nil && len(info.Partitions) == 1 && info.Partitions[0].Leader < 0
	})
	a = httpPost(t, nodes[0].URL+"/kafka", "application/json", `{"records":[
		{"topic":"txh","partition":0,"value":"never"},
		{"topic":"txh-lone","partition":0,"value":"never"}]}`)
	if a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "50306") || a.header.Get("Retry-After") == "" {
		t.Fatalf("a batch with a leaderless partition: %d %s", a.status, a.body)
	}
	if got := valuesAt(t, nodes[0], "txh", 0, "read_uncommitted"); slices.Contains(got, "never") {
		t.Fatalf("a refused batch wrote: %v", got)
	}
}
