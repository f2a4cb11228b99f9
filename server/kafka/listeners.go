package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/quota"
)

// Listener is one of the broker's Kafka listeners (listeners,
// advertised.listeners, listener.security.protocol.map). Each connection
// knows the listener that accepted it: Metadata, FindCoordinator and
// DescribeCluster answer every broker's endpoint on that listener, as
// Kafka does, and its protocol says what the connection must do first.
type Listener struct {
	// Name is the listener name, as Kafka writes it: PLAINTEXT, INTERNAL…
	Name string
	// Addr is the listen address.
	Addr string
	// Advertised is the host:port Metadata names for this listener.
	// Default: Addr, with localhost for an empty or wildcard host.
	Advertised string
	// Protocol is the listener's security protocol.
	Protocol auth.SecurityProtocol
	// TLS serves the TLS protocols (SSL, SASL_SSL); required for them.
	// Sendfile is off on its connections (the bytes must be encrypted).
	TLS *tls.Config
	// MaxConnectionCreationRate is this listener's own rate of new
	// connections a second
	// (listener.name.<name>.max.connection.creation.rate), held as the
	// broker-wide one is (Config.MaxConnectionCreationRate), on the
	// inter-broker listener too; 0: none.
	MaxConnectionCreationRate int
}

// listener is a Listener with its advertised endpoint parsed.
type listener struct {
	Listener
	host string
	port int32
	// acceptRates are the connection creation rates its accepts count
	// against: its own and the broker-wide one, either absent.
	acceptRates []*quota.ConnectionRate
}

// listenersOf is cfg's listeners: Listeners, or the single listener Addr,
// AdvertisedAddr and SecurityProtocol describe, named after its protocol.
func listenersOf(cfg Config) ([]*listener, error) {
	ls := cfg.Listeners
	if len(ls) == 0 {
		ls = []Listener{{Name: cfg.SecurityProtocol.String(), Addr: cfg.Addr, Advertised: cfg.AdvertisedAddr,
			Protocol: cfg.SecurityProtocol, TLS: cfg.TLS}}
	}
	out := make([]*listener, 0, len(ls))
	seen := map[string]bool{}
	for _, l := range ls {
		if l.Name == "" || strings.ContainsAny(l.Name, ":/,= ") {
			return nil, fmt.Errorf("kafka: listener name %q: want a name like PLAINTEXT or INTERNAL", l.Name)
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("kafka: listener %s is given twice", l.Name)
		}
		seen[l.Name] = true
		if l.MaxConnectionCreationRate < 0 {
			return nil, fmt.Errorf("kafka: listener %s: max.connection.creation.rate %d: must not be negative (0: none)", l.Name, l.MaxConnectionCreationRate)
		}
		if l.Protocol.TLS() && l.TLS == nil {
			return nil, fmt.Errorf("kafka: listener %s is %s but has no TLS configuration (ssl.keystore.location)", l.Name, l.Protocol)
		}
		if l.Advertised == "" {
			l.Advertised = l.Addr
		}
		host, port, err := advertisedEndpoint(l.Advertised)
		if err != nil {
			return nil, fmt.Errorf("kafka: listener %s: %w", l.Name, err)
		}
		out = append(out, &listener{Listener: l, host: host, port: port})
	}
	addAcceptRates(out, cfg)
	return out, nil
}

// addAcceptRates gives each listener the connection creation rates it
// counts against: its own, and the broker-wide one unless it is the
// inter-broker listener among several (Kafka's "protected" listener).
func addAcceptRates(ls []*listener, cfg Config) {
	now := time.Now()
	var broker *quota.ConnectionRate
	if cfg.MaxConnectionCreationRate > 0 {
		broker = quota.NewConnectionRate(float64(cfg.MaxConnectionCreationRate), now)
	}
	for _, l := range ls {
		if l.MaxConnectionCreationRate > 0 {
			l.acceptRates = append(l.acceptRates, quota.NewConnectionRate(float64(l.MaxConnectionCreationRate), now))
		}
		if broker != nil && (len(ls) == 1 || l.Name != cfg.InterBrokerListener) {
			l.acceptRates = append(l.acceptRates, broker)
		}
	}
}

func advertisedEndpoint(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("advertised address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("advertised address %q: bad port", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return host, int32(p), nil
}

// listenerNamed is the listener called name; nil when there is none.
func (s *Server) listenerNamed(name string) *listener {
	for _, l := range s.listeners {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// errNoEndpoint: a broker has no endpoint on the listener a request
// came on.
var errNoEndpoint = errors.New("no endpoint on this listener")

// endpointOn is where broker id is reached on the named listener: this
// node's advertised address for its own id, else the endpoint the
// controller's view gives; ok is false when the broker is unknown or has
// no such listener.
func (s *Server) endpointOn(view *server.ClusterView, id int32, name string) (host string, port int32, ok bool) {
	if id == s.broker.BrokerID() && view == nil {
		if l := s.listenerNamed(name); l != nil {
			return l.host, l.port, true
		}
		return "", 0, false
	}
	if view == nil {
		return "", 0, false
	}
	for _, b := range view.Brokers {
		if b.ID == id {
			return brokerEndpoint(b, name)
		}
	}
	return "", 0, false
}

// brokerEndpoint is b's endpoint on listener name. A broker registered
// before listener names (no endpoints in the view) has its one address.
func brokerEndpoint(b server.ClusterBroker, name string) (string, int32, bool) {
	if len(b.Endpoints) == 0 {
		return b.Host, b.Port, true
	}
	for _, e := range b.Endpoints {
		if e.Listener == name {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// listenerList is Kafka's "NAME://host:port,…" for DescribeConfigs.
func (s *Server) listenerList(advertised bool) string {
	parts := make([]string, 0, len(s.listeners))
	for _, l := range s.listeners {
		addr := l.Addr
		if advertised {
			addr = net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
		}
		parts = append(parts, l.Name+"://"+addr)
	}
	return strings.Join(parts, ",")
}
