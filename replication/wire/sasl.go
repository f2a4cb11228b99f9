package wire

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// saslTimeout bounds a broker's authentication to another when the
// caller's context has no deadline.
const saslTimeout = 10 * time.Second

// WithSASL is dial followed by a SASL exchange (SaslHandshake v1 then
// SaslAuthenticate, Kafka's KIP-152 framing) as mechanism, for a
// SASL_PLAINTEXT or SASL_SSL inter-broker listener: the connection it
// returns is authenticated, so every client over it (the replica
// fetcher, the controller's requests, franz-go's forwarders) speaks as
// the broker's user without knowing SASL. A session the listener ends
// (connections.max.reauth.ms) closes the connection and the client dials
// again, which authenticates again.
func WithSASL(dial DialFunc, mechanism sasl.Mechanism) DialFunc {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := authenticate(ctx, nc, addr, mechanism); err != nil {
			nc.Close()
			return nil, fmt.Errorf("SASL %s to %s: %w", mechanism.Name(), addr, err)
		}
		return nc, nil
	}
}

func authenticate(ctx context.Context, nc net.Conn, addr string, mechanism sasl.Mechanism) error {
	timeout := saslTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	// Request and answer alternate, so nothing is left in the reader's
	// buffer when the exchange ends and nc goes to its next owner.
	c := &Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096), maxFrame: 1 << 20,
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("ferry-broker"))}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mechanism.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	hsResp.Version = 1
	if err := c.RoundTrip(hs, hsResp, timeout); err != nil {
		return err
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("handshake: %w (the listener offers %v)", err, hsResp.SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(addr)
	session, msg, err := mechanism.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		if err := c.RoundTrip(req, resp, timeout); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("%w%s", err, detail)
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return err
		}
		if done {
			nc.SetDeadline(time.Time{})
			return nil
		}
		msg = next
	}
}
