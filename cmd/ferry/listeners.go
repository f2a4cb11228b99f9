package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/tlsconf"
)

// listenerSettings are Kafka's listener settings as given: listeners,
// advertised.listeners, listener.security.protocol.map,
// inter.broker.listener.name, the ssl.* settings and their per-listener
// overrides (listener.name.<name>.ssl.*).
type listenerSettings struct {
	listeners, advertised, protocolMap, interBroker string
	// ssl holds ssl.* settings by key without the "ssl." prefix
	// (keystore.location…); perListener the overrides by lower-case
	// listener name, then key.
	ssl         map[string]string
	perListener map[string]map[string]string
	// connectionRates are listener.name.<name>.max.connection.creation.rate
	// by lower-case listener name.
	connectionRates map[string]int
	// shorthand is the protocol of the one listener --kafka-addr makes
	// when listeners is empty (PLAINTEXT; the security switch may make it
	// SASL_PLAINTEXT).
	shorthand auth.SecurityProtocol
}

// listenerSpec is one resolved listener.
type listenerSpec struct {
	name       string
	addr       string // listen host:port
	advertised string // host:port clients are told
	protocol   auth.SecurityProtocol
	tls        tlsconf.Files // for TLS protocols
}

// sslKeys are the ssl.* settings ferry reads (KIP-651's PEM subset).
var sslKeys = []string{"keystore.type", "keystore.location", "key.password", "truststore.type", "truststore.location", "client.auth",
	"endpoint.identification.algorithm"}

// resolveListeners checks the settings as Kafka does and returns the
// listeners in the order given and the inter-broker listener's name. With
// no listeners, kafkaAddr and advertisedKafkaAddr (--kafka-addr,
// --advertised-kafka-addr) are one PLAINTEXT listener.
func resolveListeners(ls listenerSettings, kafkaAddr, advertisedKafkaAddr string) ([]listenerSpec, string, error) {
	if strings.TrimSpace(ls.listeners) == "" {
		name := ls.shorthand.String()
		ls.listeners = name + "://" + kafkaAddr
		if ls.advertised == "" && advertisedKafkaAddr != "" {
			ls.advertised = name + "://" + advertisedKafkaAddr
		}
	}
	specs, err := parseListenerList("listeners", ls.listeners)
	if err != nil {
		return nil, "", err
	}
	if err := checkDistinct(specs); err != nil {
		return nil, "", err
	}
	protocols, err := parseProtocolMap(ls.protocolMap)
	if err != nil {
		return nil, "", err
	}
	for i := range specs {
		if specs[i].protocol, err = protocolOf(specs[i].name, protocols); err != nil {
			return nil, "", err
		}
		specs[i].advertised = defaultAdvertised(specs[i].addr)
	}
	if err := applyAdvertised(specs, ls.advertised); err != nil {
		return nil, "", err
	}
	for i := range specs {
		if specs[i].protocol.TLS() {
			if specs[i].tls, err = sslFiles(ls, specs[i].name); err != nil {
				return nil, "", err
			}
		}
	}
	inter, err := interBrokerListener(specs, ls.interBroker)
	return specs, inter, err
}

// parseListenerList reads "NAME://host:port,…"; names are upper-cased,
// as Kafka normalises them.
func parseListenerList(setting, v string) ([]listenerSpec, error) {
	var out []listenerSpec
	for _, item := range splitList(v) {
		name, hostport, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: %q is not NAME://host:port", setting, item)
		}
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", setting, item, err)
		}
		out = append(out, listenerSpec{name: strings.ToUpper(name), addr: hostport})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", setting)
	}
	return out, nil
}

// checkDistinct: each listener name once, each port once (Kafka's rule;
// port 0, chosen by the system, may repeat).
func checkDistinct(specs []listenerSpec) error {
	names, ports := map[string]bool{}, map[string]string{}
	for _, l := range specs {
		if names[l.name] {
			return fmt.Errorf("listeners: listener name %s is given twice", l.name)
		}
		names[l.name] = true
		_, port, _ := net.SplitHostPort(l.addr)
		if other, taken := ports[port]; taken && port != "0" {
			return fmt.Errorf("listeners: %s and %s both use port %s; each listener needs its own", other, l.name, port)
		}
		ports[port] = l.name
	}
	return nil
}

// parseProtocolMap reads listener.security.protocol.map, "NAME:PROTOCOL,…".
func parseProtocolMap(v string) (map[string]auth.SecurityProtocol, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]auth.SecurityProtocol{}
	for _, item := range splitList(v) {
		name, proto, ok := strings.Cut(item, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener.security.protocol.map: %q is not NAME:PROTOCOL", item)
		}
		p, err := auth.ParseSecurityProtocol(proto)
		if err != nil {
			return nil, fmt.Errorf("listener.security.protocol.map: %s: %w", name, err)
		}
		out[strings.ToUpper(strings.TrimSpace(name))] = p
	}
	return out, nil
}

