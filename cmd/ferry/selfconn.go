package main

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"

	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/tlsconf"
)

// inProcessKafka is how this node's own Kafka clients (the forwarding
// client, the _schemas store) reach its broker: a net.Pipe served by its
// Kafka server as a connection on the inter-broker listener, never a
// socket to its own listener (issue 24). The clients cannot tell: the
// listener's TLS and SASL handshakes run over the pipe as over TCP, and
// Metadata answers with the inter-broker listener's endpoints.
type inProcessKafka struct {
	listener string
	// server is set once the Kafka server exists; the clients connect on
	// first use, which may come before.
	server atomic.Pointer[kafka.Server]
}

var errKafkaNotServing = errors.New("this node's Kafka server is not serving yet")

// pipe is the connection under the handshakes.
func (k *inProcessKafka) pipe(_ context.Context, network, addr string) (net.Conn, error) {
	srv := k.server.Load()
	if srv == nil {
		// A dial error: franz-go moves on to another broker or retries.
		return nil, &net.OpError{Op: "dial", Net: network, Err: errKafkaNotServing}
	}
	client, served := net.Pipe()
	if err := srv.ServeConn(k.listener, served); err != nil {
		client.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	return client, nil
}

// dial is the inter-broker dial (TLS when the listener is SSL, SASL when
// it is SASL) over the pipe.
func (k *inProcessKafka) dial(s serveSettings, interTLS *tlsconf.Source) (wire.DialFunc, error) {
	var d wire.DialFunc = k.pipe
	if interTLS != nil {
		d = interTLS.Over(d)
	}
	return withInterBrokerSASL(s, d)
}

// ownOr dials this node's own addresses (own) with self, the others with
// other (nil: plain TCP): the controller sends LeaderAndIsr and
// UpdateMetadata to every broker, this one included, and reaches this
// one in process.
func ownOr(own []string, self, other wire.DialFunc) wire.DialFunc {
	if other == nil {
		var d net.Dialer
		other = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slices.Contains(own, addr) {
			return self(ctx, network, addr)
		}
		return other(ctx, network, addr)
	}
}
