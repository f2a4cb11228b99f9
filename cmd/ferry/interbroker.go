package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/replication/wire"
)

// interBrokerSASL is how this broker authenticates to the others when the
// inter-broker listener is SASL_PLAINTEXT or SASL_SSL: Kafka's
// sasl.mechanism.inter.broker.protocol, and a user (one of the SCRAM
// users, created like any other) with its password in a file. Kafka takes
// the credentials from a JAAS line: ferry from these settings or, when
// they are not given, from that line (jaas.go).
type interBrokerSASL struct {
	mechanism, user, passwordFile string
	// password is the one a sasl.jaas.config gave (no file then).
	password string
	// jaas holds the sasl.jaas.config values of the properties file by
	// scope (jaasKey), read once the inter-broker listener is known.
	jaas map[string]string
}

var interBrokerOptions = []option{
	{"sasl-mechanism-inter-broker-protocol", []string{"sasl.mechanism.inter.broker.protocol"}, "the SASL mechanism brokers authenticate to each other with on a SASL inter-broker listener: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", "SCRAM-SHA-512",
		func(s *serveSettings, v string) error { s.interSASL.mechanism = v; return nil }},
	{"inter-broker-sasl-username", []string{"ferry.inter.broker.sasl.username"}, "the user this broker authenticates to the others as, on a SASL inter-broker listener (list it in super.users)", "",
		func(s *serveSettings, v string) error { s.interSASL.user = v; return nil }},
	{"inter-broker-sasl-password-file", []string{"ferry.inter.broker.sasl.password.file"}, "file whose first line is that user's password", "",
		func(s *serveSettings, v string) error { s.interSASL.passwordFile = v; return nil }},
}

// configured reports whether credentials are given.
func (c interBrokerSASL) configured() bool { return c.user != "" }

// mechanismOf builds the client side of the exchange.
func (c interBrokerSASL) mechanismOf() (sasl.Mechanism, error) {
	password := c.password
	if password == "" {
		if c.passwordFile == "" {
			return nil, fmt.Errorf("--inter-broker-sasl-username %s needs --inter-broker-sasl-password-file", c.user)
		}
		var err error
		if password, err = kcli.ReadPasswordFile(c.passwordFile); err != nil {
			return nil, fmt.Errorf("--inter-broker-sasl-password-file: %w", err)
		}
	}
	switch c.mechanism {
	case "PLAIN":
		return plain.Auth{User: c.user, Pass: password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.user, Pass: password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512", "":
		return scram.Auth{User: c.user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", c.mechanism)
}

// withInterBrokerSASL wraps the inter-broker dial in the SASL exchange
// when that listener asks for SASL.
func withInterBrokerSASL(s serveSettings, dial wire.DialFunc) (wire.DialFunc, error) {
	if !s.interBrokerSpec().protocol.SASL() {
		return dial, nil
	}
	if !s.interSASL.configured() {
		return dial, nil // a single node's own clients; a cluster was refused at load
	}
	m, err := s.interSASL.mechanismOf()
	if err != nil {
		return nil, err
	}
	return wire.WithSASL(dial, m), nil
}
