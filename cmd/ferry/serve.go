package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ferry-mq/ferry/api"
	"github.com/ferry-mq/ferry/cmd/ferry/internal/gcfloor"
	"github.com/ferry-mq/ferry/replication/wire"
	"github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/forward"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/idempotency"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/metrics"
	"github.com/ferry-mq/ferry/server/tlsconf"
	"github.com/ferry-mq/ferry/server/txn"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// serveSettings is everything `ferry serve` is configured with.
type serveSettings struct {
	broker           server.Config
	httpAddr         string
	httpAllowedHosts []string
	httpMaxConns     int
	// idempotency is the Idempotency-Key store's window and memory budget
	// (the keys topic's replication factor follows
	// offsets.topic.replication.factor).
	idempotency idempotency.Config
	// kafkaAddr and advertisedKafkaAddr are --kafka-addr and
	// --advertised-kafka-addr as given, the shorthand for one PLAINTEXT
	// listener; after loading, advertisedKafkaAddr is the first
	// listener's advertised address (what /brokers and a single node's
	// FindCoordinator name).
	kafkaAddr           string
	advertisedKafkaAddr string
	// listenerCfg are Kafka's listener settings as given; listeners and
	// interBroker are what they resolve to (listeners.go).
	listenerCfg listenerSettings
	listeners   []listenerSpec
	interBroker string
	// httpTLS is ferry.http.tls.enable; httpTLSFiles the HTTP port's own
	// keystore and truststore (default: the ssl.* ones).
	httpTLS                      bool
	httpKeystore, httpTruststore string
	// advertisedHTTPAddr is where the other brokers of a cluster reach
	// this node's HTTP gateway (registered in ZooKeeper).
	advertisedHTTPAddr string
	zookeeper          string
	// zkSessionTimeout is zookeeper.session.timeout.ms; brokerRack broker.rack.
	zkSessionTimeout time.Duration
	// autoLeaderRebalance, leaderImbalanceInterval, leaderImbalancePercent:
	// auto.leader.rebalance.enable and its two settings.
	autoLeaderRebalance     bool
	leaderImbalanceInterval time.Duration
	leaderImbalancePercent  int
	brokerRack              string
	schemaStore             string
	logFormat               string
	logLevel                string
	metrics                 bool
	// groupInitialDelay is group.initial.rebalance.delay.ms; 0 is no delay.
	groupInitialDelay time.Duration
	// offsetsPartitions is offsets.topic.num.partitions.
	offsetsPartitions int32
	// offsetsReplicationFactor is offsets.topic.replication.factor.
	offsetsReplicationFactor int16
	// offsetsSegmentBytes is offsets.topic.segment.bytes.
	offsetsSegmentBytes int32
	// offsetsRetention and offsetsRetentionCheck are offsets.retention.minutes
	// and offsets.retention.check.interval.ms.
	offsetsRetention, offsetsRetentionCheck time.Duration
	// txn is the transaction coordinator's settings (txnserve.go).
	txn txn.Config
	// maxTransactionVersion is this broker's highest supported
	// transaction.version (the flag transaction-version).
	maxTransactionVersion int16
	// groupLagSampleInterval is how often groups' lag is sampled for
	// GET /groups/{group}/lag/history.
	groupLagSampleInterval time.Duration
	// schemasReplicationFactor is kafkastore.topic.replication.factor.
	schemasReplicationFactor int16
	// httpAuth is the HTTP gateway's authentication (httpauth.go).
	httpAuth httpAuthSettings
	// interSASL is how this broker authenticates to the others over a
	// SASL inter-broker listener (interbroker.go).
	interSASL interBrokerSASL
	// authorizerClass is authorizer.class.name (empty: ACLs off);
	// superUsers and allowIfNoACL its super.users and
	// allow.everyone.if.no.acl.found.
	authorizerClass string
	superUsers      []auth.Principal
	allowIfNoACL    bool
	// kafkaLimits are the Kafka listener's resource limits; Addr,
	// AdvertisedAddr, Logger and Metrics are filled in runServe.
	kafkaLimits kafka.Config
	// security is --security (ferry.security.enable): with no explicit
	// protocol in listeners, the Kafka listener is SASL_PLAINTEXT.
	security bool
}

// option is one serve setting with its three spellings: --flag,
// FERRY_FLAG env, and server.properties keys.
type option struct {
	flag  string
	keys  []string
	usage string
	def   string
	set   func(*serveSettings, string) error
}

