// Package partition_test puts three `ferry serve` brokers and ZooKeeper on
// hosts of their own (network namespaces on a bridge, test/netns), cuts
// the network between them in the ways of issue 23 while idempotent
// acks=all Kafka producers and HTTP producers write through every node
// and HTTP consumers read through every node, heals it, and checks with
// test/jepsen that no acknowledged write was lost, doubled or moved, and
// that nothing a consumer saw was taken back. The test process stays in the root namespace:
// it is the clients, and no cut separates it from a host.
//
// One ZooKeeper host serves the package (each test its own chroot);
// brokers' hosts are made per test. `make test` runs a short variant (two
// nemeses, one round each); FERRY_LONG=1 runs every nemesis, several
// rounds each (`make test-long`).
package partition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/netns"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// sessionTimeout is the brokers' --zookeeper-session-timeout-ms, as in
// test/cluster.
const sessionTimeout = 6 * time.Second

// shared is the package's network and its ZooKeeper host, made on first
// use and removed by TestMain.
var shared struct {
	once sync.Once
	net  *netns.Network
	zkh  *netns.Host
	zk   *zkserver.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.zk != nil {
		shared.zk.Close()
	}
	if shared.net != nil {
		if err := shared.net.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "netns:", err)
		}
	}
	os.Exit(code)
}

// requireNetwork returns the shared network and ZooKeeper; it fails the
// test under CI, and skips it elsewhere, when they cannot be made.
func requireNetwork(tb testing.TB) (*netns.Network, *netns.Host, *zkserver.Server) {
	tb.Helper()
	shared.once.Do(func() {
		if shared.net, shared.err = netns.New(); shared.err != nil {
			return
		}
		if shared.zkh, shared.err = shared.net.AddHost("zk"); shared.err != nil {
			return
		}
		shared.zk, shared.err = zkserver.LaunchAt(harness.Place{Host: shared.zkh.Addr, Wrap: shared.zkh.Wrap()})
	})
	if shared.err != nil {
		harness.RequireService(tb, "network namespaces with ZooKeeper in one", shared.err)
	}
	return shared.net, shared.zkh, shared.zk
}

// cluster is three brokers on hosts b1..b3 and the ZooKeeper host.
type cluster struct {
	tb     testing.TB
	net    *netns.Network
	zkHost *netns.Host
	hosts  []*netns.Host // hosts[i] runs broker i+1
	nodes  []*harness.Node
	chroot string
	zk     *zk.Conn // the test's own session, for reading partition state
}

// startCluster starts brokers 1..3, each on its own host, under a fresh
// chroot of the shared ZooKeeper, with extra flags for each.
func startCluster(tb testing.TB, extra ...string) *cluster {
	tb.Helper()
	nw, zkh, srv := requireNetwork(tb)
	c := &cluster{tb: tb, net: nw, zkHost: zkh,
		chroot: "/" + strings.NewReplacer("/", "-", " ", "-").Replace(tb.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	tb.Cleanup(func() { nw.Heal() }) // the next test finds the shared hosts whole
	for i := 1; i <= 3; i++ {
		h := nw.Host(tb, fmt.Sprintf("b%d", i))
		tb.Cleanup(func() { nw.RemoveHost(h) })
		c.hosts = append(c.hosts, h)
	}
	c.nodes = make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i, h := range c.hosts {
		wg.Go(func() {
			args := append([]string{"--broker-id", strconv.Itoa(i + 1), "--zookeeper", srv.Addr() + c.chroot,
				"--zookeeper-session-timeout-ms", strconv.Itoa(int(sessionTimeout.Milliseconds()))}, extra...)
			c.nodes[i] = harness.StartAt(tb, harness.Place{Host: h.Addr, Wrap: h.Wrap()}, args...)
		})
	}
	wg.Wait()
	if slices.Contains(c.nodes, nil) {
		tb.FailNow() // a broker did not start; harness logged why
	}
	conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(conn.Close)
	c.zk = conn
	return c
}

func (c *cluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.KafkaAddr)
	}
	return s
}

// host is broker id's host.
func (c *cluster) host(id int) *netns.Host { return c.hosts[id-1] }

// createTopic makes topic with partitions partitions, replication factor
// 3 and min.insync.replicas=2, and waits until each has a leader and a
// full ISR.
func (c *cluster) createTopic(topic string, partitions int32) {
	c.tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		c.tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	minISR := "2"
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.tb.Fatalf("create %s: %v", topic, err)
	}
	c.waitFullISR(topic, partitions, 30*time.Second)
}

// partitionState is a partition's state znode, as Kafka writes it.
type partitionState struct {
	Leader      int   `json:"leader"`
	LeaderEpoch int   `json:"leader_epoch"`
	ISR         []int `json:"isr"`
}

// state reads topic-p's state znode (what the controller and the leader
// last committed: the truth the ISR's expansions and shrinks are written
// to at once, without the views' lingering).
func (c *cluster) state(topic string, p int32) (partitionState, error) {
	var s partitionState
	b, _, err := c.zk.Get(path.Join(c.chroot, "brokers/topics", topic, "partitions", strconv.Itoa(int(p)), "state"))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// controller is the broker id in /controller, or -1.
func (c *cluster) controller() int {
	b, _, err := c.zk.Get(path.Join(c.chroot, "controller"))
	if err != nil {
		return -1
	}
	var v struct {
		BrokerID int `json:"brokerid"`
	}
	if json.Unmarshal(b, &v) != nil {
		return -1
	}
	return v.BrokerID
}

// leader is topic-p's leader in ZooKeeper, or -1.
func (c *cluster) leader(topic string, p int32) int {
	s, err := c.state(topic, p)
	if err != nil {
		return -1
	}
	return s.Leader
}

// waitFullISR waits until every partition of topic has a leader and all
// three replicas in its ISR, and returns how long each took.
func (c *cluster) waitFullISR(topic string, partitions int32, timeout time.Duration) []time.Duration {
	c.tb.Helper()
	start := time.Now()
	took := make([]time.Duration, partitions)
	full := make([]bool, partitions)
	harness.WaitFor(c.tb, fmt.Sprintf("every partition of %s has a leader and an ISR of 3", topic), timeout, func() bool {
		all := true
		for p := range partitions {
			if full[p] {
				continue
			}
			s, err := c.state(topic, p)
			if err == nil && s.Leader > 0 && len(s.ISR) == 3 {
				full[p], took[p] = true, time.Since(start)
			} else {
				all = false
			}
		}
		return all
	})
	return took
}

// describe is every partition's leader, epoch and ISR, for logs.
func (c *cluster) describe(topic string, partitions int32) string {
	var b strings.Builder
	for p := range partitions {
		s, err := c.state(topic, p)
		if err != nil {
			fmt.Fprintf(&b, " p%d: %v;", p, err)
			continue
		}
		fmt.Fprintf(&b, " p%d: leader %d epoch %d isr %v;", p, s.Leader, s.LeaderEpoch, s.ISR)
	}
	fmt.Fprintf(&b, " controller %d", c.controller())
	return strings.TrimSpace(b.String())
}
