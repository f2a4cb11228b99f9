package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

const restV2 = "application/vnd.kafka.v2+json"

// restCall sends a REST Proxy request and returns status and body.
func restCall(t *testing.T, method, url, contentType, accept, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

func mustRest(t *testing.T, want int, method, url, body string) []byte {
	t.Helper()
	status, data := restCall(t, method, url, restV2, "", body)
	if status != want {
		t.Fatalf("%s %s: %d %s", method, url, status, data)
	}
	return data
}

type restRecord struct {
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
}

// restConsume creates an instance in group, subscribes it to topic, and
// reads until it has n records; it returns the instance URL and the records.
func restConsume(t *testing.T, node *harness.Node, group, name, topic string, n int) (string, []restRecord) {
	t.Helper()
	mustRest(t, 200, "POST", node.URL+"/consumers/"+group,
		`{"name":"`+name+`","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`)
	inst := node.URL + "/consumers/" + group + "/instances/" + name
	mustRest(t, 204, "POST", inst+"/subscription", `{"topics":["`+topic+`"]}`)
	var got []restRecord
	for deadline := time.Now().Add(30 * time.Second); len(got) < n && time.Now().Before(deadline); {
		status, data := restCall(t, "GET", inst+"/records?timeout=1000", "", "application/vnd.kafka.json.v2+json", "")
		if status != 200 {
			t.Fatalf("records: %d %s", status, data)
		}
		var batch []restRecord
		if err := json.Unmarshal(data, &batch); err != nil {
			t.Fatal(err)
		}
		got = append(got, batch...)
	}
	if len(got) != n {
		t.Fatalf("%s read %d records, want %d", name, len(got), n)
	}
	return inst, got
}

type committed struct {
	Offsets []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	} `json:"offsets"`
}

func committedOffsets(t *testing.T, inst, topic string, partitions int) map[int32]int64 {
	t.Helper()
	var parts []string
	for p := 0; p < partitions; p++ {
		parts = append(parts, fmt.Sprintf(`{"topic":"%s","partition":%d}`, topic, p))
	}
	status, data := restCall(t, "GET", inst+"/offsets", restV2, "", `{"partitions":[`+strings.Join(parts, ",")+`]}`)
	if status != 200 {
		t.Fatalf("GET offsets: %d %s", status, data)
	}
	var c committed
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, o := range c.Offsets {
		out[o.Partition] = o.Offset
	}
	return out
}

// TestRestCommittedOffsetsSurviveKill9 commits offsets through the REST
// Proxy API, kills the broker with SIGKILL, restarts it, and reads the same
// committed offsets back; a new instance of the group resumes after them.
func TestRestCommittedOffsetsSurviveKill9(t *testing.T) {
	node := harness.Start(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"orders","partitions":3}`, 201)
	var lines []string
	for i := 0; i < 30; i++ {
		lines = append(lines, fmt.Sprintf(`{"key":"k%d","value":{"id":%d}}`, i, i))
	}
	mustPost(t, node.URL+"/kafka/orders", "application/json", `{"records":[`+strings.Join(lines, ",")+`]}`, 200)

	inst, recs := restConsume(t, node, "billing", "a", "orders", 30)
	seen := map[string]bool{}
	for _, r := range recs {
		seen[fmt.Sprintf("%d:%d", r.Partition, r.Offset)] = true
	}
	if len(seen) != 30 {
		t.Fatalf("%d distinct records of 30", len(seen))
	}
	mustRest(t, 200, "POST", inst+"/offsets", "") // commit all consumed
	before := committedOffsets(t, inst, "orders", 3)
	var total int64
	for _, off := range before {
		total += off
	}
	if total != 30 {
		t.Fatalf("committed %v, want offsets summing to 30", before)
	}

	node.Kill()
	node.Restart()

	// The instance lived in the killed process; the group's offsets did not.
	status, _ := restCall(t, "GET", inst+"/records", "", "", "")
	if status != http.StatusNotFound {
		t.Fatalf("old instance after restart: %d, want 404", status)
	}
	mustRest(t, 200, "POST", node.URL+"/consumers/billing", `{"name":"b","format":"json","auto.offset.reset":"earliest"}`)
	instB := node.URL + "/consumers/billing/instances/b"
	after := committedOffsets(t, instB, "orders", 3)
	for p, off := range before {
		if after[p] != off {
			t.Fatalf("partition %d: committed %d before kill -9, %d after", p, off, after[p])
		}
	}
	mustRest(t, 204, "DELETE", instB, "")
	mustPost(t, node.URL+"/kafka/orders", "application/json", `{"records":[{"value":{"id":100}},{"value":{"id":101}}]}`, 200)
	_, recs = restConsume(t, node, "billing", "c", "orders", 2)
	for _, r := range recs {
		if r.Offset < before[r.Partition] {
			t.Fatalf("re-read %d:%d below the committed offset %d", r.Partition, r.Offset, before[r.Partition])
		}
	}
	var d struct {
		Offsets []struct {
			Partition int32 `json:"partition"`
			Committed int64 `json:"committed_offset"`
		} `json:"offsets"`
	}
	status, data := restCall(t, "GET", node.URL+"/groups/billing", "", "", "")
	if status != 200 || json.Unmarshal(data, &d) != nil || len(d.Offsets) != 3 {
		t.Fatalf("GET /groups/billing: %d %s", status, data)
	}
}