var serveOptions = []option{
	{"data-dir", []string{"log.dirs", "log.dir"}, "directory holding partition logs and metadata", "./data",
		func(s *serveSettings, v string) error { s.broker.DataDir = v; return nil }},
	{"http-addr", []string{"http.addr"}, "HTTP gateway listen address", ":8080",
		func(s *serveSettings, v string) error { s.httpAddr = v; return nil }},
	{"http-allowed-hosts", []string{"http.allowed.hosts", "ferry.http.allowed.hosts"}, "comma-separated Host names browsers may reach the HTTP listener by, against DNS rebinding (\"*\": any); empty: localhost, IP literals and this node's own names. Non-browser clients may use any Host", "",
		func(s *serveSettings, v string) error { s.httpAllowedHosts = splitList(v); return nil }},
	{"http-max-connections", []string{"http.max.connections"}, "most HTTP connections open at once; more wait in the kernel's accept queue", "1024",
		func(s *serveSettings, v string) (err error) {
			s.httpMaxConns, err = strconv.Atoi(v)
			if err == nil && s.httpMaxConns < 1 {
				err = errors.New("must be at least 1")
			}
			return err
		}},
	{"http-idempotency-window", []string{"ferry.http.idempotency.window"}, "how long POST /kafka/{topic} answers a retry with the same Idempotency-Key from the recorded answer (Go duration, e.g. 1h, 30m); keys older are forgotten", "1h",
		func(s *serveSettings, v string) (err error) {
			s.idempotency.Window, err = time.ParseDuration(v)
			if err == nil && s.idempotency.Window < time.Second {
				err = errors.New("must be at least 1s")
			}
			return err
		}},
	{"http-idempotency-max-bytes", []string{"ferry.http.idempotency.max.bytes"}, "memory the Idempotency-Key answers this node owns may take; beyond it requests with a new key answer 503 (50308) until keys expire", "67108864",
		func(s *serveSettings, v string) (err error) {
			s.idempotency.MaxBytes, err = strconv.ParseInt(v, 10, 64)
			if err == nil && s.idempotency.MaxBytes < 1024 {
				err = errors.New("must be at least 1024")
			}
			return err
		}},
	{"group-initial-rebalance-delay-ms", []string{"group.initial.rebalance.delay.ms"}, "how long a new or emptied group waits for more members before its first rebalance (0: none)", "3000",
		func(s *serveSettings, v string) error {
			ms, err := strconv.Atoi(v)
			if err == nil && ms < 0 {
				err = errors.New("must not be negative")
			}
			s.groupInitialDelay = time.Duration(ms) * time.Millisecond
			return err
		}},
	{"offsets-topic-num-partitions", []string{"offsets.topic.num.partitions"}, "partitions of __consumer_offsets when it is created (an existing topic keeps its count)", "50",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			s.offsetsPartitions = int32(n)
			return err
		}},
	{"offsets-topic-replication-factor", []string{"offsets.topic.replication.factor"}, "replicas of __consumer_offsets when a cluster creates it (on the first FindCoordinator; with fewer live brokers consumers wait); a single node uses 1", "3",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 16)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			s.offsetsReplicationFactor = int16(n)
			return err
		}},
	{"offsets-topic-segment-bytes", []string{"offsets.topic.segment.bytes"}, "segment.bytes of __consumer_offsets when it is created: the cleaner compacts all but the active segment", "104857600",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil && n < 1024 {
				err = errors.New("must be at least 1024")
			}
			s.offsetsSegmentBytes = int32(n)
			return err
		}},
	{"offsets-retention-minutes", []string{"offsets.retention.minutes"}, "committed offsets of a group without members expire this long after it became empty (a standalone group's, after the commit)", "10080",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			s.offsetsRetention = time.Duration(n) * time.Minute
			return err
		}},
	{"offsets-retention-check-interval-ms", []string{"offsets.retention.check.interval.ms"}, "how often expired committed offsets are looked for", "600000",
		func(s *serveSettings, v string) error {
			err := parseMillis(&s.offsetsRetentionCheck, v)
			if err == nil && s.offsetsRetentionCheck <= 0 {
				err = errors.New("must be positive")
			}
			return err
		}},
	{"group-lag-sample-interval-ms", []string{"ferry.group.lag.sample.interval.ms"}, "how often each consumer group's lag is sampled into the history the admin page charts (360 samples kept per group)", "10000",
		func(s *serveSettings, v string) error {
			err := parseMillis(&s.groupLagSampleInterval, v)
			if err == nil && s.groupLagSampleInterval < 100*time.Millisecond {
				err = errors.New("must be at least 100")
			}
			return err
		}},
	{"schemas-topic-replication-factor", []string{"kafkastore.topic.replication.factor"}, "replicas of _schemas, where a cluster without --schema-store keeps the schema registry, when it is created (on the registry's first use; with fewer live brokers registrations fail until there are enough)", "3",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 16)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			s.schemasReplicationFactor = int16(n)
			return err
		}},
	{"kafka-addr", []string{"kafka.addr"}, "Kafka protocol listen address: shorthand for listeners=PLAINTEXT://host:port, used when --listeners is not given", ":9092",
		func(s *serveSettings, v string) error { s.kafkaAddr = listenerAddr(v); return nil }},
	{"security", []string{"ferry.security.enable"}, "turn security on: the Kafka listener becomes SASL_PLAINTEXT unless listeners names a protocol", "false",
		func(s *serveSettings, v string) (err error) { s.security, err = strconv.ParseBool(v); return err }},
	{"sasl-enabled-mechanisms", []string{"sasl.enabled.mechanisms"}, "SASL mechanisms a SASL listener offers: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN", strings.Join(kafka.DefaultSaslMechanisms(), ","),
		func(s *serveSettings, v string) error {
			s.kafkaLimits.SaslMechanisms = splitList(v)
			if len(s.kafkaLimits.SaslMechanisms) == 0 {
				return errors.New("name at least one mechanism")
			}
			return nil
		}},
	{"connection-failed-authentication-delay-ms", []string{"connection.failed.authentication.delay.ms"}, "hold the answer to a failed SASL authentication this long, against password guessing (0: none)", "100",
		func(s *serveSettings, v string) error {
			err := parseMillis(&s.kafkaLimits.FailedAuthenticationDelay, v)
			if s.kafkaLimits.FailedAuthenticationDelay == 0 {
				s.kafkaLimits.FailedAuthenticationDelay = -1 // kafka.Config reads 0 as its default
			}
			return err
		}},
	{"connections-max-reauth-ms", []string{"connections.max.reauth.ms"}, "a SASL session lasts this long; the client must then re-authenticate on its connection or be disconnected (KIP-368; 0: forever)", "0",
		func(s *serveSettings, v string) error { return parseMillis(&s.kafkaLimits.ReauthTimeout, v) }},
	{"advertised-kafka-addr", []string{"advertised.kafka.addr"}, "host:port clients are told to use with --kafka-addr (default: kafka-addr, with localhost for an empty host)", "",
		func(s *serveSettings, v string) error { s.advertisedKafkaAddr = listenerAddr(v); return nil }},
	{"listeners", []string{"listeners"}, "Kafka listeners, NAME://host:port[,NAME://host:port…]; a name is a security protocol unless listener.security.protocol.map maps it (empty: --kafka-addr as PLAINTEXT)", "",
		func(s *serveSettings, v string) error { s.listenerCfg.listeners = v; return nil }},
	{"advertised-listeners", []string{"advertised.listeners"}, "NAME://host:port per listener that clients are told to use (default: each listener's own address, with localhost for an empty host)", "",
		func(s *serveSettings, v string) error { s.listenerCfg.advertised = v; return nil }},
	{"listener-security-protocol-map", []string{"listener.security.protocol.map"}, "NAME:PROTOCOL,… for listeners not named after their protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", "",
		func(s *serveSettings, v string) error { s.listenerCfg.protocolMap = v; return nil }},
	{"inter-broker-listener-name", []string{"inter.broker.listener.name"}, "the listener brokers use between themselves (replication, controller requests, forwarding) (default: PLAINTEXT, else the first)", "",
		func(s *serveSettings, v string) error { s.listenerCfg.interBroker = v; return nil }},
	{"ssl-keystore-type", []string{"ssl.keystore.type"}, "keystore format: PEM only", "PEM",
		func(s *serveSettings, v string) error { s.setSSL("keystore.type", v); return nil }},
	{"ssl-keystore-location", []string{"ssl.keystore.location"}, "PEM file with the private key (unencrypted) and the certificate chain, for SSL listeners; re-read when it changes", "",
		func(s *serveSettings, v string) error { s.setSSL("keystore.location", v); return nil }},
	{"ssl-key-password", []string{"ssl.key.password"}, "refused: encrypted private keys are not supported", "",
		func(s *serveSettings, v string) error { s.setSSL("key.password", v); return nil }},
	{"ssl-truststore-type", []string{"ssl.truststore.type"}, "truststore format: PEM only", "PEM",
		func(s *serveSettings, v string) error { s.setSSL("truststore.type", v); return nil }},
	{"ssl-truststore-location", []string{"ssl.truststore.location"}, "PEM file of CA certificates that client certificates (and other brokers' certificates) must chain to; re-read when it changes", "",
		func(s *serveSettings, v string) error { s.setSSL("truststore.location", v); return nil }},
	{"ssl-client-auth", []string{"ssl.client.auth"}, "client certificates on SSL listeners: none, requested or required; a certificate's subject CN is the principal (User:CN)", "none",
		func(s *serveSettings, v string) error { s.setSSL("client.auth", v); return nil }},
	{"ssl-endpoint-identification-algorithm", []string{"ssl.endpoint.identification.algorithm"}, "https: brokers check that another broker's certificate names the host they dial (inter-broker TLS); empty: the chain to the truststore only", "https",
		func(s *serveSettings, v string) error { s.setSSL("endpoint.identification.algorithm", v); return nil }},
	{"http-tls-enable", []string{"ferry.http.tls.enable"}, "serve the HTTP port over TLS, with the ssl.* keystore (or ferry.http.ssl.*); cluster nodes then reach each other's HTTP over https", "false",
		func(s *serveSettings, v string) (err error) { s.httpTLS, err = strconv.ParseBool(v); return err }},
	{"http-ssl-keystore-location", []string{"ferry.http.ssl.keystore.location"}, "the HTTP port's own PEM keystore (default: ssl.keystore.location)", "",
		func(s *serveSettings, v string) error { s.httpKeystore = v; return nil }},
	{"http-ssl-truststore-location", []string{"ferry.http.ssl.truststore.location"}, "CA certificates the other nodes' HTTP certificates must chain to (default: ssl.truststore.location)", "",
		func(s *serveSettings, v string) error { s.httpTruststore = v; return nil }},
	{"advertised-http-addr", []string{"ferry.advertised.http.addr"}, "host:port the other brokers of a cluster reach this node's HTTP gateway at (default: http-addr, with the advertised Kafka host for an empty host)", "",
		func(s *serveSettings, v string) error { s.advertisedHTTPAddr = v; return nil }},
	{"broker-id", []string{"broker.id"}, "this node's broker id", "0",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			s.broker.BrokerID = int32(n)
			return err
		}},
	{"zookeeper", []string{"zookeeper.connect"}, "host:port[,host:port…][/chroot]; empty: single node, embedded metadata", "",
		func(s *serveSettings, v string) error { s.zookeeper = v; return nil }},
	{"zookeeper-session-timeout-ms", []string{"zookeeper.session.timeout.ms"}, "ZooKeeper session timeout: a broker silent for longer is dead to the cluster", "18000",
		func(s *serveSettings, v string) error { return parseMillis(&s.zkSessionTimeout, v) }},
	{"auto-leader-rebalance-enable", []string{"auto.leader.rebalance.enable"}, "on a cluster, the controller gives leadership back to each partition's first replica when a broker leads too few of its own (preferred leader election)", "true",
		func(s *serveSettings, v string) error {
			b, err := strconv.ParseBool(v)
			s.autoLeaderRebalance = b
			return err
		}},
	{"leader-imbalance-check-interval-seconds", []string{"leader.imbalance.check.interval.seconds"}, "how often the controller checks the leader imbalance", "300",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			s.leaderImbalanceInterval = time.Duration(n) * time.Second
			return err
		}},
	{"leader-imbalance-per-broker-percentage", []string{"leader.imbalance.per.broker.percentage"}, "the share of a broker's preferred partitions it may not lead before the controller elects it back", "10",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil && (n < 0 || n > 100) {
				err = errors.New("must be between 0 and 100")
			}
			s.leaderImbalancePercent = int(n)
			return err
		}},
	{"replica-high-watermark-checkpoint-interval-ms", []string{"replica.high.watermark.checkpoint.interval.ms"}, "how often every partition's high watermark is written to <data-dir>/replication-offset-checkpoint, where a restarted replica resumes from", "5000",
		func(s *serveSettings, v string) error {
			err := parseMillis(&s.broker.HighWatermarkCheckpointInterval, v)
			if err == nil && s.broker.HighWatermarkCheckpointInterval == 0 {
				err = errors.New("must be at least 1")
			}
			return err
		}},
	{"broker-rack", []string{"broker.rack"}, "this broker's rack, for rack-aware replica assignment", "",
		func(s *serveSettings, v string) error { s.brokerRack = v; return nil }},
	{"schema-store", []string{"schema.store"}, "schema registry store: empty for embedded, or postgres://…", "",
		func(s *serveSettings, v string) error { s.schemaStore = v; return nil }},
	{"log-format", []string{"log.format"}, "log output: text or json", "text",
		func(s *serveSettings, v string) error { s.logFormat = v; return nil }},
	{"log-level", []string{"log.level"}, "debug, info, warn or error", "info",
		func(s *serveSettings, v string) error { s.logLevel = v; return nil }},
	{"metrics", []string{"metrics.enabled"}, "serve Prometheus metrics at /metrics (false: no metrics are kept)", "true",
		func(s *serveSettings, v string) (err error) { s.metrics, err = strconv.ParseBool(v); return err }},
	{"log-open-files-max", []string{"ferry.log.open.files.max"}, "file descriptors all partition logs may hold open together; idle files beyond it are closed, least recently used first (0: a quarter of the open-file limit)", "0",
		func(s *serveSettings, v string) error { return parseInt(&s.broker.MaxOpenLogFiles, v) }},
	{"socket-request-max-bytes", []string{"socket.request.max.bytes"}, "largest Kafka request frame", strconv.Itoa(kafka.DefaultMaxRequestBytes),
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.MaxRequestBytes, v) }},
	{"queued-max-request-bytes", []string{"queued.max.request.bytes"}, "memory for Kafka request frames in flight across all connections (0: 256 MiB, at least socket.request.max.bytes; negative: unbounded)", "0",
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.QueuedMaxRequestBytes, v) }},
	{"max-connections", []string{"max.connections"}, "open Kafka connections (0: half the open-file limit)", "0",
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.MaxConnections, v) }},
	{"max-connections-per-ip", []string{"max.connections.per.ip"}, "open Kafka connections from one IP (0: unbounded)", "0",
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.MaxConnectionsPerIP, v) }},
	{"max-connections-per-ip-overrides", []string{"max.connections.per.ip.overrides"}, "per-IP caps, ip:count,ip:count", "",
		func(s *serveSettings, v string) (err error) {
			s.kafkaLimits.MaxConnectionsPerIPOverrides, err = kafka.ParseConnectionOverrides(v)
			return err
		}},
	{"max-connection-creation-rate", []string{"max.connection.creation.rate"}, "new Kafka connections a second, broker-wide (the inter-broker listener among several is exempt); over it, accepts wait; a listener's own: listener.name.<name>.max.connection.creation.rate in --config (0: unbounded)", "0",
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.MaxConnectionCreationRate, v) }},
	{"fetch-max-bytes", []string{"fetch.max.bytes"}, "largest Kafka Fetch response", strconv.Itoa(kafka.DefaultFetchMaxBytes),
		func(s *serveSettings, v string) error { return parseInt(&s.kafkaLimits.FetchMaxBytes, v) }},
	{"max-incremental-fetch-session-cache-slots", []string{"max.incremental.fetch.session.cache.slots"}, "incremental Kafka fetch sessions (KIP-227) the broker keeps, for consumers and followers together (0: none, every fetch a full one)", "1000",
		func(s *serveSettings, v string) error {
			err := parseInt(&s.kafkaLimits.FetchSessionCacheSlots, v)
			if s.kafkaLimits.FetchSessionCacheSlots <= 0 {
				s.kafkaLimits.FetchSessionCacheSlots = -1 // the listener's "none"; its 0 is the default
			}
			return err
		}},
	{"min-incremental-fetch-session-eviction-ms", []string{"min.incremental.fetch.session.eviction.ms"}, "a fetch session unused this long may make way for a new one", "120000",
		func(s *serveSettings, v string) error { return parseMillis(&s.kafkaLimits.FetchSessionEvictionAge, v) }},
	{"connections-max-idle-ms", []string{"connections.max.idle.ms"}, "close Kafka connections idle this long", "600000",
		func(s *serveSettings, v string) error { return parseMillis(&s.kafkaLimits.IdleTimeout, v) }},
	{"authorizer-class-name", []string{"authorizer.class.name"}, "turns ACLs on: ferry, or any of Kafka's authorizer class names (kafka.security.authorizer.AclAuthorizer, …), all served by ferry's own; empty: off (with --security: ferry)", "",
		func(s *serveSettings, v string) error { s.authorizerClass = v; return checkAuthorizerClass(v) }},
	{"super-users", []string{"super.users"}, "principals always allowed, User:a;User:b (a secured cluster lists its brokers' principal, User:ANONYMOUS over PLAINTEXT)", "",
		func(s *serveSettings, v string) (err error) { s.superUsers, err = parseSuperUsers(v); return err }},
	{"allow-everyone-if-no-acl-found", []string{"allow.everyone.if.no.acl.found"}, "with ACLs on, allow an action on a resource no ACL names", "false",
		func(s *serveSettings, v string) (err error) { s.allowIfNoACL, err = strconv.ParseBool(v); return err }},
	{"kafka-request-read-timeout-ms", []string{"kafka.request.read.timeout.ms"}, "close a Kafka connection whose request frame, once started, takes longer to arrive (ferry's own; Kafka has none)", "60000",
		func(s *serveSettings, v string) error { return parseMillis(&s.kafkaLimits.RequestReadTimeout, v) }},
}

