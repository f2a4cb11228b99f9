package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// heapAfterGC is the live heap, in bytes.
func heapAfterGC() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// waitFor polls cond every few milliseconds for up to 10 s.
// startFrame sends a Produce frame header declaring size bytes, and the
// first body bytes.
func startFrame(t *testing.T, nc net.Conn, size int, body []byte) {
	t.Helper()
	h := binary.BigEndian.AppendUint32(nil, uint32(size))
	h = binary.BigEndian.AppendUint16(h, produceKey)
	h = binary.BigEndian.AppendUint16(h, 9)
	if _, err := nc.Write(append(h, body...)); err != nil {
		t.Fatal(err)
	}
}

// Before: every reader allocated the declared 100 MiB at once (20
// connections: 2,002 MiB of heap; 400 would reserve 40 GiB).
func TestFrameHeadersDeclaringHugeSizesHoldLittleHeap(t *testing.T) {
	ts := newTestServer(t)
	const conns = 400
	base := heapAfterGC()
	for range conns {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		startFrame(t, nc, DefaultMaxRequestBytes, []byte{0, 0, 0, 1, 0, 4})
	}
	harness.WaitFor(t, "every connection to be reading its frame", 10*time.Second, func() bool { return ts.framesReading.Load() == conns })
	growth := heapAfterGC() - base
	t.Logf("%d connections each declaring a %d MiB frame: heap grew %.1f MiB", conns, DefaultMaxRequestBytes>>20, float64(growth)/(1<<20))
	if growth > 64<<20 {
		t.Fatalf("heap grew %d MiB, want < 64 MiB", growth>>20)
	}
	if n := ts.budget.inUse(); n != 0 {
		t.Fatalf("frames that sent 6 bytes reserved %d bytes of budget", n)
	}
	stillServes(t, ts)
}

// duplicateFetch asks for the same partition n times with no limits.
func duplicateFetch(topic string, n int) *kmsg.FetchRequest {
	req := fetchReq(topic, 0, 0, 0, 1)
	req.MaxBytes = 1<<31 - 1
	p := req.Topics[0].Partitions[0]
	p.PartitionMaxBytes = 1<<31 - 1
	req.Topics[0].Partitions = nil
	for range n {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	}
	return req
}

// produceMiBs writes n batches of one 1 MiB record each to partition 0.
func produceMiBs(t *testing.T, c *client, topic string, n int) {
	t.Helper()
	val := strings.Repeat("x", 1<<20)
	for range n {
		if p := produceOne(c, 9, topic, batch(t, records.BatchOptions{}, val)); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
}

func bigMessages(c *server.Config) { c.MessageMaxBytes = 16 << 20 }

// Before: 50 copies of a partition holding 4 MiB answered 209,732,127
// bytes, and serving it allocated 1,264 MiB.
func TestFetchDuplicatePartitionsAreAnsweredOnce(t *testing.T) {
	ts := newTestServerWith(t, bigMessages)
	c := ts.dial(t)
	produceMiBs(t, c, "big", 4)
	req := duplicateFetch("big", 50)
	req.Topics[0].Partitions[49].FetchOffset = 2 // Kafka: the last occurrence's fields win
	runtime.GC()
	before := totalAlloc()
	resp := do[*kmsg.FetchResponse](c, req, 11)
	allocated := totalAlloc() - before
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("got %d topics, first with %d partitions; want the partition once", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	p := resp.Topics[0].Partitions[0]
	if got := len(fetchValues(t, p, 2)); p.ErrorCode != 0 || got != 2 {
		t.Fatalf("error %d, %d records from offset 2; want the last occurrence's offset 2, 2 records", p.ErrorCode, got)
	}
	t.Logf("50 duplicates: answer of %d record bytes; %.1f MiB allocated (client decode included)", len(p.RecordBatches), float64(allocated)/(1<<20))
	if allocated > 64<<20 {
		t.Fatalf("allocated %d MiB serving one partition of 4 MiB", allocated>>20)
	}
}

// Before: a fetch with MaxBytes 2^31-1 answered all 4 MiB whatever
// fetch.max.bytes said.
func TestFetchResponseCappedAtFetchMaxBytes(t *testing.T) {
	ts := newTestServerWith(t, bigMessages, func(c *Config) { c.FetchMaxBytes = 2 << 20 })
	c := ts.dial(t)
	produceMiBs(t, c, "big", 4)
	resp := do[*kmsg.FetchResponse](c, duplicateFetch("big", 1), 11)
	p := resp.Topics[0].Partitions[0]
	if n := len(p.RecordBatches); p.ErrorCode != 0 || n == 0 || n > 2<<20 {
		t.Fatalf("error %d, %d record bytes; want 1 to %d", p.ErrorCode, n, 2<<20)
	}
	t.Logf("fetch.max.bytes 2 MiB: %d record bytes of 4 MiB", len(p.RecordBatches))

	// The first batch goes out even when larger than the cap, as in Kafka.
	ts2 := newTestServerWith(t, bigMessages, func(c *Config) { c.FetchMaxBytes = 1024 })
	c2 := ts2.dial(t)
	produceMiBs(t, c2, "big", 1)
	p = do[*kmsg.FetchResponse](c2, duplicateFetch("big", 1), 11).Topics[0].Partitions[0]
	if got := len(fetchValues(t, p, 0)); got != 1 {
		t.Fatalf("fetch.max.bytes 1024 answered %d records, want the first batch", got)
	}
}

// apiVersionsOK reports whether nc gets an ApiVersions answer.
func apiVersionsOK(t *testing.T, nc net.Conn) bool {
	t.Helper()
	c := &client{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))}
	c.br = bufio.NewReader(nc)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	if _, err := nc.Write(c.f.AppendRequest(nil, req, 1)); err != nil {
		return false
	}
	_, err := c.readFrame()
	return err == nil
}

