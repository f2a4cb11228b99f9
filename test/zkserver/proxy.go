package zkserver

import (
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy in front of one address, so a test can
// take the network away from ONE client (the one that dials the proxy)
// while the server and other clients keep running: Cut drops its
// connections and refuses new ones until Restore, which is how a test
// makes that client's ZooKeeper session expire; Pause holds every byte
// (connections stay open, like a partition TCP has not noticed) until
// Resume.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	cut     bool
	paused  bool
	resumed *sync.Cond // broadcast when paused turns false, or on Cut and Close
	closed  bool
	conns   map[net.Conn]struct{} // both sides of every open pair
}

// NewProxy listens on 127.0.0.1:0 and forwards to target; the test's
// cleanup closes it.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.resumed = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and closes new ones at once, until
// Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.resumed.Broadcast() // held chunks give up: their connections are gone
	for c := range p.conns {
		c.Close()
	}
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Pause stops forwarding bytes in both directions; open connections
// stay open and new ones are accepted, but nothing passes until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume forwards the held bytes and what follows.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	p.resumed.Broadcast()
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.resumed.Broadcast()
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
}

// waitForward blocks while the proxy is paused; false once it is closed
// or cut.
func (p *Proxy) waitForward() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.paused && !p.closed && !p.cut {
		p.resumed.Wait()
	}
	return !p.closed && !p.cut
}

// copyGated is io.Copy that holds each chunk while the proxy is paused.
func (p *Proxy) copyGated(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitForward() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	defer p.untrack(client, server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		p.copyGated(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// track registers a pair unless the proxy is cut.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) untrack(a, b net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, a)
	delete(p.conns, b)
}
