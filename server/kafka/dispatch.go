package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"
)

// requestHeader is Kafka's request header (v1, or v2 with tagged fields
// for flexible versions). kmsg generates bodies, not headers, so this tiny
// part is parsed here; every body goes through kmsg.
type requestHeader struct {
	key, version int16
	correlation  int32
	clientID     string
}

var errHeader = errors.New("malformed request header")

// clientIDString is id as a string: known (the connection's last one, as
// it nearly always is) without an allocation.
func clientIDString(id []byte, known string) string {
	if string(id) == known {
		return known
	}
	return string(id)
}

// parseHeader splits frame into the fixed part of the header and the rest
// (tagged fields, when flexible, then the body); knownClientID is the
// client id the connection's last request carried.
func parseHeader(frame []byte, knownClientID string) (requestHeader, []byte, error) {
	if len(frame) < minFrameBytes {
		return requestHeader{}, nil, fmt.Errorf("%w: %d bytes", errHeader, len(frame))
	}
	be := binary.BigEndian
	h := requestHeader{
		key:         int16(be.Uint16(frame[0:])),
		version:     int16(be.Uint16(frame[2:])),
		correlation: int32(be.Uint32(frame[4:])),
	}
	n := int16(be.Uint16(frame[8:]))
	rest := frame[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes, %d left", errHeader, n, len(rest))
		}
		h.clientID, rest = clientIDString(rest[:n], knownClientID), rest[n:]
	} else if n < -1 {
		return h, nil, fmt.Errorf("%w: client id length %d", errHeader, n)
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section (KIP-482): a count, then per
// field a tag, a size and the bytes.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, fmt.Errorf("%w: tagged field count", errHeader)
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: tag", errHeader)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: tagged field size", errHeader)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// handle serves one request frame and returns the encoded response (nil
// when the request gets none, like acks=0 produce), whether to keep the
// connection open, and the API's request metrics for the reader to time
// it (nil when metrics are off or the request was not served); failed
// partitions are counted here.
func (s *Server) handle(c *conn, frame []byte) (_ outgoing, keep bool, served *metrics.Request) {
	if c.sasl.raw { // a bare token after SaslHandshake v0
		out, keep := c.handleRawToken(frame)
		return out, keep, nil
	}
	h, rest, err := parseHeader(frame, c.reqCtxClient.id)
	if err != nil {
		s.logger.Warn("closing connection: bad request header", "remote", c.remote, "err", err)
		return outgoing{}, false, nil
	}
	if c.protocol.SASL() && !c.saslAllows(h.key, s.cfg.Clock()) {
		return outgoing{}, false, nil
	}
	if h.key == apiVersionsKey && !inRange(h.key, h.version) {
		// Kafka answers any ApiVersions version, so a newer client learns
		// what this broker speaks: v0 body, UNSUPPORTED_VERSION, the ranges.
		return outgoing{buf: encodeResponse(h.correlation, s.unsupportedAPIVersions())}, true, s.metrics.served(h.key, nil)
	}
	// Handler time is measured only while some entity has a
	// request_percentage quota: a broker without one reads no clock here.
	var started time.Time
	if s.cfg.Quotas.LimitsRequests() {
		started = time.Now()
		c.parked.Reset()
	}
	req, err := s.decodeRequest(h, rest)
	if err != nil {
		served = s.metrics.failedDecode(h.key)
		s.logger.Warn("closing connection: cannot serve request", "remote", c.remote, "client_id", h.clientID,
			"api_key", h.key, "api", kmsg.NameForKey(h.key), "version", h.version, "err", err)
		return outgoing{}, false, served
	}
	resp, ok := s.serve(c, h, req, !started.IsZero())
	sf, _ := resp.(*sendfileFetch)
	if sf != nil {
		served = s.metrics.served(h.key, sf.FetchResponse)
	} else {
		served = s.metrics.served(h.key, resp)
	}
	if !ok { // the handler panicked
		served.Failed(errorName(codeUnknownServerError), 1)
		return outgoing{}, false, served
	}
	if resp == closeConnection {
		s.logger.Info("closing connection after a failed acks=0 produce", "remote", c.remote, "client_id", h.clientID)
		return outgoing{}, false, served
	}
	if !started.IsZero() {
		s.throttleRequest(c, h, req, resp, time.Since(started)-c.parked.Total())
	}
	keep = !c.closeAfterResponse
	if resp == nil {
		return outgoing{}, keep, served
	}
	resp.SetVersion(h.version)
	if sf != nil {
		return encodeSendfileFetch(h.correlation, sf), keep, served
	}
	return outgoing{buf: encodeResponse(h.correlation, resp)}, keep, served
}

