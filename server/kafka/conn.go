package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"
	"github.com/ferry-mq/ferry/server/tlsconf"
)

const (
	// minFrameBytes is the smallest request: api key, version, correlation
	// id and a client id length.
	minFrameBytes = 10
	// writeTimeout bounds one response write, so a client that stops
	// reading cannot hold a connection's goroutines forever.
	writeTimeout = 30 * time.Second
	// outQueue is how many encoded responses may wait for the writer.
	outQueue = 8
	// maxNonProduceBytes caps every request but Produce below
	// MaxRequestBytes. kmsg allocates an array by its declared count
	// (bounded only by the bytes left), so a frame can cost tens of times
	// its size in memory; requests other than Produce are small in
	// practice (an OffsetCommit of 100,000 partitions is about 2 MiB).
	maxNonProduceBytes = 8 << 20
	// readBufferBytes is each connection's read buffer, held while it is
	// open even when idle: small, since large frames bypass it.
	readBufferBytes = 16 << 10
)

// conn is one client connection. The reader owns nc's read side and
// serves one request at a time, as Kafka does, so responses are produced
// in request order; the writer owns the write side and sends them. out
// carries encoded responses from reader to writer; the reader closes it
// when it stops, the writer then drains it and closes nc.
type conn struct {
	s          *Server
	nc         net.Conn
	remote     string
	ip         netip.Addr // the client's address; invalid when not TCP
	out        chan outgoing
	writerDone chan struct{}
	// queued counts the responses handed to the writer and not yet
	// written: while it is 0 the writer is idle and the reader may write
	// a response itself (writeDirect). Only the reader adds, only the
	// writer subtracts, after the bytes went out.
	queued atomic.Int32
	// raw is nc's descriptor for writeDirect; nil except on plain TCP.
	raw syscall.RawConn
	// sendfile: Fetch responses may send batches from the segment files;
	// sendfileFiles counts the files open for them (maxConnSendfileFiles).
	sendfile      bool
	sendfileFiles atomic.Int32
	// stopping is set by Shutdown: the reader finishes its request and stops.
	stopping atomic.Bool
	// principal is who this connection's requests run as: Anonymous until
	// it authenticates (TLS client certificate or SASL). Only the reader
	// touches it.
	principal auth.Principal
	// protocol is the security protocol of the listener that accepted it:
	// a SASL protocol serves nothing but ApiVersions and SaslHandshake
	// before the client authenticates.
	protocol auth.SecurityProtocol
	// sasl is the SASL exchange's progress on a SASL listener (sasl.go);
	// closeAfterResponse is set by a handler whose answer must be the
	// connection's last (a failed authentication). Only the reader
	// touches either.
	sasl               saslState
	closeAfterResponse bool
	// listener is the name of the listener that accepted it, whose
	// endpoints Metadata and FindCoordinator answer.
	listener string
	// tls is nc as a TLS connection (nil on plaintext listeners); the
	// reader completes its handshake before the first request.
	tls *tls.Conn
	// mutedUntil: a client quota throttled the last response; the next
	// request is not read before this (quotas.go). Only the reader
	// touches it.
	mutedUntil time.Time
	// reqCtx is the context requests run in (requestContext), built for
	// the client id and principal beside it. Only the reader touches them.
	reqCtx          context.Context
	reqCtxClient    requestClient
	reqCtxPrincipal auth.Principal
	// parked is the time the request being served has waited in a
	// purgatory, which its request_percentage handler time leaves out.
	// Reset by the reader before each timed request.
	parked quota.Parked
}

func newConn(s *Server, nc net.Conn, l *listener) *conn {
	c := &conn{
		s:          s,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		out:        make(chan outgoing, outQueue),
		writerDone: make(chan struct{}),
		principal:  auth.Anonymous,
		protocol:   l.Protocol,
		listener:   l.Name,
	}
	// Fetch batches go out from the segment files: with sendfile on a
	// raw TCP connection; through TLS, which must encrypt them in this
	// process, read in pieces into a pooled buffer (outgoing.send; a
	// tls.Conn never sendfiles), which costs less than reading whole
	// batches into the response first.
	tcp, isTCP := nc.(*net.TCPConn)
	c.sendfile = isTCP && !s.cfg.DisableSendfile
	if l.Protocol.TLS() {
		c.tls = tls.Server(nc, l.TLS)
		c.nc = c.tls
	} else if isTCP {
		c.raw, _ = tcp.SyscallConn()
	}
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.ip = ta.AddrPort().Addr().Unmap()
	}
	return c
}