// setSSL records an ssl.* setting (key without the prefix).
func (s *serveSettings) setSSL(key, v string) {
	if s.listenerCfg.ssl == nil {
		s.listenerCfg.ssl = map[string]string{}
	}
	s.listenerCfg.ssl[key] = v
}

// parseInt parses v into an integer field of whatever width, refusing
// values that do not fit.
func parseInt[T int | int32 | int64](dst *T, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("%s is out of range", v)
	}
	*dst = T(n)
	return nil
}

func parseMillis(dst *time.Duration, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return fmt.Errorf("%q: want milliseconds", v)
	}
	*dst = time.Duration(n) * time.Millisecond
	return nil
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ownHostNames are the names this node is configured under, which
// browsers may use by default: its host name and the hosts of its
// listen and advertised addresses.
func ownHostNames(s serveSettings) []string {
	var names []string
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	addrs := []string{s.httpAddr, s.advertisedKafkaAddr, s.kafkaAddr}
	for _, l := range s.listeners {
		addrs = append(addrs, l.addr, l.advertised)
	}
	for _, addr := range addrs {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && !slices.Contains(names, host) {
			names = append(names, host)
		}
	}
	return names
}

// listenerAddr turns Kafka's listeners syntax (PLAINTEXT://host:port) into host:port.
func listenerAddr(v string) string {
	v = strings.Split(v, ",")[0]
	if i := strings.Index(v, "://"); i >= 0 {
		v = v[i+3:]
	}
	return v
}

