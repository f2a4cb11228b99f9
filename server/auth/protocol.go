package auth

import (
	"fmt"
	"strings"
)

// SecurityProtocol is a Kafka listener's security.protocol.
type SecurityProtocol int8

const (
	Plaintext     SecurityProtocol = iota // PLAINTEXT: no TLS, no SASL
	SSL                                   // SSL: TLS, principal from the client certificate when one is asked for
	SASLPlaintext                         // SASL_PLAINTEXT: SASL over TCP
	SASLSSL                               // SASL_SSL: SASL over TLS
)

var protocolNames = [...]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func (p SecurityProtocol) String() string {
	if int(p) < len(protocolNames) && p >= 0 {
		return protocolNames[p]
	}
	return fmt.Sprintf("PROTOCOL(%d)", int8(p))
}

// TLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether a connection must authenticate with SASL before
// anything but ApiVersions and SaslHandshake.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// ParseSecurityProtocol reads a protocol name as Kafka writes it.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	for i, n := range protocolNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return SecurityProtocol(i), nil
		}
	}
	return Plaintext, fmt.Errorf("unknown security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s)
}