// stopReading makes the reader stop before its next request.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer c.closeOut()
	if c.tls != nil && !c.handshake() {
		return
	}
	br := bufio.NewReaderSize(c.nc, readBufferBytes)
	// Two clock reads per request when metrics are on, none when off:
	// started (request read) and finished (response written, or handed to
	// the writer), which is also when the wait for the next request starts.
	lm := c.s.metrics.conns // nil when metrics are off
	waiting := now(lm)
	for {
		if !c.waitMuted() {
			return
		}
		frame, release, err := c.readFrame(br)
		started := now(lm)
		lm.Idle(started - waiting)
		if err != nil {
			c.logReadError(err)
			return
		}
		resp, keep, served := c.s.handle(c, frame)
		release()
		if lm != nil {
			// Counted before the answer goes out: a client that reads
			// it and then scrapes /metrics finds its request there.
			served.Observe(now(lm) - started)
		}
		if len(resp.files) == 0 && c.queued.Load() == 0 {
			resp.buf = c.writeDirect(resp.buf)
		}
		if resp.buf != nil {
			c.queued.Add(1)
			select {
			case c.out <- resp:
			case <-c.writerDone:
				resp.close()
				return
			}
		}
		if lm != nil {
			waiting = metrics.Now()
			lm.Busy(waiting - started)
		}
		if !keep {
			return
		}
	}
}

// writeDirect writes what it can of buf at once, from the reader, when no
// response waits for the writer (so order is kept), and returns the rest
// (nil once all is written) for the writer. One non-blocking write: a
// full socket buffer or an error leaves the bytes to the writer, which
// waits, times out and reports as for any response, so the reader is never
// held up by a client that does not read. Most responses are small and go
// out here, without waking the writer goroutine for each.
func (c *conn) writeDirect(buf []byte) []byte {
	if c.raw == nil || len(buf) == 0 {
		return buf
	}
	n := 0
	err := c.raw.Write(func(fd uintptr) bool {
		n, _ = syscall.Write(int(fd), buf)
		return true // never wait for the socket: that is the writer's job
	})
	switch {
	case err != nil || n <= 0:
		return buf
	case n == len(buf):
		return nil
	}
	return buf[n:]
}

// tlsHandshakeTimeout bounds a TLS handshake, so a peer that connects
// and says nothing holds no connection slot for long.
const tlsHandshakeTimeout = 10 * time.Second

// handshake completes the TLS handshake and, on an SSL listener, takes
// the principal from the client's certificate (User:<CN>); false when the
// connection is to be closed.
func (c *conn) handshake() bool {
	c.nc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := c.tls.HandshakeContext(c.s.ctx); err != nil {
		c.s.logger.Info("closing connection: TLS handshake failed", "remote", c.remote, "listener", c.listener, "err", err)
		return false
	}
	c.nc.SetDeadline(time.Time{})
	cs := c.tls.ConnectionState()
	if c.protocol == auth.SSL {
		c.principal = tlsconf.PeerPrincipal(cs)
	}
	c.s.logger.Debug("TLS connection", "remote", c.remote, "listener", c.listener, "principal", c.principal.String(),
		"tls_version", tls.VersionName(cs.Version), "client_certificate", len(cs.PeerCertificates) > 0)
	return true
}

// closeOut ends the writer's queue and, once the writer is done, closes
// the files of responses it left unsent (it stops early on a write error).
func (c *conn) closeOut() {
	close(c.out)
	<-c.writerDone
	for resp := range c.out {
		resp.close()
	}
}

// now is metrics.Now when connection time is measured, else 0.
func now(lm *metrics.Listener) time.Duration {
	if lm == nil {
		return 0
	}
	return metrics.Now()
}

// errFrame is a frame the reader refuses: the connection is closed.
type errFrame struct{ msg string }

func (e errFrame) Error() string { return e.msg }