// protocolOf is a listener's protocol: from the map when one is given,
// else its name must be a protocol's (Kafka's default map is each
// protocol to itself).
func protocolOf(name string, protocols map[string]auth.SecurityProtocol) (auth.SecurityProtocol, error) {
	if protocols != nil {
		p, ok := protocols[name]
		if !ok {
			return 0, fmt.Errorf("listener %s is not in listener.security.protocol.map", name)
		}
		return p, nil
	}
	p, err := auth.ParseSecurityProtocol(name)
	if err != nil {
		return 0, fmt.Errorf("listener %s: no listener.security.protocol.map names its protocol, and %s is not a protocol name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", name, name)
	}
	return p, nil
}

// applyAdvertised sets the advertised addresses advertised.listeners
// names; the others advertise their listen address.
func applyAdvertised(specs []listenerSpec, v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	adv, err := parseListenerList("advertised.listeners", v)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, a := range adv {
		if seen[a.name] {
			return fmt.Errorf("advertised.listeners: listener name %s is given twice", a.name)
		}
		seen[a.name] = true
		i := indexOfListener(specs, a.name)
		if i < 0 {
			return fmt.Errorf("advertised.listeners: %s is not one of listeners", a.name)
		}
		if host, _, _ := net.SplitHostPort(a.addr); host == "0.0.0.0" || host == "::" {
			return fmt.Errorf("advertised.listeners: %s: %s is not an address clients can connect to", a.name, a.addr)
		}
		specs[i].advertised = defaultAdvertised(a.addr)
	}
	return nil
}

func indexOfListener(specs []listenerSpec, name string) int {
	for i, l := range specs {
		if l.name == name {
			return i
		}
	}
	return -1
}

// interBrokerListener is inter.broker.listener.name, by default the
// PLAINTEXT listener, else the first.
func interBrokerListener(specs []listenerSpec, name string) (string, error) {
	name = strings.ToUpper(strings.TrimSpace(name))
	if name == "" {
		name = specs[0].name
		if indexOfListener(specs, "PLAINTEXT") >= 0 {
			name = "PLAINTEXT"
		}
	}
	if indexOfListener(specs, name) < 0 {
		return "", fmt.Errorf("inter.broker.listener.name %s is not one of listeners", name)
	}
	return name, nil
}

// checkInterBroker refuses, on a cluster, an inter-broker listener that
// needs SASL without the credentials brokers authenticate to each other
// with (interbroker.go): failing here beats replication failing later. A
// single node has no traffic between brokers.
func checkInterBroker(specs []listenerSpec, name string, clustered, saslCredentials bool) error {
	l := specs[indexOfListener(specs, name)]
	if clustered && l.protocol.SASL() && !saslCredentials {
		return fmt.Errorf("inter.broker.listener.name %s is %s: give the user brokers authenticate to each other as (--inter-broker-sasl-username and --inter-broker-sasl-password-file, or a sasl.jaas.config line), or use a PLAINTEXT or SSL listener between brokers", name, l.protocol)
	}
	return nil
}

// sslFiles is a listener's TLS files: listener.name.<name>.ssl.* over
// ssl.*.
func sslFiles(ls listenerSettings, name string) (tlsconf.Files, error) {
	lookup := func(key string) (string, bool) {
		if v, ok := ls.perListener[strings.ToLower(name)][key]; ok {
			return v, true
		}
		v, ok := ls.ssl[key]
		return v, ok
	}
	return tlsFilesFrom(lookup, "listener "+name)
}

// tlsFilesFrom reads the ssl.* settings through lookup (keys without the
// "ssl." prefix; ok false when not set).
func tlsFilesFrom(lookup func(key string) (string, bool), what string) (tlsconf.Files, error) {
	get := func(key string) string { v, _ := lookup(key); return v }
	for _, key := range []string{"keystore.type", "truststore.type"} {
		if t := get(key); t != "" && !strings.EqualFold(t, "PEM") {
			return tlsconf.Files{}, fmt.Errorf("%s: ssl.%s=%s: only PEM is supported (KIP-651); convert a JKS or PKCS12 store with keytool and openssl", what, key, t)
		}
	}
	auth, err := tlsconf.ParseClientAuth(get("client.auth"))
	if err != nil {
		return tlsconf.Files{}, fmt.Errorf("%s: %w", what, err)
	}
	f := tlsconf.Files{KeystoreLocation: get("keystore.location"), KeyPassword: get("key.password"),
		TruststoreLocation: get("truststore.location"), ClientAuth: auth}
	alg, set := lookup("endpoint.identification.algorithm")
	if !set {
		alg = "https" // Kafka's default
	}
	switch strings.ToLower(alg) {
	case "https":
	case "":
		f.SkipHostnameVerification = true
	default:
		return tlsconf.Files{}, fmt.Errorf("%s: ssl.endpoint.identification.algorithm=%s: want https or empty", what, alg)
	}
	if f.KeystoreLocation == "" {
		return f, fmt.Errorf("%s: a TLS listener needs ssl.keystore.location (a PEM file with the private key and the certificate chain)", what)
	}
	return f, nil
}

