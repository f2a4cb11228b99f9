package cluster_test

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// socketWatch samples, until stopped, the TCP connections a node's
// process holds, remembering those to its own Kafka port (a self-dial)
// and those to the other ports it watches (its peers' listeners: proof
// the sampling sees the process's connections at all).
type socketWatch struct {
	pid       int
	ownPort   int
	peerPorts map[int]bool

	mu      sync.Mutex
	self    map[string]bool // "local -> remote" (hex) of connections to ownPort
	toPeers int             // samples that saw a connection to a peer
	stop    chan struct{}
	done    chan struct{}
}

func watchSockets(t *testing.T, node *harness.Node, peers []*harness.Node) *socketWatch {
	t.Helper()
	w := &socketWatch{pid: node.PID(), ownPort: portOf(t, node.KafkaAddr), peerPorts: map[int]bool{}, self: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, p := range peers {
		w.peerPorts[portOf(t, p.KafkaAddr)] = true
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				w.sample()
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.finish)
	return w
}

func (w *socketWatch) finish() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// sample reads the process's socket inodes from /proc/<pid>/fd and
// matches them against the connections in its network namespace's
// /proc/<pid>/net/tcp{,6}.
func (w *socketWatch) sample() {
	inodes := map[string]bool{}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", w.pid))
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	peers := false
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", w.pid, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] || fields[3] == "0A" { // 0A: a listening socket
				continue
			}
			local, remote := hexPort(fields[1]), hexPort(fields[2])
			switch {
			case remote == w.ownPort && local != w.ownPort:
				w.mu.Lock()
				w.self[fields[1]+" -> "+fields[2]] = true
				w.mu.Unlock()
			case w.peerPorts[remote]:
				peers = true
			}
		}
		f.Close()
	}
	if peers {
		w.mu.Lock()
		w.toPeers++
		w.mu.Unlock()
	}
}

// hexPort is the port of /proc/net/tcp's "ADDR:PORT" (hex).
func hexPort(addr string) int {
	_, p, _ := strings.Cut(addr, ":")
	n, _ := strconv.ParseInt(p, 16, 32)
	return int(n)
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNodeNeverDialsItself (issue 24): on a 3-broker cluster, a node that
// is not the controller serves over HTTP produce to partitions other
// brokers lead, reads of them, admin requests the controller answers, and
// transactions across the three leaders, and every node registers schemas
// (the _schemas store, whose leader is one of them); throughout, no
// node's process holds a connection to its own Kafka listener (sampled
// from /proc every 10 ms), while each holds connections to its peers'.
func TestNodeNeverDialsItself(t *testing.T) {
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("needs /proc/<pid>/net/tcp (Linux)")
	}
	nodes := startCluster(t, 3)
	createAssigned(t, nodes, "selfdial", [][]int32{{1, 2}, {2, 3}, {3, 1}}, nil)
	var cluster struct {
		ControllerID int32 `json:"controller_id"`
	}
	harness.WaitFor(t, "a controller", 30*time.Second, func() bool {
		return getJSONQuiet(nodes[0].URL+"/cluster", &cluster) == nil && cluster.ControllerID > 0
	})
	var node *harness.Node
	for i, n := range nodes {
		if node == nil && int32(i+1) != cluster.ControllerID {
			node = n
		}
	}
	watches := make([]*socketWatch, len(nodes))
	for i, n := range nodes {
		peers := slices.Delete(slices.Clone(nodes), i, i+1)
		watches[i] = watchSockets(t, n, peers)
	}

	for round := range 3 {
		var recs []string
		for p := range 3 {
			recs = append(recs, fmt.Sprintf(`{"partition":%d,"value":"r%d-p%d"}`, p, round, p))
		}
		produceOK(t, node.URL+"/kafka/selfdial", "application/json", `{"records":[`+strings.Join(recs, ",")+`]}`)
		for p := range int32(3) {
			harness.WaitFor(t, fmt.Sprintf("selfdial-%d to read %d records through the node", p, round+1), 30*time.Second, func() bool {
				return len(valuesAt(t, node, "selfdial", p, "read_uncommitted")) == round+1
			})
		}
	}
	// The controller's operations, asked of a node that is not it.
	a := httpPost(t, node.URL+"/admin/preferred-leader-election", "application/json",
		`{"partitions":[{"topic":"selfdial","partition":0},{"topic":"selfdial","partition":1}]}`)
	if a.status != http.StatusOK {
		t.Fatalf("POST /admin/preferred-leader-election: %d %s", a.status, a.body)
	}
	var reassignments map[string]any
	getJSON(t, node.URL+"/admin/reassignments", &reassignments)
	// Transactions: the coordinator is whichever broker leads the id's
	// __transaction_state partition, the leaders all three.
	body := `{"records":[{"topic":"selfdial","partition":0,"value":"t0"},{"topic":"selfdial","partition":1,"value":"t1"},{"topic":"selfdial","partition":2,"value":"t2"}]}`
	harness.WaitFor(t, "the first HTTP transaction", time.Minute, func() bool {
		a = httpPost(t, node.URL+"/kafka", "application/json", body)
		return a.status != http.StatusServiceUnavailable
	})
	if a.status != http.StatusOK {
		t.Fatalf("transaction: %d %s", a.status, a.body)
	}
	for range 3 {
		if a = httpPost(t, node.URL+"/kafka", "application/json", body); a.status != http.StatusOK {
			t.Fatalf("transaction: %d %s", a.status, a.body)
		}
	}
	var txns map[string]any
	getJSON(t, node.URL+"/admin/transactions", &txns)
	for p := range int32(3) {
		harness.WaitFor(t, fmt.Sprintf("selfdial-%d to read the transactions' records through the node", p), 30*time.Second, func() bool {
			return len(valuesAt(t, node, "selfdial", p, "read_committed")) == 3+4
		})
	}

	// The registry on every node: the first write creates _schemas.
	for i, n := range nodes {
		subject := fmt.Sprintf("selfdial-%d-value", i)
		harness.WaitFor(t, "a schema registered through "+n.URL, time.Minute, func() bool {
			_, err := register(t, n, subject, recordSchema(fmt.Sprintf("S%d", i)))
			return err == nil
		})
		for _, reader := range nodes {
			harness.WaitFor(t, subject+" read through "+reader.URL, 30*time.Second, func() bool {
				_, err := registryCall(t, reader, "GET", "/subjects/"+subject+"/versions/latest", nil, nil)
				return err == nil
			})
		}
	}

	for i, w := range watches {
		w.finish()
		n := nodes[i]
		if w.toPeers == 0 {
			t.Errorf("no sample saw broker %d's connections to its peers' Kafka listeners: the sampling sees nothing", i+1)
		}
		if len(w.self) > 0 {
			t.Errorf("broker %d (%s) connected to its own Kafka listener %s (/proc/net/tcp local -> remote): %v",
				i+1, n.URL, n.KafkaAddr, slices.Collect(maps.Keys(w.self)))
		}
	}
}