func dialFrom(t *testing.T, addr, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func TestMaxConnectionsClosesTheExtraConnection(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxConnections = 3 })
	var open []net.Conn
	for i := range 3 {
		nc := dialFrom(t, ts.addr, "127.0.0.1")
		if !apiVersionsOK(t, nc) {
			t.Fatalf("connection %d of 3 refused", i+1)
		}
		open = append(open, nc)
	}
	if apiVersionsOK(t, dialFrom(t, ts.addr, "127.0.0.1")) {
		t.Fatal("the 4th connection was served with max.connections=3")
	}
	open[0].Close()
	harness.WaitFor(t, "a slot after a close", 10*time.Second, func() bool { return apiVersionsOK(t, dialFrom(t, ts.addr, "127.0.0.1")) })
}

func TestMaxConnectionsPerIP(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.MaxConnectionsPerIP = 2
		c.MaxConnectionsPerIPOverrides = map[string]int{"127.0.0.2": 3, "127.0.0.3": 0}
	})
	for _, tc := range []struct {
		ip    string
		limit int
	}{{"127.0.0.1", 2}, {"127.0.0.2", 3}, {"127.0.0.3", 0}} {
		for i := range tc.limit {
			if !apiVersionsOK(t, dialFrom(t, ts.addr, tc.ip)) {
				t.Fatalf("%s: connection %d of %d refused", tc.ip, i+1, tc.limit)
			}
		}
		if apiVersionsOK(t, dialFrom(t, ts.addr, tc.ip)) {
			t.Fatalf("%s: connection %d served, limit %d", tc.ip, tc.limit+1, tc.limit)
		}
	}
}

// A 10 MiB produce still works, also when the budget admits only one
// such frame at a time: the second waits instead of failing.
func TestLargeProduceWithinTheBudget(t *testing.T) {
	ts := newTestServerWith(t, bigMessages, func(c *Config) {
		c.MaxRequestBytes = 16 << 20
		c.QueuedMaxRequestBytes = 16 << 20
	})
	val := strings.Repeat("v", 10<<20)
	data := batch(t, records.BatchOptions{}, val)
	var wg sync.WaitGroup
	codes := make([]int16, 2)
	for i := range codes {
		c := ts.dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = -100
			req := produceReq("large", 0, -1, data)
			req.SetVersion(9)
			corr := c.send(req)
			resp := req.ResponseKind()
			resp.SetVersion(9)
			frame, err := c.readFrame()
			if err != nil || int32(binary.BigEndian.Uint32(frame)) != corr || resp.ReadFrom(frame[5:]) != nil { // v9: flexible header tags
				return
			}
			codes[i] = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		}()
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("10 MiB produces answered %v, want both 0", codes)
	}
	c := ts.dial(t)
	req := fetchReq("large", 0, 0, 0, 1)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 32 << 20
	p := do[*kmsg.FetchResponse](c, req, 11).Topics[0].Partitions[0]
	if got := fetchValues(t, p, 0); len(got) != 2 || got[0] != val || got[1] != val {
		t.Fatalf("read back %d records, want both", len(got))
	}
	if n := ts.budget.inUse(); n != 0 {
		t.Fatalf("%d bytes of budget still reserved", n)
	}
}

