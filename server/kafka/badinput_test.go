package kafka

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
)

// rawFrame is a request frame: size prefix, then header and body bytes.
func rawFrame(key, version int16, corr int32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, rest...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// stillServes checks a fresh connection gets ApiVersions answered.
func stillServes(t *testing.T, ts *testServer) {
	t.Helper()
	c := ts.dial(t)
	if resp := do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions on a new connection: error %d", resp.ErrorCode)
	}
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxRequestBytes = 1 << 20 })
	bystander := ts.dial(t) // must keep working throughout
	for _, tc := range []struct {
		name  string
		bytes []byte
		close bool // close our side after writing (truncated input)
	}{
		{"truncated size", []byte{0, 0}, true},
		{"truncated body", append(binary.BigEndian.AppendUint32(nil, 100), 0, 18, 0, 0), true},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xffffff00), false},
		{"size below a header", append(binary.BigEndian.AppendUint32(nil, 4), 0, 18, 0, 0), false},
		{"oversized frame", binary.BigEndian.AppendUint32(nil, 2<<20), false},
		{"client id longer than frame", rawFrame(18, 0, 1, 0x7f, 0xff, 'a'), false},
		{"client id length -2", rawFrame(18, 0, 1, 0xff, 0xfe), false},
		{"unknown api key", rawFrame(999, 0, 1, 0, 0), false},
		{"transaction api", rawFrame(26, 0, 1, 0, 0), false},
		{"produce v13 not advertised", rawFrame(0, 13, 1, 0, 0), false},
		{"fetch v3 below range", rawFrame(1, 3, 1, 0, 0), false},
		{"huge array count", rawFrame(3, 1, 1, append([]byte{0, 0}, 0x7f, 0xff, 0xff, 0xff)...), false},
		{"huge compact array count", rawFrame(3, 12, 1, append([]byte{0, 0, 0}, 0xff, 0xff, 0xff, 0xff, 0x0f)...), false},
		{"lying string length", rawFrame(19, 7, 1, append([]byte{0, 0, 0}, 2, 0x7f)...), false},
		{"bad tagged fields", rawFrame(3, 12, 1, 0, 0, 0x05, 0x01), false},
		{"body too short", rawFrame(0, 9, 1, 0, 0, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial(t)
			if _, err := c.nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if tc.close {
				c.nc.(*net.TCPConn).CloseWrite()
			}
			c.expectClosed()
			if resp := do[*kmsg.ApiVersionsResponse](bystander, kmsg.NewPtrApiVersionsRequest(), 3); resp.ErrorCode != 0 {
				t.Fatalf("bystander connection broken")
			}
			stillServes(t, ts)
		})
	}
}

func TestPipelinedRequestsAnswerInOrder(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	var corrs []int32
	var buf []byte
	for i := 0; i < 50; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(int16(i % 13))
		c.corr++
		corrs = append(corrs, c.corr)
		buf = append(buf, c.f.AppendRequest(nil, req, c.corr)...) // it only frames into an empty dst
	}
	if _, err := c.nc.Write(buf); err != nil {
		t.Fatal(err)
	}
	for i, corr := range corrs {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(int16(i % 13))
		c.recv(corr, resp)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	c := ts.dial(t)
	do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3)
	start := time.Now()
	c.expectClosed()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("closed after %v", took)
	}
}

func TestShutdownEndsLongPollsAndWaits(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	produceOne(c, 9, "sd", batch(t, records.BatchOptions{}, "x"))
	corr := c.send(withVersion(fetchReq("sd", 0, 1, 60_000, 1), 12))
	time.Sleep(50 * time.Millisecond) // let the fetch start waiting; correctness does not depend on it
	start := time.Now()
	ts.stop(t)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %v with a long-polling fetch", took)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.recv(corr, resp) // the fetch was answered before the connection closed
	c.expectClosed()
}

func TestLargeNonProduceFramesAreRefused(t *testing.T) {
	ts := newTestServer(t) // MaxRequestBytes at its 100 MiB default
	c := ts.dial(t)
	frame := binary.BigEndian.AppendUint32(nil, maxNonProduceBytes+1)
	frame = append(frame, 0, 3, 0, 1) // Metadata v1
	if _, err := c.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	stillServes(t, ts)
}
