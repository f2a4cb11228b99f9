package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// openKafkaConnections sums ferry_open_connections over the node's Kafka
// listeners, and says whether the metric was there at all.
func openKafkaConnections(t *testing.T, node *harness.Node) (float64, bool) {
	t.Helper()
	res, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sum, seen := 0.0, false
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// The HTTP listener counts this very request.
		if !strings.HasPrefix(line, "ferry_open_connections{") || strings.Contains(line, `listener="http"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum, seen = sum+v, true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum, seen
}

// TestHTTPTransactionOpensNoKafkaConnection: POST /kafka's transactions
// run inside the node (coordinator and leaders called directly), so a
// node that no Kafka client has connected to still has no connection on
// its Kafka listener after several transactional batches and a failed,
// aborted one. A raw TCP connection then shows up in the same metric,
// so the metric does see connections.
func TestHTTPTransactionOpensNoKafkaConnection(t *testing.T) {
	node := harness.Start(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"self-a","partitions":2}`, 201)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"self-b","partitions":1,"configs":{"max.message.bytes":"1024"}}`, 201)
	body := `{"records":[{"topic":"self-a","partition":0,"value":"a0"},{"topic":"self-a","partition":1,"value":"a1"},{"topic":"self-b","value":"b0"}]}`
	// The first batch creates __transaction_state.
	harness.WaitFor(t, "the first transactional batch", time.Minute, func() bool {
		res, _, err := post(node.URL+"/kafka", "application/json", body)
		return err == nil && res.StatusCode == http.StatusOK
	})
	for range 5 {
		mustPost(t, node.URL+"/kafka", "application/json", body, http.StatusOK)
	}
	mustPost(t, node.URL+"/kafka", "application/json",
		fmt.Sprintf(`{"records":[{"topic":"self-a","partition":0,"value":"lost"},{"topic":"self-b","value":%q}]}`, strings.Repeat("x", 4096)),
		http.StatusRequestEntityTooLarge)
	if n, _ := openKafkaConnections(t, node); n != 0 {
		t.Fatalf("%v connections are open on the Kafka listener after POST /kafka; no Kafka client connected", n)
	}

	conn, err := net.Dial("tcp", node.KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	harness.WaitFor(t, "the metric to count a raw connection", 10*time.Second, func() bool {
		n, seen := openKafkaConnections(t, node)
		return seen && n == 1
	})
}
