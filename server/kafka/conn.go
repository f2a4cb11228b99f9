package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/server/metrics"
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
	out        chan []byte
	writerDone chan struct{}
	// stopping is set by Shutdown: the reader finishes its request and stops.
	stopping atomic.Bool
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		s:          s,
		nc:         nc,
		remote:     nc.RemoteAddr().String(),
		out:        make(chan []byte, outQueue),
		writerDone: make(chan struct{}),
	}
}

// stopReading makes the reader stop before its next request.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer close(c.out)
	br := bufio.NewReaderSize(c.nc, 64<<10)
	// Two clock reads per request when metrics are on, none when off:
	// started (request read) and finished (response handed to the writer),
	// which is also when the wait for the next request starts.
	lm := c.s.metrics.conns // nil when metrics are off
	waiting := now(lm)
	for {
		frame, err := c.readFrame(br)
		started := now(lm)
		lm.Idle(started - waiting)
		if err != nil {
			c.logReadError(err)
			return
		}
		resp, keep, served := c.s.handle(c, frame)
		if resp != nil {
			select {
			case c.out <- resp:
			case <-c.writerDone:
				return
			}
		}
		if lm != nil {
			waiting = metrics.Now()
			served.Observe(waiting - started)
			lm.Busy(waiting - started)
		}
		if !keep {
			return
		}
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

// readFrame reads one size-prefixed request. The size is checked against
// MaxRequestBytes before anything is allocated for the body.
func (c *conn) readFrame(br *bufio.Reader) ([]byte, error) {
	if c.s.cfg.IdleTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	if c.stopping.Load() {
		return nil, io.EOF
	}
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	switch {
	case n < minFrameBytes:
		return nil, errFrame{"request frame of " + strconv.Itoa(int(n)) + " bytes is too short"}
	case n > c.s.cfg.MaxRequestBytes:
		return nil, errFrame{"request frame of " + strconv.Itoa(int(n)) +
			" bytes exceeds socket.request.max.bytes " + strconv.Itoa(int(c.s.cfg.MaxRequestBytes))}
	}
	if n > maxNonProduceBytes {
		key, err := br.Peek(2)
		if err != nil {
			return nil, err
		}
		if k := int16(binary.BigEndian.Uint16(key)); k != produceKey {
			return nil, errFrame{"request frame of " + strconv.Itoa(int(n)) + " bytes for api key " +
				strconv.Itoa(int(k)) + " exceeds " + strconv.Itoa(maxNonProduceBytes) + ", the cap for requests other than Produce"}
		}
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(br, frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

func (c *conn) logReadError(err error) {
	var fe errFrame
	switch {
	case errors.As(err, &fe):
		c.s.logger.Warn("closing connection: bad frame", "remote", c.remote, "err", err)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
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
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	for resp := range c.out {
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := bw.Write(resp)
		if err == nil && len(c.out) == 0 {
			err = bw.Flush() // batch pipelined responses into one write
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.s.logger.Info("connection write failed", "remote", c.remote, "err", err)
			}
			return
		}
	}
}
