package forward

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"

	"github.com/ferry-mq/ferry/server"
)

// A broker that stops answering without closing its connections (frozen
// by SIGSTOP or a long GC pause, cut off by a partition that drops
// packets) keeps every request sent to it waiting: its kernel accepts new
// connections and buffers what they carry. franz-go gives such a request
// up only at its read deadline (a produce's timeout plus 10 s), and while
// it waits:
//
//   - a partition whose records are in flight to it sends nothing to its
//     new leader: franz-go starts a partition's requests on a new broker
//     only once those on the old one have finished, so that sequence
//     numbers stay in order;
//   - a metadata refresh franz-go sends to it (it asks the brokers it knows
//     in turn) holds up every refresh after it, and with them the move of
//     every partition to its new leader.
//
// So one frozen peer stalled forwards to the live ones for up to 20 s,
// longer than it took the cluster to elect new leaders (issue 23). The
// cluster knows better than a timeout: once the controller declares a
// broker dead (its ZooKeeper session expired) and tells this one
// (UpdateMetadata's live brokers), nothing sent to it is worth waiting
// for. The guard below closes the connections to such a broker, which
// fails what is in flight on them at once (franz-go retries it, the
// idempotent producer through the new leader with the same sequence
// numbers, so a record the frozen broker had appended is not written
// twice), and refuses new connections to it until the controller lists it
// as live again.

// The guard also keeps this process's clients off this broker's own
// listener: the callers serve what is addressed to this broker in process
// (the core's local paths), but franz-go may still choose it for a
// metadata refresh, send the records of a partition whose leadership
// moved here since the core routed them (the idempotent producer's
// retry, whose sequence numbers let this broker recognise a record the
// old leader had written), or lead the _schemas topic here. Those dials
// become in-process connections to this broker (dialSelf, net.Pipe to
// its Kafka server), or, without one, are refused as a dial error, which
// franz-go answers by trying the next broker.

// liveGuard tracks the connections a franz-go client opens, by address,
// and refuses or closes those to brokers the cluster view says are not
// live. Safe for concurrent use.
type liveGuard struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// dialSelf connects to this broker in process (nil: refused).
	dialSelf func(ctx context.Context, network, addr string) (net.Conn, error)
	// selfID is this broker's id: its addresses in each view join self.
	selfID int32

	mu struct {
		sync.Mutex
		// self: addresses of this broker's own listeners, the configured
		// ones and those the views list for it. Never down: a view that
		// leaves this broker out (its own registration flapping) must not
		// cut the clients that still reach it (the _schemas store).
		self map[string]bool
		// down: addresses of brokers once live, absent from the last view.
		down map[string]bool
		// live: addresses of the brokers the last view listed.
		live  map[string]bool
		conns map[string]map[*guardedConn]struct{}
	}
}

func newLiveGuard(dial, dialSelf func(ctx context.Context, network, addr string) (net.Conn, error), selfID int32, self []string) *liveGuard {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	g := &liveGuard{dial: dial, dialSelf: dialSelf, selfID: selfID}
	g.mu.self = map[string]bool{}
	for _, s := range self {
		g.mu.self[s] = true
	}
	g.mu.down = map[string]bool{}
	g.mu.live = map[string]bool{}
	g.mu.conns = map[string]map[*guardedConn]struct{}{}
	return g
}

// errSelfDial: a client chose this broker's own listener, and there is
// no in-process way to it.
var errSelfDial = errors.New("this broker's own listener: its requests are served in process")

// Dial connects to addr: in process when it is this broker's, refused
// when it is a broker the cluster declared dead.
func (g *liveGuard) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	self, down := g.mu.self[addr], g.mu.down[addr]
	g.mu.Unlock()
	if self {
		if g.dialSelf != nil {
			return g.dialSelf(ctx, network, addr)
		}
		// An *net.OpError of a dial: franz-go skips to the next broker
		// (a metadata refresh) or refreshes its metadata (a produce).
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%s: %w", addr, errSelfDial)}
	}
	if down {
		return nil, fmt.Errorf("%w: the broker at %s is not live in the cluster's metadata", server.ErrLeaderNotAvailable, addr)
	}
	c, err := g.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	gc := &guardedConn{Conn: c, guard: g, addr: addr}
	g.mu.Lock()
	if g.mu.down[addr] { // declared dead while we dialled
		g.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("%w: the broker at %s is not live in the cluster's metadata", server.ErrLeaderNotAvailable, addr)
	}
	if g.mu.conns[addr] == nil {
		g.mu.conns[addr] = map[*guardedConn]struct{}{}
	}
	g.mu.conns[addr][gc] = struct{}{}
	g.mu.Unlock()
	return gc, nil
}

// SetLive takes the cluster view's live brokers: connections to brokers
// no longer among them are closed, and dials to them refused until they
// are again.
func (g *liveGuard) SetLive(brokers []server.ClusterBroker) {
	g.mu.Lock()
	for _, b := range brokers {
		if b.ID == g.selfID {
			maps.Copy(g.mu.self, liveAddrs([]server.ClusterBroker{b}))
		}
	}
	live := liveAddrs(brokers)
	down := nowDown(g.mu.live, g.mu.down, live)
	for addr := range g.mu.self {
		delete(down, addr)
	}
	var doomed []*guardedConn
	for addr := range down {
		for c := range g.mu.conns[addr] {
			doomed = append(doomed, c)
		}
		delete(g.mu.conns, addr)
	}
	g.mu.live, g.mu.down = live, down
	g.mu.Unlock()
	for _, c := range doomed {
		c.Conn.Close() // not c.Close: the map entry is gone already
	}
}

// liveAddrs is every listener address of brokers.
func liveAddrs(brokers []server.ClusterBroker) map[string]bool {
	out := map[string]bool{}
	for _, b := range brokers {
		out[net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))] = true
		for _, ep := range b.Endpoints {
			out[net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))] = true
		}
	}
	return out
}

// nowDown is the addresses that are down given the last view's live and
// down ones and the new view's live ones: those that were live or down
// and are not live now. An address never seen live (a seed before the
// first view) is never down.
func nowDown(wasLive, wasDown, live map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, known := range []map[string]bool{wasLive, wasDown} {
		for addr := range known {
			if !live[addr] {
				out[addr] = true
			}
		}
	}
	return out
}

func (g *liveGuard) forget(c *guardedConn) {
	g.mu.Lock()
	delete(g.mu.conns[c.addr], c)
	if len(g.mu.conns[c.addr]) == 0 {
		delete(g.mu.conns, c.addr)
	}
	g.mu.Unlock()
}

// guardedConn is a connection the guard can close.
type guardedConn struct {
	net.Conn
	guard *liveGuard
	addr  string
	once  sync.Once
}

func (c *guardedConn) Close() error {
	c.once.Do(func() { c.guard.forget(c) })
	return c.Conn.Close()
}
