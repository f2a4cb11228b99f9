package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// SASL on a SASL_PLAINTEXT or SASL_SSL listener. A connection starts
// unauthenticated and may send only ApiVersions, SaslHandshake and
// SaslAuthenticate; anything else closes it, as Kafka does. The exchanges
// themselves are server/auth's, fed the client's tokens:
//
//	SaslHandshake v1 (mechanism)  →  SaslAuthenticate × 1–2  →  authenticated
//	SaslHandshake v0 (mechanism)  →  bare size-prefixed tokens (pre-KIP-152 clients)
//
// With connections.max.reauth.ms (KIP-368) the session lasts that long:
// SaslAuthenticate v1+ tells the client, which re-authenticates on the
// same connection (same mechanism and user); past the deadline a
// connection may send nothing else, or it is closed.

// saslMaxReceiveBytes caps a request frame before authentication
// (Kafka's sasl.server.max.receive.size, 512 KiB).
const saslMaxReceiveBytes = 512 << 10

// saslState is one connection's SASL progress. Only the reader touches it.
type saslState struct {
	// mechanism is the last SaslHandshake's; exchange is its exchange in
	// progress, nil between exchanges.
	mechanism string
	exchange  auth.SaslExchange
	// raw: the handshake was v0, the next frames are bare tokens.
	raw           bool
	authenticated bool
	user          string
	// expires ends the session (zero: never); reauthenticates says the
	// client authenticated with SaslAuthenticate v1+, which Kafka requires
	// of a client that re-authenticates.
	expires         time.Time
	reauthenticates bool
}

// saslAllows reports whether a request for key may be served now; false
// closes the connection. Only for SASL listeners.
func (c *conn) saslAllows(key int16, now time.Time) bool {
	switch key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return true
	}
	st := &c.sasl
	if !st.authenticated {
		c.s.logger.Info("closing connection: request before SASL authentication", "remote", c.remote, "api_key", key)
		return false
	}
	if !st.expires.IsZero() && now.After(st.expires) {
		c.s.logger.Info("closing connection: SASL session expired without re-authentication", "remote", c.remote,
			"principal", c.principal.String(), "api_key", key)
		return false
	}
	return true
}

// frameLimit is the largest frame the connection may send now.
func (c *conn) frameLimit() int32 {
	if c.protocol.SASL() && !c.sasl.authenticated {
		return min(c.s.cfg.MaxRequestBytes, saslMaxReceiveBytes)
	}
	return c.s.cfg.MaxRequestBytes
}

// readRawToken reads one bare SASL token after a v0 handshake: a size,
// then the bytes, no request header.
func (c *conn) readRawToken(br *bufio.Reader) ([]byte, func(), error) {
	if err := c.armReadDeadline(c.s.cfg.RequestReadTimeout); err != nil {
		return nil, nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		return nil, nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > auth.MaxSaslTokenBytes {
		return nil, nil, errFrame{"SASL token of " + strconv.Itoa(int(n)) + " bytes: at most " + strconv.Itoa(auth.MaxSaslTokenBytes)}
	}
	token := make([]byte, n)
	if _, err := io.ReadFull(br, token); err != nil {
		return nil, nil, err
	}
	return token, func() {}, nil
}

// handleRawToken feeds a bare token to the exchange and frames its
// answer the same way. A failure cannot be told to a v0 client: the
// connection is closed.
func (c *conn) handleRawToken(token []byte) (outgoing, bool) {
	st := &c.sasl
	answer, done, err := st.exchange.Step(token)
	if err != nil {
		c.logSaslFailure(err)
		c.s.delayFailedAuthentication()
		return outgoing{}, false
	}
	if done {
		if _, ok := c.completeSasl(0); !ok {
			return outgoing{}, false
		}
	}
	buf := make([]byte, 4, 4+len(answer))
	binary.BigEndian.PutUint32(buf, uint32(len(answer)))
	return outgoing{buf: append(buf, answer...)}, true
}

// completeSasl ends a successful exchange: the connection runs as the
// user from now on, until the session expires. A re-authentication must
// keep the user; the message says why not.
func (c *conn) completeSasl(authenticateVersion int16) (string, bool) {
	st := &c.sasl
	user := st.exchange.User()
	st.exchange, st.raw = nil, false
	if st.authenticated && user != st.user {
		msg := "Cannot change principals during re-authentication from " + auth.User(st.user).String() + ": " + auth.User(user).String()
		c.s.logger.Warn("closing connection: "+msg, "remote", c.remote)
		return msg, false
	}
	first := !st.authenticated
	st.authenticated, st.user = true, user
	st.reauthenticates = authenticateVersion >= 1
	st.expires = time.Time{}
	if d := c.s.cfg.ReauthTimeout; d > 0 {
		st.expires = c.s.cfg.Clock().Add(d)
	}
	c.principal = auth.User(user)
	if first {
		c.s.logger.Debug("SASL authenticated", "remote", c.remote, "principal", c.principal.String(), "mechanism", st.mechanism)
	}
	return "", true
}

// saslFailureMessage is Kafka's message for a failed exchange.
func saslFailureMessage(mechanism string, err error) string {
	if errors.Is(err, auth.ErrAuthenticationFailed) {
		if mechanism == auth.MechanismPlain {
			return "Authentication failed: Invalid username or password"
		}
		return "Authentication failed: Invalid user credentials"
	}
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// logSaslFailure logs why, never the token: err comes from server/auth,
// whose errors hold no client bytes.
func (c *conn) logSaslFailure(err error) {
	c.s.logger.Info("closing connection: SASL authentication failed", "remote", c.remote,
		"mechanism", c.sasl.mechanism, "err", err)
}
