package kafka

// Connection creation rates (KIP-612), enforced where connections are
// accepted; the decisions are server/quota's.
//
// max.connection.creation.rate (broker-wide, every listener but the
// inter-broker one when there are several) and a listener's own rate
// count every connection; one over either is accepted late: the accept
// loop waits out the longer delay (at most a second) before taking it in,
// so connections pile up in the kernel's backlog meanwhile, as Kafka's
// acceptor does.
//
// An ip entity's connection_creation_rate (or the <default> ip's) is then
// checked against the connection's address, on every listener, the
// inter-broker one too, as Kafka checks it. A connection over it is
// counted in ferry_connections_rejected_total{reason="connection_creation_rate"},
// not counted against the rates (Kafka un-records it), and, as in Kafka,
// held open unread until the address may connect again (at most a
// second) and then closed: the client sees its request go unanswered and
// the connection close, and reconnects no sooner. At most
// maxDelayedCloses are held at once; past that, one is closed at once, so
// a flood cannot hold descriptors without bound.

import (
	"net"
	"time"
)

// maxDelayedCloses bounds the refused connections held open.
const maxDelayedCloses = 1024

// waitAcceptRates counts a new connection against l's connection creation
// rates and waits the delay the longest one asks; false: the server is
// shutting down.
func (s *Server) waitAcceptRates(l *listener) bool {
	if len(l.acceptRates) == 0 {
		return true
	}
	now := time.Now()
	var wait time.Duration
	for _, r := range l.acceptRates {
		wait = max(wait, r.Record(now))
	}
	if wait <= 0 {
		return true
	}
	s.metrics.conns.AcceptThrottled(wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// overIPRate reports whether nc's address is over its
// connection_creation_rate, and if so takes it back from l's rates and
// closes nc after the delay.
func (s *Server) overIPRate(nc net.Conn, l *listener) bool {
	if !s.cfg.Quotas.LimitsConnections() {
		return false
	}
	ta, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return false
	}
	now := time.Now()
	refused, closeAfter := s.cfg.Quotas.AdmitConnection(ta.AddrPort().Addr(), now)
	if !refused {
		return false
	}
	for _, r := range l.acceptRates {
		r.Unrecord(now)
	}
	s.metrics.conns.Rejected("connection_creation_rate")
	s.logger.Debug("connection refused", "remote", nc.RemoteAddr().String(), "reason", "connection_creation_rate", "close_after", closeAfter)
	s.closeLater(nc, closeAfter)
	return true
}

// closeLater closes nc after d, or at once when the server is closing or
// already holds maxDelayedCloses.
func (s *Server) closeLater(nc net.Conn, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed || d <= 0 || len(s.mu.delayedCloses) >= maxDelayedCloses {
		nc.Close()
		return
	}
	// The timer's callback takes s.mu, which is held until it is stored.
	s.mu.delayedCloses[nc] = time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.mu.delayedCloses, nc)
		s.mu.Unlock()
		nc.Close()
	})
}

// closeDelayedLocked closes every held connection at once (Shutdown). s.mu
// is held.
func (s *Server) closeDelayedLocked() {
	for nc, t := range s.mu.delayedCloses {
		t.Stop()
		nc.Close()
	}
	clear(s.mu.delayedCloses)
}
