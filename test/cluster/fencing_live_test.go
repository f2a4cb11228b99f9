package cluster_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// The fast path's wrong guess: a leader that is alive, with its ZooKeeper
// session, but whose advertised listener refuses connections (every broker
// here advertises a proxy the test closes: the controller, the followers
// and the clients all reach it only through it). The controller fences it
// and elects another leader, while a client that still reaches the old
// leader directly sends it an acks=all produce: that write must not be
// acknowledged (its followers fetch from the new leader, and it cannot
// shrink the ISR under the znode version the controller bumped). When the
// proxy listens again the broker is unfenced, follows the new leader and
// drops the unacknowledged tail; every acknowledged record is there, in
// order, once.
func TestFencedLiveLeaderAcknowledgesNothing(t *testing.T) {
	connect := freshChroot(t, zks.Require(t).Addr())
	proxies := make([]*cutProxy, 3)
	nodes := make([]*harness.Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		proxies[i] = newCutProxy(t)
		wg.Go(func() {
			nodes[i] = harness.Start(t, "--broker-id", strconv.Itoa(i+1), "--zookeeper", connect,
				"--zookeeper-session-timeout-ms", strconv.Itoa(int(fencingSessionTimeout.Milliseconds())),
				"--advertised-kafka-addr", proxies[i].addr)
		})
	}
	wg.Wait()
	for i, n := range nodes {
		if n == nil {
			t.FailNow()
		}
		proxies[i].setTarget(n.KafkaAddr)
	}
	cl, adm := replicatedProducer(t, nodes, "cut")
	acked := 0
	produce := func(count int) { acked = produceNumbered(t, cl, acked, count) }
	produce(20)

	old := leaderOf(t, adm, "cut")
	proxies[old-1].cut()
	harness.WaitFor(t, "a new leader while the old one lives, before its session could expire", fencingSessionTimeout/2, func() bool {
		l := leaderOf(t, adm, "cut")
		return l > 0 && l != old
	})
	if code := produceDirect(t, nodes[old-1].KafkaAddr, "cut", "stale"); code == 0 {
		t.Fatal("the fenced, cut-off leader acknowledged an acks=all write")
	} else {
		t.Logf("the cut-off leader answered the direct acks=all produce with error code %d", code)
	}
	produce(20)

	proxies[old-1].heal(t)
	harness.WaitFor(t, "the old leader back in the ISR as a follower", time.Minute, func() bool {
		l, isr := leaderAndISR(adm, "cut")
		return l != old && len(isr) == 3
	})
	if !anyLogs(nodes, "fenced broker answers again under the same registration") {
		t.Fatal("the old leader came back other than by being unfenced (its session was to stay alive)")
	}
	produce(10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListEndOffsets(ctx, "cut")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offs.Lookup("cut", 0); end.Offset != int64(acked) {
		t.Fatalf("log end %d after %d acknowledged records", end.Offset, acked)
	}
	checkNumbered(t, nodes, "cut", acked)
	// The old leader's own log now holds the acknowledged records and not
	// the write it took while cut off: led by it again (it was the first
	// leader, so the preferred replica), the partition reads the same.
	electPreferred(t, adm, "cut", old)
	checkNumbered(t, nodes, "cut", acked)
}

// electPreferred asks for a preferred leader election of topic's
// partition 0 until broker id, its first replica, leads it.
func electPreferred(t *testing.T, adm *kadm.Client, topic string, id int32) {
	t.Helper()
	harness.WaitFor(t, "broker "+strconv.Itoa(int(id))+" leading again", 30*time.Second, func() bool {
		if l, _ := leaderAndISR(adm, topic); l == id {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
		return false
	})
}

// produceDirect sends one acks=all Produce (3 s timeout) for partition 0
// straight to addr, bypassing the advertised address, and returns the
// partition's error code (or -1 when no answer came).
func produceDirect(t *testing.T, addr, topic, value string) int16 {
	t.Helper()
	var b records.Builder
	b.Add(records.Record{Value: []byte(value), Timestamp: time.Now().UnixMilli()})
	batch, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := wire.Dial(context.Background(), addr, "fencing-test", 10*time.Second, 1<<20)
	if err != nil {
		t.Fatalf("dial the cut-off leader directly: %v", err)
	}
	defer c.Close()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(8)
	req.Acks, req.TimeoutMillis = -1, 3000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(8)
	if err := c.RoundTrip(req, resp, 10*time.Second); err != nil {
		return -1
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// cutProxy forwards TCP connections from its own loopback port to a
// broker's listener; cut closes its listener (new connections are
// refused by the kernel) and every connection through it, heal listens on
// the same port again.
type cutProxy struct {
	addr   string
	target atomic.Pointer[string]
	mu     struct {
		sync.Mutex
		ln    net.Listener
		conns map[net.Conn]bool
	}
}

func newCutProxy(t *testing.T) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String()}
	p.mu.conns = map[net.Conn]bool{}
	p.start(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) setTarget(addr string) { p.target.Store(&addr) }

func (p *cutProxy) start(ln net.Listener) {
	p.mu.Lock()
	p.mu.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(nc)
		}
	}()
}

func (p *cutProxy) forward(nc net.Conn) {
	target := p.target.Load()
	if target == nil {
		nc.Close()
		return
	}
	up, err := net.DialTimeout("tcp", *target, 5*time.Second)
	if err != nil {
		nc.Close()
		return
	}
	if !p.track(nc, up) {
		return
	}
	go func() { io.Copy(up, nc); up.Close(); nc.Close() }()
	io.Copy(nc, up)
	nc.Close()
	up.Close()
}

// track registers a proxied pair; false (both closed) once cut.
func (p *cutProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.mu.conns[c] = true
	}
	return true
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.ln != nil {
		p.mu.ln.Close()
		p.mu.ln = nil
	}
	for c := range p.mu.conns {
		c.Close()
		delete(p.mu.conns, c)
	}
}

func (p *cutProxy) heal(t *testing.T) {
	t.Helper()
	var ln net.Listener
	harness.WaitFor(t, "the proxy's port again", 10*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", p.addr)
		return err == nil
	})
	p.start(ln)
}
