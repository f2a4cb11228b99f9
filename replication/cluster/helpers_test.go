package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/zkserver"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

var chrootSeq atomic.Int64

func testChroot(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/ferry-cluster-test/%s-%d-%d", name, os.Getpid(), chrootSeq.Add(1))
}

// logSink routes logs to t.Log until the test ends (a late line from a
// goroutine being stopped must not call t.Log after it).
type logSink struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	sink := &logSink{t: t}
	t.Cleanup(func() {
		sink.mu.Lock()
		sink.done = true
		sink.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// openZK opens a session whose events the test drains (or hands to a
// driver when events is non-nil).
func openZK(t *testing.T, connect string, timeout time.Duration, log *slog.Logger, events chan<- zookeeper.SessionEvent) *zookeeper.Client {
	t.Helper()
	c, err := zookeeper.Open(connect, timeout, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range c.Events() {
			if events != nil {
				events <- ev
			}
		}
		if events != nil {
			close(events)
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c
}

// startDriver runs a controller driver on its own session until the test
// ends; cancel stops it early.
func startDriver(t *testing.T, id int32, zk *zookeeper.Client, events <-chan zookeeper.SessionEvent, log *slog.Logger) (*Controller, context.CancelFunc) {
	t.Helper()
	c, err := New(Config{BrokerID: id, ZK: zk, SessionEvents: events, Logger: log,
		RequestTimeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx); err != nil {
			t.Errorf("controller %d: %v", id, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("controller %d did not stop", id)
		}
	})
	return c, cancel
}

// testBroker is an in-process ferry broker serving the inter-broker API.
type testBroker struct {
	id   int32
	core *server.Broker
	srv  *kafka.Server
	addr string
	zk   *zookeeper.Client
}

func startBroker(t *testing.T, id int32, connect string, log *slog.Logger) *testBroker {
	return startBrokerSession(t, id, connect, 10*time.Second, log)
}

// startBrokerSession starts a broker whose ZooKeeper session has the
// given timeout, on connect (a proxy's address, to cut it).
func startBrokerSession(t *testing.T, id int32, connect string, session time.Duration, log *slog.Logger) *testBroker {
	t.Helper()
	log = log.With("test_broker", id)
	core, err := server.Open(server.Config{BrokerID: id, DataDir: t.TempDir()}, log)
	if err != nil {
		t.Fatal(err)
	}
	g, err := group.New(core, group.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := kafka.New(core, g, kafka.Config{Addr: ln.Addr().String(), AdvertisedAddr: ln.Addr().String(), Logger: log, InterBroker: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		g.Close()
		core.Close()
	})
	b := &testBroker{id: id, core: core, srv: s, addr: ln.Addr().String(), zk: openZK(t, connect, session, log, nil)}
	host, port, _ := net.SplitHostPort(b.addr)
	p, _ := strconv.Atoi(port)
	err = b.zk.Register(zookeeper.BrokerInfo{ID: id, JMXPort: -1, Timestamp: time.Now().UnixMilli(),
		Endpoints: []zookeeper.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: p, SecurityProtocol: "PLAINTEXT"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createLocalTopic creates the topic's partitions on the broker's core:
// brokers do not create them from ZooKeeper yet.
func (b *testBroker) createLocalTopic(t *testing.T, name string, partitions int32) {
	t.Helper()
	if err := b.core.CreateTopic(server.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
}

// produce sends one record with acks over a fresh connection and returns
// the partition's error code and base offset.
func (b *testBroker) produce(t *testing.T, topic string, acks int16, value string) (int16, int64) {
	t.Helper()
	var bb records.Builder
	bb.Add(records.Record{Value: []byte(value), Timestamp: time.Now().UnixMilli()})
	data, err := bb.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c, err := wire.Dial(context.Background(), b.addr, "test", 5*time.Second, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := req.ResponseKind()
	resp.SetVersion(9)
	if err := c.RoundTrip(req, resp, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}
