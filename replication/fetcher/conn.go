package fetcher

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

// conn is one connection to the leader, carrying one request at a time
// (the fetcher waits for each answer before the next, as Kafka's replica
// fetcher does). Responses are untrusted: a frame larger than maxFrame
// closes the connection, and every length inside is checked by kmsg
// against the bytes present.
type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	f        *kmsg.RequestFormatter
	corr     int32
	maxFrame int
	buf      []byte
}

func dial(ctx context.Context, addr, clientID string, timeout time.Duration, maxFrame int) (*conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), maxFrame: maxFrame,
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

func (c *conn) Close() error { return c.nc.Close() }

// roundTrip sends req (its version set) and decodes the answer into resp
// (the same version), both within timeout.
func (c *conn) roundTrip(req kmsg.Request, resp kmsg.Response, timeout time.Duration) error {
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

func (c *conn) readFrame() ([]byte, error) {
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