// loadServeSettings layers defaults < server.properties < FERRY_* env < flags.
func loadServeSettings(args []string) (serveSettings, []string, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	values := map[string]*string{}
	for _, o := range allServeOptions() {
		usage := o.usage + " (env " + envName(o.flag) + ", properties " + strings.Join(o.keys, ", ") + ")"
		if switchOptions[o.flag] {
			v := &switchValue{s: o.def}
			fs.Var(v, o.flag, usage)
			values[o.flag] = &v.s
			continue
		}
		values[o.flag] = fs.String(o.flag, o.def, usage)
	}
	configPath := fs.String("config", os.Getenv("FERRY_CONFIG"), "Kafka-style server.properties file (env FERRY_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return serveSettings{}, nil, err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })

	s := serveSettings{broker: server.Config{AutoCreateTopics: true}}
	for _, o := range allServeOptions() {
		if err := o.set(&s, o.def); err != nil {
			return s, nil, err
		}
	}
	var warnings []string
	if *configPath != "" {
		w, err := applyPropertiesFile(&s, *configPath)
		if err != nil {
			return s, nil, err
		}
		warnings = w
	}
	for _, o := range allServeOptions() {
		v, fromEnv := os.LookupEnv(envName(o.flag))
		if explicit[o.flag] {
			v = *values[o.flag]
		} else if !fromEnv {
			continue
		}
		if err := o.set(&s, v); err != nil {
			return s, nil, fmt.Errorf("--%s=%s: %w", o.flag, v, err)
		}
	}
	if s.security && s.listenerCfg.listeners == "" {
		// One switch: the --kafka-addr listener asks for SASL.
		s.listenerCfg.shorthand = auth.SASLPlaintext
	}
	if s.advertisedKafkaAddr == "" {
		s.advertisedKafkaAddr = defaultAdvertised(s.kafkaAddr)
	}
	ls, inter, err := resolveListeners(s.listenerCfg, s.kafkaAddr, s.advertisedKafkaAddr)
	if err != nil {
		return s, nil, err
	}
	jaasWarnings, err := s.interSASL.fromJAAS(inter)
	if err != nil {
		return s, nil, err
	}
	warnings = append(warnings, jaasWarnings...)
	if err := checkInterBroker(ls, inter, s.zookeeper != "", s.interSASL.configured()); err != nil {
		return s, nil, err
	}
	s.listeners, s.interBroker = ls, inter
	s.advertisedKafkaAddr = ls[0].advertised
	s.broker.AdvertisedKafkaAddr = s.advertisedKafkaAddr
	if s.advertisedHTTPAddr == "" {
		s.advertisedHTTPAddr = advertisedHTTP(s.httpAddr, s.advertisedKafkaAddr)
	}
	return s, warnings, nil
}

// allServeOptions is every serve option: the list above and those kept
// beside the feature they configure.
func allServeOptions() []option {
	return slices.Concat(serveOptions, httpAuthOptions, interBrokerOptions, cleanerOptions, txnOptions)
}

// switchOptions are the options given as a bare --flag (true), or
// --flag=false.
var switchOptions = map[string]bool{"security": true}

// switchValue is a boolean flag kept as the string its option parses.
type switchValue struct{ s string }

func (v *switchValue) String() string     { return v.s }
func (v *switchValue) Set(s string) error { v.s = s; return nil }
func (v *switchValue) IsBoolFlag() bool   { return true }

func envName(flagName string) string {
	return "FERRY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyPropertiesFile applies a server.properties file and returns one
// warning per key ferry does not know.
func applyPropertiesFile(s *serveSettings, path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	props, err := server.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	unknown, err := s.broker.ApplyProperties(props)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	var warnings []string
	sort.Strings(unknown)
	for _, key := range unknown {
		if name, ok := listenerConnectionRateKey(key); ok {
			if err := s.listenerCfg.setConnectionRate(name, props[key]); err != nil {
				return nil, fmt.Errorf("config %s: %s: %w", path, key, err)
			}
			continue
		}
		if name, sslKey, err := listenerOverride(key); err == nil {
			if s.listenerCfg.perListener == nil {
				s.listenerCfg.perListener = map[string]map[string]string{}
			}
			if s.listenerCfg.perListener[name] == nil {
				s.listenerCfg.perListener[name] = map[string]string{}
			}
			s.listenerCfg.perListener[name][sslKey] = props[key]
			continue
		}
		if scope, ok := jaasKey(key); ok {
			if s.interSASL.jaas == nil {
				s.interSASL.jaas = map[string]string{}
			}
			s.interSASL.jaas[scope] = props[key]
			continue
		}
		if o, ok := optionForKey(key); ok {
			if err := o.set(s, props[key]); err != nil {
				return nil, fmt.Errorf("config %s: %s: %w", path, key, err)
			}
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: unknown key %q is ignored", path, key))
	}
	return warnings, nil
}

func optionForKey(key string) (option, bool) {
	for _, o := range allServeOptions() {
		for _, k := range o.keys {
			if k == key {
				return o, true
			}
		}
	}
	return option{}, false
}

func defaultAdvertised(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// advertisedHTTP is the HTTP listen address with the advertised Kafka
// host when it listens on every interface.
func advertisedHTTP(listen, kafka string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if kh, _, err := net.SplitHostPort(kafka); err == nil {
			host = kh
		}
	}
	return net.JoinHostPort(host, port)
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func runServe(args []string) error {
	s, warnings, err := loadServeSettings(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logger, err := newLogger(s.logFormat, s.logLevel)
	if err != nil {
		return err
	}
	logger = logger.With("broker", s.broker.BrokerID)
	for _, w := range warnings {
		logger.Warn(w)
	}
	if gcfloor.Start(gcfloor.DefaultFloor) { // off when GOGC is set
		logger.Debug("garbage collector heap goal kept at a floor", "floor_bytes", gcfloor.DefaultFloor)
	}
	listeners, interTLS, err := kafkaListeners(s, logger)
	if err != nil {
		return err
	}
	var interDial, selfDial wire.DialFunc
	if interTLS != nil {
		interDial = interTLS.Dial
	}
	interDial, err = withInterBrokerSASL(s, interDial)
	inProcess := &inProcessKafka{listener: s.interBroker}
	if err == nil {
		selfDial, err = inProcess.dial(s, interTLS)
	}
	if err != nil {
		return err
	}
	httpTLS, err := openHTTPTLS(s, logger)
	if err != nil {
		return err
	}
	s.broker.InterBrokerDial = interDial
	var node *clusterNode // nil: a single node
	if s.zookeeper != "" {
		if node, err = joinCluster(&s, logger); err != nil {
			return err
		}
		defer node.close()
	}
	// peerDial reaches brokers' Kafka listeners for the _schemas store
	// (the gateway's forwards, admin and coordinator requests go through
	// the forwarder itself): on a cluster through the forwarder's guard,
	// which cuts every connection to a broker the controller declares
	// dead, so that a frozen peer holds none of them beyond the election
	// (server/forward/liveness.go), and reaches this node in process.
	peerDial := interDial
	var broker *server.Broker
	var fwd *forward.Forwarder
	if node != nil {
		// Any node serves every partition over HTTP: the others' through
		// their leaders' Kafka listeners, never through its own (the
		// forwarder's seeds are the live peers of each cluster view; what
		// franz-go still sends here goes in process).
		fwd, err = forward.New(forward.Config{BrokerID: s.broker.BrokerID, Self: s.ownKafkaAddrs(), Listener: s.interBroker,
			Dial: interDial, DialSelf: selfDial,
			ClientID: fmt.Sprintf("ferry-gateway-%d", s.broker.BrokerID), Logger: logger,
			MaxBatchBytes: func(topic string) int32 {
				return int32(min(broker.ProduceLimits(topic).MaxRecordsBytes+recordbatch.HeaderSize, math.MaxInt32))
			}})
		if err != nil {
			return err
		}
		defer fwd.Close() // after the listeners' shutdown below
		s.broker.Forwarder = fwd
		peerDial = fwd.Dial
	}
	schemas, err := openSchemaRegistry(s, node != nil, peerDial, logger)
	if err != nil {
		return err
	}
	defer schemas.Close()
	var m *metrics.Metrics // nil: --metrics=false
	if s.metrics {
		m = metrics.New()
		m.AddSchemaSource(schemas.LiveVersions)
	}
	s.broker.Metrics = m
	s.broker.ValueValidator = schemas
	broker, err = server.Open(s.broker, logger)
	if err != nil {
		return err
	}
	if node != nil {
		// Registered before the listener is up: the controller's requests
		// to it are retried until it accepts, and the group coordinator's
		// __consumer_offsets needs a live broker to be assigned to.
		if err := node.register(s); err != nil {
			broker.Close()
			return err
		}
		node.followConfigChanges(broker)
		node.followPeers()
	}
	finalized, stopFeatures, unservableFeatures, err := openFeatures(s, node, logger)
	if err != nil {
		broker.Close()
		return err
	}
	defer stopFeatures()
	groupCfg := group.Config{Logger: logger, InitialRebalanceDelay: s.groupInitialDelay, OffsetsTopicPartitions: s.offsetsPartitions,
		OffsetsTopicReplicationFactor: s.offsetsReplicationFactor, OffsetsTopicSegmentBytes: s.offsetsSegmentBytes,
		OffsetsRetention: s.offsetsRetention, OffsetsRetentionCheckInterval: s.offsetsRetentionCheck,
		LagSampleInterval: s.groupLagSampleInterval}
	if s.groupInitialDelay == 0 {
		groupCfg.InitialRebalanceDelay = -1 // group.Config reads 0 as its default
	}
	groups, err := group.New(broker, groupCfg)
	if err != nil {
		broker.Close()
		return err
	}
	m.AddLagSource(groups.LagStats)
	idemCfg := s.idempotency
	idemCfg.Logger, idemCfg.ReplicationFactor = logger, s.offsetsReplicationFactor
	idem, err := idempotency.New(broker, idemCfg)
	if err != nil {
		groups.Close()
		broker.Close()
		return err
	}
	txns, txnVerifier, err := startTxnCoordinator(s, broker, broker, fwd, logger)
	if err != nil {
		idem.Close()
		groups.Close()
		broker.Close()
		return err
	}
	broker.SetTxnVerifier(txnVerifier)
	broker.AddTxnMarkerListener(groups)
	groups.SetTxnVerifier(txnVerifier)
	closeCore := func() { txns.Close(); idem.Close(); groups.Close(); broker.Close() }
	kcfg := s.kafkaLimits
	kcfg.Txns, kcfg.Features = txns, finalized
	kcfg.Listeners, kcfg.Logger, kcfg.Metrics = listeners, logger, m
	kcfg.InterBroker, kcfg.InterBrokerListener = node != nil, s.interBroker
	if err := openCredentials(&kcfg, s, node); err != nil {
		closeCore()
		return err
	}
	if err := openQuotas(&kcfg, s, node); err != nil {
		closeCore()
		return err
	}
	if kcfg.SASL() && len(kcfg.Users.Users()) == 0 {
		logger.Warn("the Kafka listener asks for SASL but there are no users yet: create one with `ferry users create NAME --data-dir " +
			s.broker.DataDir + "` while the node is stopped")
	}
	// With --security and no authorizer.class.name, the authorizer is ferry's.
	acls, closeACLs, err := openACLs(s, s.security, node, logger)
	if err != nil {
		closeCore()
		return err
	}
	defer closeACLs()
	kcfg.ACLs = acls
	httpCfg := api.Config{Logger: logger, AdvertisedKafkaAddr: s.advertisedKafkaAddr, Groups: groups, Schemas: schemas, Idempotency: idem,
		Metrics: m, AllowedHosts: s.httpAllowedHosts, HostNames: ownHostNames(s), MaxConnections: s.httpMaxConns,
		ACLs: acls, RequestsPerSecond: s.httpAuth.ratePerPrincipal}
	// POST /kafka's transactions run in this process: the coordinator and
	// the partitions led here are called directly, other brokers through
	// the forwarder (never this broker's own listener).
	transactor, err := newHTTPTransactor(s, broker, txns, fwd, logger)
	if err != nil {
		closeCore()
		return err
	}
	httpCfg.Transactor = transactor
	httpCfg.TxnAdmin = &txnAdmin{self: s.broker.BrokerID, broker: broker, coord: txns, peers: fwd}
	if acls != nil {
		// The one authorizer for every surface: HTTP routes ask the same
		// bindings the Kafka listener does.
		httpCfg.Authorizer = acls.Authorizer()
	}
	if node != nil {
		httpCfg.PeerHTTP = node.peerHTTP
		if httpTLS != nil {
			httpCfg.PeerDialTLS = httpTLS.Dial
		}
	}
	var closeTokens func()
	if httpCfg.Auth, httpCfg.Tokens, closeTokens, err = httpAuthConfig(s, node, kcfg.Users); err != nil {
		closeCore()
		return err
	}
	defer closeTokens()
	// One admin for both listeners: the controller's operations go to this
	// broker's driver when it is the controller, else through the
	// forwarder to the one that is.
	var adminCfg server.AdminConfig
	if node != nil {
		if err := node.runController(logger, m, s, ownOr(s.ownKafkaAddrs(), selfDial, interDial)); err != nil {
			closeCore()
			return err
		}
		defer node.stopController()
		kcfg.ControlledShutdown = node.controlledShutdown
		adminCfg = server.AdminConfig{Controller: node.ctl, Peers: fwd}
	}
	httpCfg.Admin = server.NewAdmin(broker, adminCfg)
	kcfg.Admin = httpCfg.Admin
	gateway, err := api.New(broker, httpCfg)
	if err != nil {
		closeCore()
		return err
	}
	kafkaServer, err := kafka.New(broker, groups, kcfg)
	if err != nil {
		closeCore()
		return err
	}
	inProcess.server.Store(kafkaServer)
	klns, err := listenKafka(s.listeners)
	if err != nil {
		closeCore()
		return err
	}
	ln, err := net.Listen("tcp", s.httpAddr)
	if err != nil {
		for _, kln := range klns {
			kln.Close()
		}
		closeCore()
		return fmt.Errorf("http listener: %w", err)
	}
	httpServer := api.NewHTTPServer(s.httpAddr, gateway.Handler(), httpCfg)
	httpLn := api.LimitListener(ln, httpCfg.MaxConnections)
	if httpTLS != nil {
		httpLn = tls.NewListener(httpLn, httpTLS.ServerConfig())
	}
	serveErr := make(chan error, 1+len(klns))
	go func() { serveErr <- httpServer.Serve(httpLn) }()
	served := make([]string, 0, len(klns))
	for i, kln := range klns {
		name := s.listeners[i].name
		go func() { serveErr <- kafkaServer.ServeListener(name, kln) }()
		served = append(served, name+"://"+kln.Addr().String()+" ("+s.listeners[i].protocol.String()+")")
	}
	logger.Info("ferry serving", "http", ln.Addr().String(), "http_tls", httpTLS != nil, "kafka", strings.Join(served, ","),
		"advertised_kafka", s.advertisedKafkaAddr, "inter_broker_listener", s.interBroker, "data_dir", s.broker.DataDir, "metrics", s.metrics)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case sig := <-stop:
		logger.Info("shutting down", "signal", sig.String())
	case err = <-serveErr:
		logger.Error("listener failed", "err", err)
	case err = <-unservableFeatures: // nil on a single node: never
		logger.Error("the cluster finalized a feature level this broker cannot serve; shutting down", "err", err)
	}
	if node != nil {
		// While its listeners still serve, so the new leaders' followers
		// can finish copying from this broker.
		node.shutdownControlled(20 * time.Second)
		node.stopController()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if shutErr := httpServer.Shutdown(ctx); shutErr != nil && !errors.Is(shutErr, http.ErrServerClosed) {
		logger.Warn("http shutdown", "err", shutErr)
	}
	if shutErr := kafkaServer.Shutdown(ctx); shutErr != nil {
		logger.Warn("kafka shutdown", "err", shutErr)
	}
	txns.Close()
	idem.Close()
	if closeErr := groups.Close(); closeErr != nil {
		logger.Warn("close group coordinator", "err", closeErr)
	}
	if closeErr := broker.Close(); closeErr != nil {
		return fmt.Errorf("close broker: %w", closeErr)
	}
	logger.Info("stopped cleanly")
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, kafka.ErrServerClosed) {
		return nil
	}
	return err
}

// kafkaAuthorizerClasses are the authorizer.class.name values Kafka's
// own authorizers go by; any of them, or "ferry", turns ferry's ACLs on
// (one implementation, Kafka's rules), so a Kafka server.properties works
// unchanged.
var kafkaAuthorizerClasses = []string{
	"ferry",
	"kafka.security.authorizer.AclAuthorizer",
	"kafka.security.auth.SimpleAclAuthorizer",
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
}

func checkAuthorizerClass(v string) error {
	if v == "" || slices.Contains(kafkaAuthorizerClasses, v) {
		return nil
	}
	return fmt.Errorf("unknown authorizer %q: want one of %s, or empty for none", v, strings.Join(kafkaAuthorizerClasses, ", "))
}

// parseSuperUsers reads super.users: principals separated by semicolons.
func parseSuperUsers(v string) ([]auth.Principal, error) {
	var out []auth.Principal
	for _, item := range strings.Split(v, ";") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		p, err := auth.ParsePrincipal(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// openHTTPTLS opens the HTTP port's TLS files when ferry.http.tls.enable
// is on (nil when off): ferry.http.ssl.* over ssl.*. The same Source
// serves the port and verifies the other nodes' gateways.
func openHTTPTLS(s serveSettings, logger *slog.Logger) (*tlsconf.Source, error) {
	if !s.httpTLS {
		return nil, nil
	}
	lookup := func(key string) (string, bool) {
		switch {
		case key == "keystore.location" && s.httpKeystore != "":
			return s.httpKeystore, true
		case key == "truststore.location" && s.httpTruststore != "":
			return s.httpTruststore, true
		case key == "client.auth":
			return "", true // HTTP authenticates with credentials, not certificates
		}
		v, ok := s.listenerCfg.ssl[key]
		return v, ok
	}
	files, err := tlsFilesFrom(lookup, "ferry.http.tls.enable")
	if err != nil {
		return nil, err
	}
	src, err := tlsconf.Open(files, logger.With("listener", "http"))
	if err != nil {
		return nil, fmt.Errorf("ferry.http.tls.enable: %w", err)
	}
	return src, nil
}

// listenKafka listens on every Kafka listener's address, in order.
func listenKafka(specs []listenerSpec) ([]net.Listener, error) {
	out := make([]net.Listener, 0, len(specs))
	for _, l := range specs {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, open := range out {
				open.Close()
			}
			return nil, fmt.Errorf("kafka listener %s: %w", l.name, err)
		}
		out = append(out, ln)
	}
	return out, nil
}

// openACLs starts the authorizer when authorizer.class.name is set (or
// security is on without one): its bindings in ZooKeeper on a cluster,
// in <data-dir>/acls.json on a single node. nil: ACLs are off.
func openACLs(s serveSettings, security bool, node *clusterNode, logger *slog.Logger) (*acl.Manager, func(), error) {
	if s.authorizerClass == "" && !security {
		return nil, func() {}, nil
	}
	a := acl.New(acl.Config{SuperUsers: s.superUsers, AllowIfNoACL: s.allowIfNoACL})
	logger.Info("ACLs on", "authorizer", cmp.Or(s.authorizerClass, "ferry"), "super_users", len(s.superUsers),
		"allow_everyone_if_no_acl_found", s.allowIfNoACL)
	if node != nil {
		store, err := acl.OpenZKStore(node.zk, a, logger)
		if err != nil {
			return nil, nil, err
		}
		return acl.NewManager(a, store), store.Close, nil
	}
	store, err := acl.OpenFileStore(s.broker.DataDir, a)
	if err != nil {
		return nil, nil, err
	}
	return acl.NewManager(a, store), func() {}, nil
}

// openSchemaRegistry opens --schema-store: postgres://… for PostgreSQL;
// empty for the embedded journal under <data-dir>/schemas on a single node
// and, on a cluster, the _schemas topic every node shares.
func openSchemaRegistry(s serveSettings, clustered bool, dial wire.DialFunc, logger *slog.Logger) (*schemaregistry.Registry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var store schemaregistry.Store
	var err error
	if clustered && s.schemaStore == "" {
		store, err = openSchemasTopic(s, dial, logger)
	} else {
		store, err = schemaregistry.OpenStore(ctx, s.schemaStore, s.broker.DataDir, logger)
	}
	if err != nil {
		return nil, fmt.Errorf("schema store: %w", err)
	}
	reg, err := schemaregistry.New(store, schemaregistry.Config{Logger: logger})
	if err != nil {
		store.Close()
		return nil, err
	}
	return reg, nil
}

// openSchemasTopic opens the cluster's _schemas store. It bootstraps from
// this node's own broker (selfKafkaAddr, which dial reaches in process);
// the client finds the topic's leader from there.
func openSchemasTopic(s serveSettings, dial wire.DialFunc, logger *slog.Logger) (schemaregistry.Store, error) {
	journal := filepath.Join(s.broker.DataDir, "schemas", "journal.jsonl")
	if fi, err := os.Stat(journal); err == nil && fi.Size() > 0 {
		logger.Warn("this node's single-node schema journal is not used on a cluster: the registry is the _schemas topic; "+
			"re-register its schemas through any node (IMPORT mode keeps their ids)", "journal", journal)
	}
	return schemaregistry.OpenTopicStore(schemaregistry.TopicStoreConfig{
		Brokers:           []string{s.selfKafkaAddr()},
		Dial:              dial,
		ReplicationFactor: s.schemasReplicationFactor,
		Logger:            logger,
	})
}

// openCredentials gives the Kafka listener its user store and the secret
// unknown users' salts derive from: the data dir's on a single node,
// ZooKeeper's on a cluster (kept current by followConfigChanges).
func openCredentials(kcfg *kafka.Config, s serveSettings, node *clusterNode) error {
	if node != nil {
		// SASL listeners for clients are fine on a cluster: the brokers talk
		// over the inter-broker listener, which checkInterBroker keeps off
		// SASL until brokers authenticate to each other.
		proposed := make([]byte, 32)
		if _, err := rand.Read(proposed); err != nil {
			return err
		}
		// One secret for every broker, so all answer an unknown user alike.
		secret, err := node.zk.GetOrCreateSecret("sasl-unknown-user-salts", proposed)
		if err != nil {
			return err
		}
		kcfg.Users, kcfg.SaslSecret = node.users, secret
		return nil
	}
	store, err := auth.OpenFileStore(s.broker.DataDir)
	if err != nil {
		return err
	}
	secret, err := auth.LoadOrCreateSecret(s.broker.DataDir)
	if err != nil {
		return err
	}
	kcfg.Users, kcfg.SaslSecret = store, secret
	return nil
}