// A frame that does not fit waits (its connection stops reading) until
// the one holding the budget goes away, then is served.
func TestFrameWaitsForBudget(t *testing.T) {
	ts := newTestServerWith(t, bigMessages, func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.QueuedMaxRequestBytes = 1 << 20
	})
	hog := dialFrom(t, ts.addr, "127.0.0.1")
	startFrame(t, hog, 900<<10, make([]byte, 100<<10))
	harness.WaitFor(t, "the first frame to reserve", 10*time.Second, func() bool { return ts.budget.inUse() == 900<<10 })

	c := ts.dial(t)
	req := produceReq("wait", 0, -1, batch(t, records.BatchOptions{}, strings.Repeat("w", 800<<10)))
	req.SetVersion(9)
	corr := c.send(req)
	harness.WaitFor(t, "the second frame to wait", 10*time.Second, func() bool { return ts.budget.waiting() == 1 })
	hog.Close()
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	c.recv(corr, resp)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after the wait: error %d", code)
	}
}

// A frame trickling in is cut off after RequestReadTimeout and its
// reservation returned.
func TestSlowFrameIsClosedAndReleasesBudget(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.RequestReadTimeout = 200 * time.Millisecond })
	c := ts.dial(t)
	startFrame(t, c.nc, 1<<20, make([]byte, 100<<10))
	harness.WaitFor(t, "the frame to reserve", 10*time.Second, func() bool { return ts.budget.inUse() == 1<<20 })
	c.expectClosed()
	harness.WaitFor(t, "the reservation to be returned", 10*time.Second, func() bool { return ts.budget.inUse() == 0 })
}

func TestMemoryBudget(t *testing.T) {
	b := newMemoryBudget(100, nil)
	ctx := context.Background()
	r1, _ := b.acquire(ctx, 60)
	got := make(chan func(), 1)
	go func() { r, _ := b.acquire(ctx, 60); got <- r }()
	harness.WaitFor(t, "the second acquire to wait", 10*time.Second, func() bool { return b.waiting() == 1 })
	// FIFO: a small request behind the waiting one waits too.
	cctx, cancel := context.WithCancel(ctx)
	small := make(chan error, 1)
	go func() { _, err := b.acquire(cctx, 10); small <- err }()
	harness.WaitFor(t, "the small acquire to queue", 10*time.Second, func() bool { return b.waiting() == 2 })
	cancel()
	if err := <-small; err == nil {
		t.Fatal("cancelled acquire succeeded")
	}
	r1()
	r1() // twice is harmless
	r2 := <-got
	if b.inUse() != 60 {
		t.Fatalf("in use %d, want 60", b.inUse())
	}
	r2()
	// Larger than the budget: admitted alone, as the whole budget.
	r3, err := b.acquire(ctx, 1<<40)
	if err != nil || b.inUse() != 100 {
		t.Fatalf("oversized acquire: err %v, in use %d", err, b.inUse())
	}
	r3()
}

func TestConfigValidatesLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"budget below max request", Config{QueuedMaxRequestBytes: 1 << 20}},
		{"negative per-ip", Config{MaxConnectionsPerIP: -1}},
		{"negative max.connections", Config{MaxConnections: -1}},
		{"tiny fetch.max.bytes", Config{FetchMaxBytes: 10}},
		{"negative fetch session eviction age", Config{FetchSessionEvictionAge: -time.Second}},
		{"override host name", Config{MaxConnectionsPerIPOverrides: map[string]int{"example.com": 1}}},
	} {
		tc.cfg.Defaults()
		if err := tc.cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	var ok Config
	ok.Defaults()
	if err := ok.Validate(); err != nil || ok.MaxConnections < 1 || ok.QueuedMaxRequestBytes < int64(ok.MaxRequestBytes) {
		t.Fatalf("defaults: %v, %+v", err, ok)
	}
	m, err := ParseConnectionOverrides("127.0.0.1:5, [::1]:7,::2:8")
	if err != nil || m["127.0.0.1"] != 5 || m["::1"] != 7 || m["::2"] != 8 {
		t.Fatalf("overrides %v, %v", m, err)
	}
	if _, err := ParseConnectionOverrides("host:5"); err == nil {
		t.Fatal("host name accepted")
	}
}

// Shutdown does not wait for a connection that waits for budget, nor for
// a frame that stopped arriving.
func TestShutdownWithFramesWaitingForBudget(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.QueuedMaxRequestBytes = 1 << 20
	})
	startFrame(t, dialFrom(t, ts.addr, "127.0.0.1"), 900<<10, make([]byte, 100<<10))
	harness.WaitFor(t, "the first frame to reserve", 10*time.Second, func() bool { return ts.budget.inUse() == 900<<10 })
	startFrame(t, dialFrom(t, ts.addr, "127.0.0.1"), 900<<10, make([]byte, 100<<10))
	harness.WaitFor(t, "the second frame to wait", 10*time.Second, func() bool { return ts.budget.waiting() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := ts.budget.inUse(); n != 0 {
		t.Fatalf("%d bytes of budget reserved after shutdown", n)
	}
}
