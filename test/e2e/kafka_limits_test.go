package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// limitsNode runs `ferry serve` with the Kafka limits set through a
// server.properties file, as an operator would.
func limitsNode(t *testing.T) *harness.Node {
	t.Helper()
	props := filepath.Join(t.TempDir(), "server.properties")
	err := os.WriteFile(props, []byte(strings.Join([]string{
		"max.connections.per.ip.overrides=127.0.0.2:2",
		"fetch.max.bytes=3145728",
		"message.max.bytes=2097152",
		"queued.max.request.bytes=209715200",
	}, "\n")), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return harness.Start(t, "--config", props)
}

// rawKafka writes one kmsg request on nc and returns the response frame
// (correlation id first); the body is read only when keep is set.
func rawKafka(t *testing.T, nc net.Conn, req kmsg.Request, keep bool) (int, []byte, error) {
	t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e"))
	if _, err := nc.Write(f.AppendRequest(nil, req, 1)); err != nil {
		return 0, nil, err
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if !keep {
		_, err := io.CopyN(io.Discard, nc, int64(n))
		return n, nil, err
	}
	frame := make([]byte, n)
	_, err := io.ReadFull(nc, frame)
	return n, frame, err
}

func dialKafkaFrom(t *testing.T, node *harness.Node, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", node.KafkaAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func apiVersionsAnswered(t *testing.T, nc net.Conn) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	_, _, err := rawKafka(t, nc, req, false)
	return err == nil
}

// Before: 400 connections each sending an 8-byte header that declares
// 100 MiB made the node reserve 40 GiB (100 MiB each, measured in
// process with 20 connections: 2,002 MiB).
func TestKafkaFrameHeadersKeepHeapSmall(t *testing.T) {
	node := limitsNode(t)
	base := scrapeMetrics(t, node).value("go_memstats_heap_inuse_bytes")
	const conns = 400
	for range conns {
		nc := dialKafkaFrom(t, node, "127.0.0.1")
		h := binary.BigEndian.AppendUint32(nil, 100<<20)
		h = append(h, 0, 0, 0, 9, 0, 0, 0, 1, 0) // Produce v9, correlation 1, …
		if _, err := nc.Write(h); err != nil {
			t.Fatal(err)
		}
	}
	peak := 0.0
	for deadline := time.Now().Add(20 * time.Second); ; {
		s := scrapeMetrics(t, node)
		peak = max(peak, s.value("go_memstats_heap_inuse_bytes"))
		if s.value("ferry_open_connections", "listener=kafka") >= conns || time.Now().After(deadline) {
			break
		}
	}
	// A few more scrapes once every connection is open: the readers have
	// had their headers since before the last of them connected.
	for range 10 {
		peak = max(peak, scrapeMetrics(t, node).value("go_memstats_heap_inuse_bytes"))
	}
	growth := (peak - base) / (1 << 20)
	t.Logf("%d connections declaring 100 MiB frames: heap in use %.1f -> %.1f MiB (+%.1f MiB)", conns, base/(1<<20), peak/(1<<20), growth)
	if growth > 64 {
		t.Fatalf("heap grew %.0f MiB, want < 64 MiB", growth)
	}
	if r := scrapeMetrics(t, node).value("ferry_request_memory_reserved_bytes", "listener=kafka"); r != 0 {
		t.Fatalf("frames that sent 5 bytes reserved %v bytes of queued.max.request.bytes", r)
	}
	if !apiVersionsAnswered(t, dialKafkaFrom(t, node, "127.0.0.1")) {
		t.Fatal("a fresh connection is not served")
	}
}

// A frame that has reserved budget shows in the gauges, and so does a
// connection waiting behind it.
func TestKafkaRequestMemoryGauges(t *testing.T) {
	node := harness.Start(t, "--socket-request-max-bytes=1048576", "--queued-max-request-bytes=1048576")
	for range 2 {
		nc := dialKafkaFrom(t, node, "127.0.0.1")
		h := binary.BigEndian.AppendUint32(nil, 900<<10)
		h = append(h, 0, 0, 0, 9)
		if _, err := nc.Write(append(h, make([]byte, 100<<10)...)); err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, "900 KiB reserved and one connection waiting for the budget", 10*time.Second, func() bool {
		s := scrapeMetrics(t, node)
		return s.value("ferry_request_memory_reserved_bytes", "listener=kafka") == 900<<10 &&
			s.value("ferry_request_memory_waiting_connections", "listener=kafka") == 1
	})
}

// Before: the same partition listed 50 times with MaxBytes 2^31-1
// answered 50 copies (209,732,127 bytes for 4 MiB of data).
func TestKafkaFetchDuplicatesAndFetchMaxBytes(t *testing.T) {
	node := limitsNode(t)
	nc := dialKafkaFrom(t, node, "127.0.0.1")
	val := strings.Repeat("x", 1<<20)
	for range 4 {
		var b records.Builder
		b.Add(records.Record{Value: []byte(val), Timestamp: time.Now().UnixMilli()})
		data, err := b.AppendBatch(nil, records.BatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "big", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: data}}}}
		req.SetVersion(9)
		if _, _, err := rawKafka(t, nc, req, false); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MinBytes = 1<<31-1, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	for range 50 {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1<<31 - 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	req.SetVersion(11)
	n, frame, err := rawKafka(t, nc, req, true)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	t.Logf("50 duplicate partitions, MaxBytes 2^31-1: %d-byte answer, %d partition(s)", n, len(resp.Topics[0].Partitions))
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%d topics / %d partitions answered, want the partition once", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got == 0 || got > 3<<20 {
		t.Fatalf("%d record bytes, want 1 to fetch.max.bytes (3 MiB)", got)
	}
}

func TestKafkaConnectionsPerIPOverride(t *testing.T) {
	node := limitsNode(t)
	before := scrapeMetrics(t, node)
	for i := range 2 {
		if !apiVersionsAnswered(t, dialKafkaFrom(t, node, "127.0.0.2")) {
			t.Fatalf("connection %d of 2 from 127.0.0.2 refused", i+1)
		}
	}
	if apiVersionsAnswered(t, dialKafkaFrom(t, node, "127.0.0.2")) {
		t.Fatal("a 3rd connection from 127.0.0.2 was served; its override is 2")
	}
	if !apiVersionsAnswered(t, dialKafkaFrom(t, node, "127.0.0.1")) {
		t.Fatal("127.0.0.1 (no override, no per-ip default) refused")
	}
	after := scrapeMetrics(t, node)
	expectDelta(t, before, after, 1, "ferry_connections_rejected_total", "listener=kafka", "reason=max.connections.per.ip")
}
