package zookeeper

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestCloseEndsWhenTheServerNeverAnswersTheClose: a close request lost on
// the way (here swallowed by a proxy in front of a real ZooKeeper) leaves
// the library pinging a live connection; Close still returns and its
// goroutines end, so a stopping broker exits.
func TestCloseEndsWhenTheServerNeverAnswersTheClose(t *testing.T) {
	srv := zks.Require(t)
	proxy := startCloseSwallower(t, srv.Addr())
	c := open(t, proxy+testChroot(t), 6*time.Second)
	if _, err := c.GetOrCreateClusterID(sampleUUID.String()); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(closeGrace + c.opTimeout + 5*time.Second):
		t.Fatal("Close did not return")
	}
	if _, stillOpen := <-c.Events(); stillOpen {
		t.Fatal("Events still open after Close: its goroutines did not end")
	}
}

// startCloseSwallower is a TCP proxy to addr that forwards every client
// frame but closeSession (opcode -11), and answers nothing in its place.
func startCloseSwallower(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			t.Cleanup(func() { client.Close(); server.Close() })
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(client, server) }()
			go func() { defer wg.Done(); forwardButClose(client, server) }()
		}
	}()
	return ln.Addr().String()
}

const opCloseSession = -11

func forwardButClose(from io.Reader, to io.Writer) {
	first := true // the connect request has no request header
	for {
		var size [4]byte
		if _, err := io.ReadFull(from, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 1<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(from, frame[4:]); err != nil {
			return
		}
		if !first && n >= 8 && int32(binary.BigEndian.Uint32(frame[8:12])) == opCloseSession {
			continue
		}
		first = false
		if _, err := to.Write(frame); err != nil {
			return
		}
	}
}
