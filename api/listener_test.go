package api

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLimitListenerHoldsConnectionsBeyondTheCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted with two open and a cap of 2")
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second close must not free a second slot
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the third connection was not accepted after one closed")
	}
	second.Close()
}

func TestHTTPServerLimits(t *testing.T) {
	cfg := Config{}
	srv := NewHTTPServer("", http.NotFoundHandler(), cfg)
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != 60*time.Second || srv.IdleTimeout != 120*time.Second ||
		srv.MaxHeaderBytes != 64<<10 || srv.WriteTimeout <= 30*time.Second {
		t.Errorf("server limits: header %v read %v idle %v write %v max header %d", srv.ReadHeaderTimeout,
			srv.ReadTimeout, srv.IdleTimeout, srv.WriteTimeout, srv.MaxHeaderBytes)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(LimitListener(ln, 4))
	defer srv.Close()
	raw := "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 128<<10) + "\r\n\r\n"
	if status, _ := rawExchange(t, ln.Addr().String(), raw, false); status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("128 KiB of headers: %d, want 431", status)
	}
}
