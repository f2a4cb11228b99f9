package kafka

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/ferry-mq/ferry/server/features"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/quota"
	"github.com/ferry-mq/ferry/server/txn"
)

// Kafka's defaults for the listener settings.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultIdleTimeout is connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultFetchMaxBytes is fetch.max.bytes (55 MiB).
	DefaultFetchMaxBytes = 57671680
	// DefaultQueuedMaxRequestBytes bounds the request frames in memory
	// across all connections. Kafka's queued.max.request.bytes defaults
	// to unbounded (-1); ferry keeps room for two full-size requests, so
	// no client can make the node allocate without end.
	DefaultQueuedMaxRequestBytes = 256 << 20
	// DefaultRequestReadTimeout bounds how long one frame may take to
	// arrive once its size has been read. Clients give up on a request
	// after request.timeout.ms (30 s by default) anyway.
	DefaultRequestReadTimeout = time.Minute
	// DefaultFailedAuthenticationDelay is
	// connection.failed.authentication.delay.ms.
	DefaultFailedAuthenticationDelay = 100 * time.Millisecond
	// fallbackMaxConnections is max.connections where the open-file limit
	// cannot be read.
	fallbackMaxConnections = 10000
)

// Config is the Kafka listener's configuration. The zero value plus
// Defaults listens on :9092 with Kafka's limits.
type Config struct {
	// Listeners are the broker's Kafka listeners; empty: one, described
	// by Addr, AdvertisedAddr, SecurityProtocol and TLS and named after
	// its protocol.
	Listeners []Listener
	// Addr is the single listener's address (listeners). Default ":9092".
	Addr string
	// SecurityProtocol is the single listener's security.protocol.
	// Default PLAINTEXT.
	SecurityProtocol auth.SecurityProtocol
	// Credentials are the users' SCRAM verifiers a SASL listener checks
	// clients against; required when SecurityProtocol is SASL_*.
	Credentials auth.Credentials
	// Users is the store DescribeUserScramCredentials and
	// AlterUserScramCredentials read and change (the data dir's file, or
	// ZooKeeper); nil: they fail with SECURITY_DISABLED. When Credentials
	// is nil, Users is also what SASL checks against.
	Users auth.CredentialStore
	// Quotas is the broker's copy of the client quotas that Produce and
	// Fetch are held to and DescribeClientQuotas lists (quotas.go);
	// QuotaStore is where AlterClientQuotas writes them (the data dir's
	// file, or ZooKeeper), nil: it fails. Default: a manager with none.
	Quotas     *quota.Manager
	QuotaStore quota.Store
	// SaslMechanisms are the mechanisms offered (sasl.enabled.mechanisms):
	// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Default all three.
	SaslMechanisms []string
	// SaslSecret keys the salts invented for unknown users, so a SCRAM
	// exchange looks the same whether the user exists or not. It should be
	// the same on every broker and across restarts. Default: random per
	// process.
	SaslSecret []byte
	// ReauthTimeout is connections.max.reauth.ms (KIP-368): a SASL
	// session lasts this long, then the client must authenticate again on
	// the same connection or be disconnected. 0, the default: forever.
	ReauthTimeout time.Duration
	// Clock tells when SASL sessions expire. Default time.Now; tests move
	// it instead of waiting a session out.
	Clock func() time.Time
	// FailedAuthenticationDelay holds the answer to a failed SASL
	// authentication this long before the connection closes
	// (connection.failed.authentication.delay.ms), slowing password
	// guessing. Default 100 ms, as in Kafka; negative: none.
	FailedAuthenticationDelay time.Duration
	// TLS serves the single listener when its protocol is SSL or SASL_SSL.
	TLS *tls.Config
	// InterBroker serves the controller's orders (LeaderAndIsr,
	// StopReplica): on for a broker of a cluster, off on a single node.
	InterBroker bool
	// ControlledShutdown is the controller's answer to a broker about to
	// stop (ControlledShutdown, key 7); nil: NOT_CONTROLLER.
	ControlledShutdown ControlledShutdownFunc
	// Admin is the core's admin operations behind ElectLeaders (key 43)
	// and Alter/ListPartitionReassignments (45, 46), used at this broker
	// only (Admin.AtThisBroker: another broker's requests answer
	// NOT_CONTROLLER, as in Kafka); nil: a single node's.
	Admin *server.Admin
	// Txns is the transaction coordinator behind FindCoordinator key type
	// 1, InitProducerId with a transactional id, AddPartitionsToTxn,
	// AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions;
	// nil: transactional producers are refused as before (INVALID_REQUEST,
	// COORDINATOR_NOT_AVAILABLE) and those APIs are not advertised.
	Txns *txn.Coordinator
	// Features is the cluster's finalized features (transaction.version),
	// advertised by ApiVersions and changed by UpdateFeatures; nil: fixed
	// at transaction.version 2, as a new single node finalizes.
	Features *features.Manager
	// ACLs are the authorizer's bindings and the store behind DescribeAcls,
	// CreateAcls and DeleteAcls (authorizer.class.name set); nil: ACLs
	// are off, every request is allowed and those APIs answer
	// SECURITY_DISABLED.
	ACLs *acl.Manager
	// AdvertisedAddr is the host:port Metadata and DescribeCluster tell
	// clients to use (advertised.listeners). Default: the broker core's
	// AdvertisedKafkaAddr, else Addr.
	AdvertisedAddr string
	// MaxRequestBytes caps one request frame (socket.request.max.bytes),
	// checked before the frame is read into memory. Default 100 MiB.
	// Requests other than Produce are further capped at 8 MiB.
	MaxRequestBytes int32
	// IdleTimeout closes a connection that sent nothing for this long
	// (connections.max.idle.ms). Default 10 minutes.
	IdleTimeout time.Duration
	// RequestReadTimeout closes a connection whose request frame, once
	// its size has arrived, is not complete within this long (not
	// waiting for memory budget counted), so a client trickling bytes
	// cannot hold budget. Kafka has no such setting (it relies on
	// connections.max.idle.ms); default 1 minute; negative: none.
	RequestReadTimeout time.Duration
	// QueuedMaxRequestBytes is the node-wide budget for request frames
	// being read or served (queued.max.request.bytes). A frame above
	// 64 KiB reserves its size once its first 64 KiB have arrived; a
	// connection whose frame does not fit stops reading until it does.
	// Must be at least MaxRequestBytes, as in Kafka. Default 256 MiB (or
	// MaxRequestBytes when larger); negative: unbounded (Kafka's default).
	QueuedMaxRequestBytes int64
	// MaxConnections caps this listener's open connections
	// (max.connections); a connection beyond it is closed at once
	// (Kafka instead stops accepting until one closes). Default: half of
	// the process's open-file soft limit (RLIMIT_NOFILE), so partition
	// logs always have descriptors left.
	MaxConnections int
	// MaxConnectionsPerIP caps open connections from one client address
	// (max.connections.per.ip); 0, the default, is unbounded, as in
	// Kafka. A connection beyond it is closed at once, as in Kafka.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides sets other caps for some client IPs
	// (max.connections.per.ip.overrides, "ip:count,ip:count"); 0 refuses
	// every connection from that IP. Host names are not resolved.
	MaxConnectionsPerIPOverrides map[string]int
	// MaxConnectionCreationRate is the broker-wide rate of new
	// connections a second (max.connection.creation.rate, KIP-612),
	// shared by every listener but the inter-broker one: a connection
	// over it is accepted late, the acceptor waiting (at most a second)
	// before taking it in, as Kafka's does. 0, the default: unbounded
	// (Kafka's default is 2147483647). A Listener may have its own rate
	// besides.
	MaxConnectionCreationRate int
	// InterBrokerListener names the listener the brokers use between
	// themselves (inter.broker.listener.name): when there are several
	// listeners, it is exempt from MaxConnectionCreationRate, as in
	// Kafka, so a flood of clients cannot hold replication back.
	InterBrokerListener string
	// FetchMaxBytes caps one Fetch response (fetch.max.bytes), below the
	// request's own MaxBytes; the first batch is sent even when larger,
	// so consumers make progress. Default 57671680 (55 MiB).
	FetchMaxBytes int32
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots:
	// how many incremental fetch sessions (KIP-227) the broker keeps, for
	// consumers and followers together. 0: 1000; negative: none (every
	// fetch is answered without a session).
	FetchSessionCacheSlots int
	// FetchSessionEvictionAge is min.incremental.fetch.session.eviction.ms:
	// a session unused this long may make way for a new one. 0: 120 s.
	FetchSessionEvictionAge time.Duration
	// DisableSendfile serves Fetch record batches from memory (read, then
	// written) instead of from the segment files with sendfile, which is
	// used by default on plaintext TCP connections for Fetch v4+. A TLS
	// listener must copy. Chiefly for comparison and tests.
	DisableSendfile bool
	// Logger receives connection and request errors. Default slog.Default.
	Logger *slog.Logger
	// Metrics counts requests per API, their latency and errors, open
	// connections and connection idle time; nil: no metrics.
	Metrics *metrics.Metrics
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Quotas == nil {
		c.Quotas = quota.NewManager()
	}
	if c.Addr == "" && len(c.Listeners) == 0 {
		c.Addr = ":9092"
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.RequestReadTimeout == 0 {
		c.RequestReadTimeout = DefaultRequestReadTimeout
	}
	if c.QueuedMaxRequestBytes == 0 {
		c.QueuedMaxRequestBytes = max(DefaultQueuedMaxRequestBytes, int64(c.MaxRequestBytes))
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = defaultMaxConnections()
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Credentials == nil && c.Users != nil {
		c.Credentials = c.Users
	}
	if c.SaslMechanisms == nil {
		c.SaslMechanisms = DefaultSaslMechanisms()
	}
	if c.FailedAuthenticationDelay == 0 {
		c.FailedAuthenticationDelay = DefaultFailedAuthenticationDelay
	}
	if c.SaslSecret == nil {
		c.SaslSecret = make([]byte, 32)
		rand.Read(c.SaslSecret)
	}
}

// DefaultSaslMechanisms is sasl.enabled.mechanisms' default here (Kafka's
// is GSSAPI, which ferry does not serve).
func DefaultSaslMechanisms() []string {
	return []string{auth.MechanismScramSHA256, auth.MechanismScramSHA512, auth.MechanismPlain}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.MaxRequestBytes < minFrameBytes:
		return fmt.Errorf("socket.request.max.bytes %d: must be at least %d", c.MaxRequestBytes, minFrameBytes)
	case c.IdleTimeout < 0:
		return fmt.Errorf("connections.max.idle.ms %v: must not be negative", c.IdleTimeout)
	case c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.MaxRequestBytes):
		return fmt.Errorf("queued.max.request.bytes %d: must be at least socket.request.max.bytes %d (or negative: unbounded)",
			c.QueuedMaxRequestBytes, c.MaxRequestBytes)
	case c.MaxConnections < 1:
		return fmt.Errorf("max.connections %d: must be at least 1", c.MaxConnections)
	case c.MaxConnectionsPerIP < 0:
		return fmt.Errorf("max.connections.per.ip %d: must not be negative (0: unbounded)", c.MaxConnectionsPerIP)
	case c.MaxConnectionCreationRate < 0:
		return fmt.Errorf("max.connection.creation.rate %d: must not be negative (0: unbounded)", c.MaxConnectionCreationRate)
	case c.FetchMaxBytes < 1024:
		return fmt.Errorf("fetch.max.bytes %d: must be at least 1024", c.FetchMaxBytes)
	case c.FetchSessionEvictionAge < 0:
		return fmt.Errorf("min.incremental.fetch.session.eviction.ms %v: must not be negative", c.FetchSessionEvictionAge)
	case c.ReauthTimeout < 0:
		return fmt.Errorf("connections.max.reauth.ms %v: must not be negative", c.ReauthTimeout)
	case c.SASL() && c.Credentials == nil:
		return errors.New("a SASL listener needs a credential store")
	case c.SASL() && len(c.SaslMechanisms) == 0:
		return errors.New("a SASL listener needs at least one of sasl.enabled.mechanisms")
	}
	for _, m := range c.SaslMechanisms {
		if _, err := auth.NewSaslExchange(m, auth.NewCredentialSet(), nil); err != nil {
			return fmt.Errorf("sasl.enabled.mechanisms: %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	for ip, n := range c.MaxConnectionsPerIPOverrides {
		if _, err := netip.ParseAddr(ip); err != nil {
			return fmt.Errorf("max.connections.per.ip.overrides: %q is not an IP address", ip)
		}
		if n < 0 {
			return fmt.Errorf("max.connections.per.ip.overrides: %s:%d must not be negative", ip, n)
		}
	}
	return nil
}

// SASL reports whether any listener asks clients for SASL.
func (c *Config) SASL() bool {
	if len(c.Listeners) == 0 {
		return c.SecurityProtocol.SASL()
	}
	for _, l := range c.Listeners {
		if l.Protocol.SASL() {
			return true
		}
	}
	return false
}

// ParseConnectionOverrides reads max.connections.per.ip.overrides:
// comma-separated ip:count pairs (an IPv6 address in brackets, or bare:
// the count follows its last colon).
func ParseConnectionOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		i := strings.LastIndex(pair, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q: want ip:count", pair)
		}
		n, err := strconv.Atoi(pair[i+1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", pair, err)
		}
		ip, err := netip.ParseAddr(strings.Trim(pair[:i], "[]"))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", pair, err)
		}
		out[ip.String()] = n
	}
	return out, nil
}
