package kafka

import (
	"context"
	"errors"
	"fmt"
	"github.com/ferry-mq/ferry/server/features"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/kafka/fetchsession"
	"github.com/ferry-mq/ferry/server/metrics"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("kafka: server closed")

// Server serves the Kafka protocol over a broker core and a group
// coordinator. Create it with New, run Serve on one or more listeners, stop
// it with Shutdown.
type Server struct {
	broker *server.Broker
	groups *group.Coordinator
	cfg    Config
	logger *slog.Logger
	// authz decides every request's actions (authz.go); nil: ACLs off.
	authz auth.Authorizer
	// admin is the core's admin operations, at this broker only.
	admin *server.Admin
	// metrics are cfg.Metrics' children for this listener (metrics.go).
	metrics listenerMetrics
	// listeners are the configured listeners, the first the default one
	// (Serve, Addr).
	listeners []*listener

	// ctx is cancelled by Shutdown: long-polling fetches return at once.
	ctx    context.Context
	cancel context.CancelFunc
	// wg tracks every goroutine the server starts: accept loops and each
	// connection's reader and writer.
	wg sync.WaitGroup

	// fetchSessions are the incremental fetch sessions of every
	// connection (01_fetch_session.go).
	fetchSessions *fetchsession.Cache

	// denials spaces the audit log's lines for repeated refusals.
	denials deniedLog
	// budget is queued.max.request.bytes; nil when unbounded.
	budget *memoryBudget
	// framesReading counts connections inside a frame (size read, body
	// not yet complete), for tests to know every reader has started.
	framesReading atomic.Int64
	// perIPOverrides is cfg.MaxConnectionsPerIPOverrides by address.
	perIPOverrides map[netip.Addr]int

	mu struct {
		sync.Mutex
		// listeners maps each net.Listener being served to its listener.
		listeners map[net.Listener]*listener
		conns     map[*conn]struct{}
		// perIP counts open connections by client address.
		perIP map[netip.Addr]int
		// delayedCloses are connections refused by their address's
		// connection_creation_rate, held open until their timer closes
		// them (connrate.go).
		delayedCloses map[net.Conn]*time.Timer
		closed        bool
	}
}

// New checks cfg and returns a server that is not yet listening.
func New(b *server.Broker, groups *group.Coordinator, cfg Config) (*Server, error) {
	if b == nil || groups == nil {
		return nil, errors.New("kafka: New needs a broker and a group coordinator")
	}
	cfg.Defaults()
	if cfg.Features == nil {
		cfg.Features = features.NewFixed(map[string]int16{features.TransactionVersion: features.MaxTransactionVersion})
	}
	if cfg.AdvertisedAddr == "" {
		cfg.AdvertisedAddr = b.Config().AdvertisedKafkaAddr
	}
	if cfg.AdvertisedAddr == "" {
		cfg.AdvertisedAddr = cfg.Addr
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ls, err := listenersOf(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{broker: b, groups: groups, cfg: cfg, logger: cfg.Logger.With("component", "kafka"),
		metrics: newListenerMetrics(cfg.Metrics), listeners: ls,
		fetchSessions: fetchsession.New(fetchsession.Config{Slots: cfg.FetchSessionCacheSlots, EvictionAge: cfg.FetchSessionEvictionAge})}
	if cfg.ACLs != nil {
		s.authz = cfg.ACLs.Authorizer()
	}
	cfg.Metrics.AddFetchSessionSource(func() metrics.FetchSessionStat {
		sessions, partitions, evictions := s.fetchSessions.Stats()
		return metrics.FetchSessionStat{Sessions: sessions, Partitions: partitions, Evictions: evictions}
	})
	s.admin = server.NewAdmin(b, server.AdminConfig{})
	if cfg.Admin != nil {
		s.admin = cfg.Admin.AtThisBroker()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = make(map[net.Listener]*listener)
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perIP = make(map[netip.Addr]int)
	s.mu.delayedCloses = make(map[net.Conn]*time.Timer)
	if cfg.QueuedMaxRequestBytes > 0 {
		s.budget = newMemoryBudget(cfg.QueuedMaxRequestBytes, s.metrics.conns.RequestMemory)
	}
	s.perIPOverrides = make(map[netip.Addr]int, len(cfg.MaxConnectionsPerIPOverrides))
	for ip, n := range cfg.MaxConnectionsPerIPOverrides {
		s.perIPOverrides[netip.MustParseAddr(ip).Unmap()] = n // Validate parsed it
	}
	return s, nil
}

// Addr is the address the first listener is served on, or its
// configured address before that.
func (s *Server) Addr() net.Addr {
	return s.ListenerAddr(s.listeners[0].Name)
}

// ListenerAddr is the address the named listener is served on, or its
// configured address before that (nil for an unknown name).
func (s *Server) ListenerAddr(name string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln, l := range s.mu.listeners {
		if l.Name == name {
			return ln.Addr()
		}
	}
	if l := s.listenerNamed(name); l != nil {
		a, _ := net.ResolveTCPAddr("tcp", l.Addr)
		return a
	}
	return nil
}

// ListenAndServe listens on every listener's address and serves them
// until Shutdown (ErrServerClosed) or one fails.
func (s *Server) ListenAndServe() error {
	lns := make([]net.Listener, 0, len(s.listeners))
	for _, l := range s.listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return fmt.Errorf("kafka listener %s: %w", l.Name, err)
		}
		lns = append(lns, ln)
	}
	errs := make(chan error, len(lns))
	for i, ln := range lns {
		go func() { errs <- s.ServeListener(s.listeners[i].Name, ln) }()
	}
	err := <-errs
	for range len(lns) - 1 {
		<-errs
	}
	return err
}

// Serve serves the first listener on ln (see ServeListener).
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(s.listeners[0].Name, ln)
}

// ServeListener accepts connections for the named listener on ln until
// Shutdown, and then returns ErrServerClosed. It closes ln. Temporary
// accept errors are retried with a backoff from 5 ms to 1 s, as net/http
// does.
func (s *Server) ServeListener(name string, ln net.Listener) error {
	l := s.listenerNamed(name)
	if l == nil {
		ln.Close()
		return fmt.Errorf("kafka: no listener named %q", name)
	}
	if !s.trackListener(ln, l) {
		ln.Close()
		return ErrServerClosed
	}
	defer s.wg.Done() // added by trackListener
	defer s.untrackListener(ln)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing() {
				return ErrServerClosed
			}
			if !isTemporary(err) {
				return fmt.Errorf("kafka accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		if !s.waitAcceptRates(l) {
			c.Close()
			return ErrServerClosed
		}
		s.startConn(c, l)
	}
}

// ServeConn serves nc as a connection accepted on the named listener,
// its handshakes (TLS, SASL) and limits included: this process's own
// Kafka clients (the HTTP gateway's forwarding client, the _schemas
// store) reach this broker through it over net.Pipe, never through a
// socket to its own listener. It returns once nc is being served, or
// with ErrServerClosed after Shutdown (nc closed).
func (s *Server) ServeConn(listener string, nc net.Conn) error {
	l := s.listenerNamed(listener)
	if l == nil {
		nc.Close()
		return fmt.Errorf("kafka: no listener named %q", listener)
	}
	if s.closing() {
		nc.Close()
		return ErrServerClosed
	}
	s.startConn(nc, l) // closes nc if Shutdown began meanwhile
	return nil
}

// isTemporary: errors worth retrying (EMFILE, ECONNABORTED, timeouts).
func isTemporary(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var ne interface{ Temporary() bool }
	if errors.As(err, &ne) && ne.Temporary() {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func (s *Server) trackListener(ln net.Listener, l *listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.mu.listeners[ln] = l
	s.wg.Add(1) // under mu, so Shutdown's Wait never races a late Add
	return true
}

func (s *Server) untrackListener(ln net.Listener) {
	s.mu.Lock()
	delete(s.mu.listeners, ln)
	s.mu.Unlock()
	ln.Close()
}

func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

func (s *Server) startConn(nc net.Conn, l *listener) {
	if s.overIPRate(nc, l) {
		return
	}
	c := newConn(s, nc, l)
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if reason := s.admitLocked(c); reason != "" {
		s.mu.Unlock()
		nc.Close() // as Kafka: no response, the client sees the connection closed
		s.metrics.conns.Rejected(reason)
		s.logger.Debug("connection refused", "remote", c.remote, "reason", reason)
		return
	}
	s.mu.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	s.metrics.conns.Opened()
	go c.readLoop()
	go c.writeLoop()
}

// admitLocked counts c against max.connections and its address's cap,
// or names the limit it exceeds. s.mu must be held.
func (s *Server) admitLocked(c *conn) (refused string) {
	if len(s.mu.conns) >= s.cfg.MaxConnections {
		return "max.connections"
	}
	if !c.ip.IsValid() {
		return ""
	}
	limit, overridden := s.perIPOverrides[c.ip]
	if !overridden {
		limit = s.cfg.MaxConnectionsPerIP
	}
	if (overridden || limit > 0) && s.mu.perIP[c.ip] >= limit {
		return "max.connections.per.ip"
	}
	s.mu.perIP[c.ip]++
	return ""
}

func (s *Server) forgetConn(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	if c.ip.IsValid() {
		if s.mu.perIP[c.ip]--; s.mu.perIP[c.ip] <= 0 {
			delete(s.mu.perIP, c.ip)
		}
	}
	s.mu.Unlock()
	s.metrics.conns.Closed()
}

// Shutdown stops accepting, lets each connection finish the request it is
// serving (a long-polling fetch returns at once with what it has), writes
// the responses, and closes the connections. When ctx ends first it closes
// them at once; either way it returns after every goroutine has stopped.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.closed = true
	for ln := range s.mu.listeners {
		ln.Close()
	}
	for c := range s.mu.conns {
		c.stopReading()
	}
	s.closeDelayedLocked()
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// Close closes every listener and connection at once and waits.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