// errNotListenerKey: a properties key that is no per-listener override.
var errNotListenerKey = errors.New("not a listener.name key")

// listenerOverride splits "listener.name.<name>.ssl.<key>".
func listenerOverride(key string) (name, sslKey string, err error) {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", "", errNotListenerKey
	}
	name, sslKey, ok = strings.Cut(rest, ".ssl.")
	if !ok || name == "" {
		return "", "", errNotListenerKey
	}
	for _, k := range sslKeys {
		if k == sslKey {
			return strings.ToLower(name), sslKey, nil
		}
	}
	return "", "", errNotListenerKey
}

// listenerConnectionRateKey reads listener.name.<name>.max.connection.creation.rate.
func listenerConnectionRateKey(key string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(rest, ".max.connection.creation.rate")
	return strings.ToLower(name), ok && name != "" && !strings.Contains(name, ".")
}

// setConnectionRate records a listener's own max.connection.creation.rate.
func (ls *listenerSettings) setConnectionRate(name, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a whole number of connections a second (0: none)", v)
	}
	if ls.connectionRates == nil {
		ls.connectionRates = map[string]int{}
	}
	ls.connectionRates[name] = n
	return nil
}

// kafkaListeners opens each TLS listener's files and returns the
// listeners for the Kafka server, and the TLS of the inter-broker
// listener: nil for plain TCP, its files (the listener's keystore as the
// client certificate, its truststore for the other brokers' certificates)
// when it is SSL.
func kafkaListeners(s serveSettings, logger *slog.Logger) ([]kafka.Listener, *tlsconf.Source, error) {
	out := make([]kafka.Listener, 0, len(s.listeners))
	var interTLS *tlsconf.Source
	for name := range s.listenerCfg.connectionRates {
		if !slices.ContainsFunc(s.listeners, func(l listenerSpec) bool { return strings.EqualFold(l.name, name) }) {
			return nil, nil, fmt.Errorf("listener.name.%s.max.connection.creation.rate: there is no listener %s", name, strings.ToUpper(name))
		}
	}
	for _, l := range s.listeners {
		kl := kafka.Listener{Name: l.name, Addr: l.addr, Advertised: l.advertised, Protocol: l.protocol,
			MaxConnectionCreationRate: s.listenerCfg.connectionRates[strings.ToLower(l.name)]}
		if l.protocol.TLS() {
			src, err := tlsconf.Open(l.tls, logger.With("listener", l.name))
			if err != nil {
				return nil, nil, fmt.Errorf("listener %s: %w", l.name, err)
			}
			kl.TLS = src.ServerConfig()
			if l.name == s.interBroker {
				interTLS = src
			}
		}
		out = append(out, kl)
	}
	return out, interTLS, nil
}

// interBrokerSpec is the inter-broker listener.
func (s serveSettings) interBrokerSpec() listenerSpec {
	return s.listeners[indexOfListener(s.listeners, s.interBroker)]
}

// selfKafkaAddr is where this node's own client, the schema registry's
// topic store, reaches its inter-broker listener: the listen address on
// plaintext, which is sure to be this node's (the advertised one may name
// a load balancer), the advertised one over TLS, which the certificate is
// made for.
func (s serveSettings) selfKafkaAddr() string {
	l := s.interBrokerSpec()
	if l.protocol.TLS() {
		return l.advertised
	}
	return defaultAdvertised(l.addr)
}

// ownKafkaAddrs are addresses that reach this node's own Kafka
// listeners, selfKafkaAddr first: the forwarding client never dials them
// (the cluster views add the advertised ones as registered).
func (s serveSettings) ownKafkaAddrs() []string {
	out := []string{s.selfKafkaAddr()}
	for _, l := range s.listeners {
		out = append(out, l.advertised, defaultAdvertised(l.addr))
		if host, port, err := net.SplitHostPort(l.addr); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
			out = append(out, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port))
		}
	}
	return out
}

// endpoints are the listeners as /brokers/ids/<id> records them.
func (s serveSettings) endpoints() ([]zookeeper.Endpoint, error) {
	out := make([]zookeeper.Endpoint, 0, len(s.listeners))
	for _, l := range s.listeners {
		host, portText, err := net.SplitHostPort(l.advertised)
		if err != nil {
			return nil, fmt.Errorf("listener %s: advertised address %q: %w", l.name, l.advertised, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return nil, fmt.Errorf("listener %s: advertised address %q: %w", l.name, l.advertised, err)
		}
		out = append(out, zookeeper.Endpoint{Listener: l.name, Host: host, Port: port, SecurityProtocol: l.protocol.String()})
	}
	return out, nil
}
