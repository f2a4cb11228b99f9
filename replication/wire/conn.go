// Package wire is the client side of the Kafka protocol between brokers:
// one plain TCP connection carrying one request at a time, encoded and
// decoded by kmsg. The replica fetchers and the controller's request
// senders use it. Responses are untrusted input: a frame above the
// connection's limit closes it before anything is allocated for it, and
// kmsg checks every length inside against the bytes present.
package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Conn is one connection to a broker, carrying one request at a time
// (the caller waits for each answer before the next, as Kafka's replica
// fetcher and controller send threads do). It is not safe for concurrent
// use.
type Conn struct {
	nc       net.Conn
	br       *bufio.Reader
	f        *kmsg.RequestFormatter
	corr     int32
	maxFrame int
	buf      []byte
}

// DialFunc opens a connection to a broker's listener: a plain TCP dial,
// or one that also completes a TLS handshake (tlsconf.Source.Dial) when
// the inter-broker listener is SSL.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dial connects to addr over plain TCP within timeout; responses larger
// than maxFrame bytes are refused.
func Dial(ctx context.Context, addr, clientID string, timeout time.Duration, maxFrame int) (*Conn, error) {
	return DialWith(ctx, nil, addr, clientID, timeout, maxFrame)
}

// DialWith is Dial through dial (nil: plain TCP).
func DialWith(ctx context.Context, dial DialFunc, addr, clientID string, timeout time.Duration, maxFrame int) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), maxFrame: maxFrame,
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// RoundTrip sends req (its version set) and decodes the answer into resp
// (the same version), both within timeout. After an error the connection
// is out of step and must be closed.
func (c *Conn) RoundTrip(req kmsg.Request, resp kmsg.Response, timeout time.Duration) error {
	c.corr++
	c.nc.SetDeadline(time.Now().Add(timeout))
	c.buf = c.f.AppendRequest(c.buf[:0], req, c.corr)
	if _, err := c.nc.Write(c.buf); err != nil {
		return err
	}
	frame, err := c.readFrame()
	if err != nil {
		return err
	}
	if len(frame) < 4 {
		return fmt.Errorf("response of %d bytes", len(frame))
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.corr {
		return fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	body := frame[4:]
	if resp.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return fmt.Errorf("response header: %w", err)
		}
	}
	return resp.ReadFrom(body)
}

func (c *Conn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 0 || n > c.maxFrame {
		return nil, fmt.Errorf("response frame of %d bytes; the limit is %d", n, c.maxFrame)
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	frame := c.buf[:n]
	_, err := io.ReadFull(c.br, frame)
	return frame, err
}

// skipTags skips a response header's tagged fields (flexible versions).
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, errors.New("bad tag count")
	}
	b = b[n:]
	for range count {
		_, n := binary.Uvarint(b) // tag
		if n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errors.New("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}