// readFrame reads one size-prefixed request (frame.go: the buffer grows
// as bytes arrive; large frames take their size from the memory budget).
// The wait for a frame to start is bounded by IdleTimeout, its bytes by
// RequestReadTimeout, so a peer trickling bytes cannot hold a reservation
// for longer. release returns the reservation; call it once the request
// has been served.
func (c *conn) readFrame(br *bufio.Reader) (frame []byte, release func(), err error) {
	if err := c.armReadDeadline(c.s.cfg.IdleTimeout); err != nil {
		return nil, nil, err
	}
	if c.sasl.raw {
		return c.readRawToken(br)
	}
	n, err := frameSize(br, c.frameLimit())
	if err != nil {
		return nil, nil, err
	}
	if err := c.armReadDeadline(c.s.cfg.RequestReadTimeout); err != nil {
		return nil, nil, err
	}
	c.s.framesReading.Add(1)
	defer c.s.framesReading.Add(-1)
	frame, release, err = readFrameBody(c.s.ctx, br, n, c.s.budget,
		func() error { return c.armReadDeadline(c.s.cfg.RequestReadTimeout) })
	if errors.Is(err, os.ErrDeadlineExceeded) && !c.stopping.Load() {
		return nil, nil, errSlowFrame{n: n, timeout: c.s.cfg.RequestReadTimeout}
	}
	return frame, release, err
}

// errSlowFrame is a frame that did not arrive within RequestReadTimeout.
type errSlowFrame struct {
	n       int
	timeout time.Duration
}

func (e errSlowFrame) Error() string {
	return "request frame of " + strconv.Itoa(e.n) + " bytes did not arrive within " + e.timeout.String()
}

// armReadDeadline sets the read deadline d from now (none for d <= 0)
// and reports io.EOF once Shutdown asked the reader to stop: stopReading
// sets its own deadline after the flag, so one of the two always wins.
func (c *conn) armReadDeadline(d time.Duration) error {
	if d > 0 {
		c.nc.SetReadDeadline(time.Now().Add(d))
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	if c.stopping.Load() {
		return io.EOF
	}
	return nil
}

func (c *conn) logReadError(err error) {
	var fe errFrame
	var slow errSlowFrame
	switch {
	case errors.As(err, &fe):
		c.s.logger.Warn("closing connection: bad frame", "remote", c.remote, "err", err)
	case errors.As(err, &slow):
		c.s.logger.Info("closing connection: slow request", "remote", c.remote, "err", err)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled):
		// the client hung up, or Shutdown closed the connection
	case errors.Is(err, os.ErrDeadlineExceeded) && !c.stopping.Load():
		c.s.logger.Info("closing idle connection", "remote", c.remote, "idle", c.s.cfg.IdleTimeout)
	case errors.Is(err, os.ErrDeadlineExceeded):
	default:
		c.s.logger.Info("connection read failed", "remote", c.remote, "err", err)
	}
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer c.s.forgetConn(c)
	defer c.nc.Close()
	defer close(c.writerDone)
	// Pipelined responses already queued go out in one writev; no copy
	// and no per-connection write buffer. A response with file sections
	// (sendfile) goes out on its own, after those queued before it.
	var queued [outQueue][]byte
	for resp := range c.out {
		written, err := c.writeQueued(resp, queued[:0])
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.s.logger.Info("connection write failed", "remote", c.remote, "err", err)
			}
			return
		}
		c.queued.Add(-written)
	}
}

// writeQueued writes resp and the responses queued behind it, in order,
// and returns how many it wrote.
func (c *conn) writeQueued(resp outgoing, queued [][]byte) (written int32, err error) {
	bufs := net.Buffers(queued) // WriteTo consumes bufs, not queued
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	for {
		written++
		if len(resp.files) == 0 {
			bufs = append(bufs, resp.buf)
		} else {
			_, err := bufs.WriteTo(c.nc)
			if err == nil {
				err = resp.send(c.nc)
			}
			bufs = net.Buffers(queued)
			resp.close()
			if err != nil {
				return 0, err
			}
		}
		if len(c.out) == 0 || len(bufs) >= outQueue {
			break
		}
		resp = <-c.out
	}
	_, err = bufs.WriteTo(c.nc)
	return written, err
}