// decodeRequest checks the key and version against the table and parses
// the body with kmsg.
func (s *Server) decodeRequest(h requestHeader, rest []byte) (kmsg.Request, error) {
	a := lookupAPI(h.key)
	if !s.serves(a) {
		return nil, fmt.Errorf("unknown or unsupported api key %d", h.key)
	}
	if h.version < a.min || h.version > servedMax(a) {
		return nil, fmt.Errorf("version %d is outside the served range %d-%d", h.version, a.min, servedMax(a))
	}
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	return req, nil
}

// serve runs the handler. A panic is a ferry bug: it is logged with its
// stack and closes this connection only.
func (s *Server) serve(c *conn, h requestHeader, req kmsg.Request, timed bool) (resp kmsg.Response, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("BUG: panic serving request; closing the connection", "remote", c.remote,
				"api", kmsg.NameForKey(h.key), "version", h.version, "panic", fmt.Sprint(r),
				"stack", string(debug.Stack()))
			resp, ok = nil, false
		}
	}()
	ctx := c.requestContext(h.clientID)
	if timed {
		ctx = quota.WithParked(ctx, &c.parked) // its waits are not handler time
	}
	resp = lookupAPI(h.key).serve(s, ctx, req)
	s.auditAdmin(ctx, h.key, resp)
	return resp, true
}

// requestClient is who sent a request: the header's client id and the
// connection's peer address and listener. Handlers that record it
// (JoinGroup) or answer per listener (Metadata) read it from the context. sendfile says the connection may send Fetch batches
// from the segment files (plaintext TCP); files counts the segment files
// its responses hold open.
type requestClient struct {
	id, remote, listener string
	sendfile             bool
	files                *atomic.Int32
	// conn is the connection itself, for the SASL handlers, which run on
	// its reader and change its state.
	conn *conn
}

type requestClientKey struct{}

// requestContext is the context c's requests run in: their requestClient
// and principal on the server's context. A connection's requests nearly
// always carry one client id and one principal, so it is built again only
// when either changes (SASL authenticates, a client renames itself)
// rather than allocated for each request. Only the reader calls it.
func (c *conn) requestContext(clientID string) context.Context {
	if c.reqCtx == nil || clientID != c.reqCtxClient.id || c.principal != c.reqCtxPrincipal {
		c.reqCtxClient = requestClient{id: clientID, remote: c.remote, listener: c.listener, sendfile: c.sendfile, files: &c.sendfileFiles, conn: c}
		c.reqCtxPrincipal = c.principal
		c.reqCtx = auth.WithPrincipal(context.WithValue(c.s.ctx, requestClientKey{}, c.reqCtxClient), c.principal)
	}
	return c.reqCtx
}

func requestClientFrom(ctx context.Context) requestClient {
	rc, _ := ctx.Value(requestClientKey{}).(requestClient)
	return rc
}

// closeConnection is returned by a handler to close the connection instead
// of answering (acks=0 produce with an error, as Kafka does).
var closeConnection kmsg.Response = new(kmsg.ProduceResponse)

// encodeResponse frames a response: size, correlation id, the header's
// tagged fields when flexible (never for ApiVersions, whose response
// header stays v0 so any client can read it), then the body.
func encodeResponse(correlation int32, resp kmsg.Response) []byte {
	buf := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlation))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}
