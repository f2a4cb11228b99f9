package kafka

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// A client that reads its responses late fills the socket: the reader's
// direct writes go out in part or not at all and the writer finishes them.
// Every response still arrives whole and in request order.
func TestResponsesStayWholeAndInOrderWhenTheClientReadsLate(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.broker.CreateTopic(server.TopicSpec{Name: "wide", Partitions: 200, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	do[*kmsg.ApiVersionsResponse](c, kmsg.NewPtrApiVersionsRequest(), 3) // accepted
	// A small send buffer on the server's side fills after a few
	// responses (a small receive buffer would, but TCP crawls then).
	ts.mu.Lock()
	for sc := range ts.mu.conns {
		if err := sc.nc.(*net.TCPConn).SetWriteBuffer(8 << 10); err != nil {
			t.Fatal(err)
		}
	}
	ts.mu.Unlock()
	// All requests go first (they are small: the server's receive buffer
	// holds them), so the responses fill the socket before any is read.
	const requests = 400 // of about 6 KiB each: more than the socket buffers hold
	var sent []int32
	for i := 0; i < requests; i++ {
		var req kmsg.Request = kmsg.NewPtrApiVersionsRequest()
		if i%4 != 0 {
			md := kmsg.NewPtrMetadataRequest()
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("wide")}}
			req = md
		}
		req.SetVersion(min(req.MaxVersion(), 9))
		sent = append(sent, c.send(req))
	}
	i := 0
	for _, corr := range sent {
		frame, err := c.readFrame()
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			t.Fatalf("response %d has correlation id %d, want %d", i, got, corr)
		}
		if i%4 != 0 {
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 9
			if err := resp.ReadFrom(frame[5:]); err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 200 {
				t.Fatalf("metadata response %d: %v", i, err)
			}
		}
		i++
	}
	if i != requests {
		t.Fatalf("%d responses, want %d", i, requests)
	}
}

// writeDirect never waits for the socket: against a peer that reads
// nothing it writes until the socket is full, then hands back the rest,
// and what it wrote is exactly what the peer then reads.
func TestWriteDirectNeverWaitsForTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &conn{nc: nc}
	if c.raw, err = nc.(*net.TCPConn).SyscallConn(); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = byte(i / 7)
	}
	var wrote []byte
	full := make(chan []byte, 1)
	go func() {
		for range 10000 { // 640 MiB: far more than any socket buffer
			rest := c.writeDirect(chunk)
			wrote = append(wrote, chunk[:len(chunk)-len(rest)]...)
			if rest != nil {
				full <- rest
				return
			}
		}
		full <- nil
	}()
	var rest []byte
	select {
	case rest = <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("writeDirect blocked on a full socket")
	}
	if rest == nil {
		t.Fatal("the socket never filled")
	}
	if len(rest) > len(chunk) || !bytes.Equal(rest, chunk[len(chunk)-len(rest):]) {
		t.Fatalf("rest of %d bytes is not the unwritten tail of the %d-byte buffer", len(rest), len(chunk))
	}
	nc.Close()
	got, err := io.ReadAll(peer)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wrote) {
		t.Fatalf("peer read %d bytes, writeDirect reported %d written", len(got), len(wrote))
	}
}
