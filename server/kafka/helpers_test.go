package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/server/txn"
)

// logSink routes logs to t.Log and remembers whether a handler panicked.
type logSink struct {
	t  testing.TB
	mu sync.Mutex
	// bugs counts "BUG" log lines (recovered panics).
	bugs int
	done bool
	// lines keeps every line, for tests that look for one (has, count).
	lines []string
}

func (w *logSink) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := strings.TrimSpace(string(p))
	w.lines = append(w.lines, line)
	if strings.Contains(line, "BUG") {
		w.bugs++
	}
	if !w.done {
		w.t.Log(line)
	}
	return len(p), nil
}

// count is how many lines hold every one of substrs; has, whether any.
func (w *logSink) count(substrs ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, line := range w.lines {
		if !slices.ContainsFunc(substrs, func(s string) bool { return !strings.Contains(line, s) }) {
			n++
		}
	}
	return n
}

func (w *logSink) has(substrs ...string) bool { return w.count(substrs...) > 0 }

func (w *logSink) bugCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bugs
}

type testServer struct {
	*Server
	broker *server.Broker
	groups *group.Coordinator
	// txns is the transaction coordinator, started when txnMarkers is set
	// (newTxnTestServer).
	txns       *txn.Coordinator
	txnMarkers txn.MarkerWriter
	// txnTune changes the coordinator's config (newTxnTestServer).
	txnTune func(*txn.Config)
	logs    *logSink
	addr    string
	cfg     server.Config
}

// newTestServer starts a broker, a coordinator and a listener on
// 127.0.0.1:0; t.Cleanup shuts them down and fails the test if any
// request panicked.
func newTestServer(t testing.TB, mutate ...func(*Config)) *testServer {
	t.Helper()
	return newTestServerWith(t, nil, mutate...)
}

// newTestServerWith also lets the test change the broker core's config.
func newTestServerWith(t testing.TB, core func(*server.Config), mutate ...func(*Config)) *testServer {
	t.Helper()
	bcfg := server.Config{DataDir: t.TempDir(), AutoCreateTopics: true}
	if core != nil {
		core(&bcfg)
	}
	return startTestServer(t, &testServer{cfg: bcfg}, mutate...)
}

// startTestServer starts ts (its cfg and txnMarkers set) as
// newTestServerWith does.
func startTestServer(t testing.TB, ts *testServer, mutate ...func(*Config)) *testServer {
	t.Helper()
	sink := &logSink{t: t}
	if _, fuzzing := t.(*testing.F); fuzzing {
		sink.done = true // f.Log is not allowed inside the fuzz function
	}
	logger := slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts.logs = sink
	ts.start(t, logger, mutate...)
	t.Cleanup(func() {
		ts.stop(t)
		if n := sink.bugCount(); n > 0 {
			t.Errorf("%d requests panicked (see BUG log lines)", n)
		}
		sink.mu.Lock()
		sink.done = true
		sink.mu.Unlock()
	})
	return ts
}

func (ts *testServer) start(t testing.TB, logger *slog.Logger, mutate ...func(*Config)) {
	t.Helper()
	b, err := server.Open(ts.cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := group.New(b, group.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: "127.0.0.1:0", Logger: logger}
	if ts.txnMarkers != nil {
		tcfg := txn.Config{Logger: logger, Markers: ts.txnMarkers, StatePartitions: 3,
			MarkerRetryBackoff: 10 * time.Millisecond, MaxTimeout: time.Hour}
		if ts.txnTune != nil {
			ts.txnTune(&tcfg)
		}
		tc, err := txn.New(b, tcfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Txns, ts.txns = tc, tc
		wirePartitionSide(b, g, tc)
	}
	for _, m := range mutate {
		m(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdvertisedAddr = ln.Addr().String()
	s, err := New(b, g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	ts.Server, ts.broker, ts.groups, ts.addr = s, b, g, ln.Addr().String()
}

func (ts *testServer) stop(t testing.TB) {
	if ts.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if ts.txns != nil {
		ts.txns.Close()
	}
	ts.groups.Close()
	ts.broker.Close()
	ts.Server = nil
}

// restart stops everything and starts again on the same data dir.
func (ts *testServer) restart(t testing.TB) {
	t.Helper()
	ts.stop(t)
	logger := slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts.start(t, logger)
}

// client is a raw protocol client: kmsg encodes, the test reads frames.
type client struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
	f    *kmsg.RequestFormatter
}

func (ts *testServer) dial(t testing.TB) *client {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, br: bufio.NewReader(nc), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))}
}

// send writes req at its set version and returns the correlation id.
func (c *client) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	if _, err := c.nc.Write(c.f.AppendRequest(nil, req, c.corr)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return c.corr
}

// readFrame reads one response frame.
func (c *client) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.br, frame)
	return frame, err
}

// recv reads the response to corr into resp (whose version must be set).
func (c *client) recv(corr int32, resp kmsg.Response) {
	c.t.Helper()
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		body = body[1:] // empty header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
}

// do sends req at version v and decodes the response.
func do[R kmsg.Response](c *client, req kmsg.Request, v int16) R {
	c.t.Helper()
	req.SetVersion(v)
	corr := c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(v)
	c.recv(corr, resp)
	return resp.(R)
}

// expectClosed asserts the server closes the connection without answering.
func (c *client) expectClosed() {
	c.t.Helper()
	frame, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("got a %d-byte response, want the connection closed", len(frame))
	}
}

// batch builds one v2 batch of values.
func batch(t testing.TB, opts records.BatchOptions, values ...string) []byte {
	t.Helper()
	var b records.Builder
	for _, v := range values {
		b.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
	}
	data, err := b.AppendBatch(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func produceReq(topic string, partition int32, acks int16, data []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchReq(topic string, partition int32, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, 50<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceOne produces data and returns the partition's response.
func produceOne(c *client, v int16, topic string, data []byte) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	resp := do[*kmsg.ProduceResponse](c, produceReq(topic, 0, -1, data), v)
	return resp.Topics[0].Partitions[0]
}

// fetchValues decodes the values of a fetch partition response.
func fetchValues(t testing.TB, p kmsg.FetchResponseTopicPartition, from int64) []string {
	t.Helper()
	var out []string
	err := records.Decode(p.RecordBatches, from, 0, func(r records.Record) bool {
		out = append(out, string(r.Value))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
