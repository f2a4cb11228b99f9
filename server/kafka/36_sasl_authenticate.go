package kafka

// SaslAuthenticate (key 36), versions 0–2 (v1 adds session_lifetime_ms,
// KIP-368; v2 is flexible).
//
// Feeds one token to the exchange SaslHandshake started. A failure
// answers SASL_AUTHENTICATION_FAILED with Kafka's message and closes the
// connection. Without a handshake first, or on a listener without SASL:
// ILLEGAL_SASL_STATE (then closed, on a SASL listener). Success makes the
// connection run as User:<name>; with connections.max.reauth.ms the
// answer carries the session's lifetime. Deviation: Kafka's SCRAM refuses
// an unknown user at the first message; ferry answers it like a known
// one and refuses the proof, so user names cannot be probed.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const saslAuthenticateKey = 36

func (s *Server) handleSaslAuthenticate(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := requestClientFrom(ctx).conn
	if c == nil || !c.protocol.SASL() || c.sasl.exchange == nil || c.sasl.raw {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake v1 before it")
		if c != nil && c.protocol.SASL() {
			c.closeAfterResponse = true
		}
		return resp
	}
	answer, done, err := c.sasl.exchange.Step(req.SASLAuthBytes)
	if err != nil {
		c.logSaslFailure(err)
		return s.saslFailed(c, resp, saslFailureMessage(c.sasl.mechanism, err))
	}
	resp.SASLAuthBytes = answer
	if !done {
		return resp
	}
	if msg, ok := c.completeSasl(req.Version); !ok {
		return s.saslFailed(c, resp, msg)
	}
	if d := s.cfg.ReauthTimeout; d > 0 {
		resp.SessionLifetimeMillis = d.Milliseconds()
	}
	return resp
}

// saslFailed answers SASL_AUTHENTICATION_FAILED, after
// FailedAuthenticationDelay, and closes the connection once the answer is
// out.
func (s *Server) saslFailed(c *conn, resp *kmsg.SASLAuthenticateResponse, msg string) kmsg.Response {
	s.delayFailedAuthentication()
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	resp.ErrorMessage = kmsg.StringPtr(msg)
	resp.SASLAuthBytes = nil
	c.sasl.exchange = nil
	c.closeAfterResponse = true
	return resp
}

// delayFailedAuthentication waits FailedAuthenticationDelay, or until
// Shutdown. It runs on the failed connection's reader, holding up no one
// else.
func (s *Server) delayFailedAuthentication() {
	d := s.cfg.FailedAuthenticationDelay
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
	}
}
