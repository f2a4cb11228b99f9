package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

// TestAdminTransactionsAcrossBrokers: GET /admin/transactions on every
// node lists an open transaction whichever broker coordinates it, with its
// partitions (led by different brokers) and their start offsets; POST
// /admin/transactions/abort on one node aborts it on a partition another
// broker leads, and that partition's read_committed readers move on.
func TestAdminTransactionsAcrossBrokers(t *testing.T) {
	nodes := startCluster(t, 3)
	createAssigned(t, nodes, "adm-tx", [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.TransactionalID("adm-open"),
		kgo.TransactionTimeout(10*time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range int32(3) {
		recs = append(recs, &kgo.Record{Topic: "adm-tx", Partition: i, Value: []byte("open")})
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	type listing struct {
		Transactions []struct {
			ID         string `json:"transactional_id"`
			State      string `json:"state"`
			Partitions []struct {
				Topic       string `json:"topic"`
				Partition   int32  `json:"partition"`
				StartOffset int64  `json:"start_offset"`
			} `json:"partitions"`
		} `json:"transactions"`
	}
	for _, n := range nodes {
		var l listing
		harness.WaitFor(t, "the open transaction listed on "+n.URL, 30*time.Second, func() bool {
			if getJSONQuiet(n.URL+"/admin/transactions", &l) != nil {
				return false
			}
			for _, tx := range l.Transactions {
				if tx.ID == "adm-open" && tx.State == "Ongoing" && len(tx.Partitions) == 3 {
					for _, pp := range tx.Partitions {
						if pp.StartOffset != 0 {
							return false
						}
					}
					return true
				}
			}
			return false
		})
	}
	// Partition 1 is led by broker 2; ask broker 1.
	a := httpPost(t, nodes[0].URL+"/admin/transactions/abort", "application/json", `{"topic":"adm-tx","partition":1,"start_offset":0}`)
	if a.status != http.StatusOK {
		t.Fatalf("abort: %d %s", a.status, a.body)
	}
	a = httpPost(t, nodes[0].URL+"/admin/transactions/abort", "application/json", `{"topic":"adm-tx","partition":1,"start_offset":5}`)
	if a.status != http.StatusNotFound {
		t.Fatalf("abort where no transaction starts: %d %s", a.status, a.body)
	}
	adm := kadm.NewClient(p)
	harness.WaitFor(t, "partition 1's LSO past the abort marker", 30*time.Second, func() bool {
		lso, err := adm.ListCommittedOffsets(ctx, "adm-tx")
		if err != nil {
			return false
		}
		o1, _ := lso.Lookup("adm-tx", 1)
		o0, _ := lso.Lookup("adm-tx", 0)
		return o1.Offset == 2 && o0.Offset == 0 // partition 0 still held by the open transaction
	})
}
