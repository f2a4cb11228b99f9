package forward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
)

// silentBroker accepts connections and never answers, as a frozen
// broker's kernel does.
func silentBroker(t *testing.T) (server.ClusterBroker, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	return server.ClusterBroker{ID: 2, Host: "127.0.0.1", Port: int32(addr.Port)}, ln.Addr().String()
}

// A read waiting on a silent broker fails as soon as the view stops
// listing it; dials to it are refused until it is listed again.
func TestGuardCutsABrokerDeclaredDead(t *testing.T) {
	b, addr := silentBroker(t)
	g := newLiveGuard(nil, nil, 1, []string{"127.0.0.1:1"})
	ctx := context.Background()
	g.SetLive([]server.ClusterBroker{b})
	c, err := g.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	select {
	case err := <-read:
		t.Fatalf("a silent broker answered: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.SetLive(nil) // the controller declared it dead
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the read waiting on a dead broker returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read waiting on a dead broker still waits")
	}
	if _, err := g.Dial(ctx, "tcp", addr); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("dial to a dead broker: %v", err)
	}
	g.SetLive([]server.ClusterBroker{{ID: 1, Host: "127.0.0.1", Port: 1, Endpoints: []server.Endpoint{{Listener: "EXTERNAL", Host: "localhost", Port: 3}}}})
	g.SetLive(nil)
	if g.mu.down["127.0.0.1:1"] || g.mu.down["localhost:3"] {
		t.Fatal("this broker's own listener is down")
	}
	g.SetLive([]server.ClusterBroker{b})
	c2, err := g.Dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial to a broker live again: %v", err)
	}
	c2.Close()
}

// Which addresses are down: those seen live (or down) before and absent
// now; an address never seen live is not (a seed before the first view).
func TestNowDown(t *testing.T) {
	set := func(addrs ...string) map[string]bool {
		m := map[string]bool{}
		for _, a := range addrs {
			m[a] = true
		}
		return m
	}
	for i, c := range []struct {
		wasLive, wasDown, live map[string]bool
		want                   []string
	}{
		{set(), set(), set("a", "b"), nil},
		{set("a", "b"), set(), set("a"), []string{"b"}},
		{set("a"), set("b"), set("a"), []string{"b"}},
		{set("a"), set("b"), set("a", "b"), nil},
		{set("a", "b"), set("c"), set(), []string{"a", "b", "c"}},
	} {
		got := nowDown(c.wasLive, c.wasDown, c.live)
		if len(got) != len(c.want) {
			t.Fatalf("case %d: %v, want %v", i, got, c.want)
		}
		for _, a := range c.want {
			if !got[a] {
				t.Fatalf("case %d: %v, want %v", i, got, c.want)
			}
		}
	}
	if a := liveAddrs([]server.ClusterBroker{{Host: "h", Port: 1, Endpoints: []server.Endpoint{{Host: "i", Port: 2}}}}); !a["h:1"] || !a["i:"+strconv.Itoa(2)] {
		t.Fatalf("liveAddrs: %v", a)
	}
}

// A forward that failed on its connection (the guard cut it, or no dial
// got through) may have reached its leader: it is reported as possibly
// written, while a leader's refusal is a refusal.
func TestProduceErrorsSayWhatMayHaveBeenWritten(t *testing.T) {
	cut := fmt.Errorf("unable to dial: %w", errors.New("the broker is not live"))
	if err := produceError("t", 1, cut); !errors.Is(err, server.ErrRequestTimedOut) || !strings.Contains(err.Error(), "may have been written") {
		t.Fatalf("a connection failure: %v", err)
	}
	if err := produceError("t", 1, kerr.NotLeaderForPartition); !errors.Is(err, server.ErrLeaderNotAvailable) {
		t.Fatalf("a leader's refusal: %v", err)
	}
	if err := produceError("t", 1, context.DeadlineExceeded); !errors.Is(err, server.ErrRequestTimedOut) || strings.Contains(err.Error(), "may have been written") {
		t.Fatalf("a record never sent: %v", err)
	}
}
