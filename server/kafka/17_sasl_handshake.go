package kafka

// SaslHandshake (key 17), versions 0–1.
//
// Picks the connection's mechanism among sasl.enabled.mechanisms (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512); every answer lists them. v1 is followed
// by SaslAuthenticate requests, v0 by bare tokens (sasl.go). An unknown
// mechanism gets UNSUPPORTED_SASL_MECHANISM and the connection stays open
// for another try (Kafka closes it). A handshake on a listener without
// SASL, during an exchange, or to re-authenticate a client that cannot
// (v0, or another mechanism) gets ILLEGAL_SASL_STATE; the last two close
// the connection.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

const saslHandshakeKey = 17

func (s *Server) handleSaslHandshake(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = s.cfg.SaslMechanisms
	c := requestClientFrom(ctx).conn
	if c == nil || !c.protocol.SASL() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = nil // as Kafka answers on a listener without SASL
		return resp
	}
	st := &c.sasl
	switch {
	case st.exchange != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfterResponse = true
		return resp
	case !slices.Contains(s.cfg.SaslMechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	case st.authenticated && (req.Version < 1 || !st.reauthenticates || req.Mechanism != st.mechanism):
		s.logger.Info("closing connection: re-authentication needs SaslHandshake v1, SaslAuthenticate v1+ and the same mechanism",
			"remote", c.remote, "mechanism", req.Mechanism, "previous", st.mechanism)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfterResponse = true
		return resp
	}
	ex, err := auth.NewSaslExchange(req.Mechanism, s.cfg.Credentials, s.cfg.SaslSecret)
	if err != nil { // Validate checked every enabled mechanism
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	st.mechanism, st.exchange, st.raw = req.Mechanism, ex, req.Version == 0
	return resp
}
