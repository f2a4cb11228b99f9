package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/features"
	"github.com/ferry-mq/ferry/server/forward"
	"github.com/ferry-mq/ferry/server/txn"
)

// txnOptions are the transaction coordinator's broker settings, with
// Kafka's names and defaults.
var txnOptions = []option{
	txnIntOption("transaction-state-log-num-partitions", "transaction.state.log.num.partitions",
		"partitions of __transaction_state when it is created (an existing topic keeps its count)", "50", 1,
		func(c *txn.Config, n int64) { c.StatePartitions = int32(n) }),
	txnIntOption("transaction-state-log-replication-factor", "transaction.state.log.replication.factor",
		"replicas of __transaction_state when a cluster creates it (on the first FindCoordinator of a transaction); a single node uses 1", "3", 1,
		func(c *txn.Config, n int64) { c.StateReplicationFactor = int16(min(n, 32767)) }),
	txnIntOption("transaction-state-log-min-isr", "transaction.state.log.min.isr",
		"min.insync.replicas of __transaction_state", "2", 1,
		func(c *txn.Config, n int64) { c.StateMinISR = int(n) }),
	txnIntOption("transaction-state-log-segment-bytes", "transaction.state.log.segment.bytes",
		"segment.bytes of __transaction_state when it is created", "104857600", 1024,
		func(c *txn.Config, n int64) { c.StateSegmentBytes = int32(min(n, 1<<31-1)) }),
	txnIntOption("transaction-max-timeout-ms", "transaction.max.timeout.ms",
		"the longest transaction.timeout.ms a producer may ask (INVALID_TRANSACTION_TIMEOUT above it)", "900000", 1,
		func(c *txn.Config, n int64) { c.MaxTimeout = time.Duration(n) * time.Millisecond }),
	{"transaction-version", []string{"transaction.version"},
		"the highest transaction.version (KIP-890) this broker supports, 1 or 2; the level the cluster uses is finalized once for all brokers (kafka-features.sh, `ferry features`): a new cluster finalizes the highest level every registered broker supports, and a broker that supports less than the finalized level refuses to start. 1 emulates a broker of an older release (a mixed cluster)", "2",
		func(s *serveSettings, v string) error {
			n, err := strconv.ParseInt(v, 10, 16)
			if err == nil && (n < 1 || n > int64(features.MaxTransactionVersion)) {
				err = fmt.Errorf("must be 1 or %d", features.MaxTransactionVersion)
			}
			s.maxTransactionVersion = int16(n)
			return err
		}},
	txnIntOption("transactional-id-expiration-ms", "transactional.id.expiration.ms",
		"a transactional id without an open transaction that sees no request this long is removed", "604800000", 1,
		func(c *txn.Config, n int64) { c.IDExpiration = time.Duration(n) * time.Millisecond }),
	txnIntOption("transaction-abort-timed-out-transaction-cleanup-interval-ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
		"how often transactions open longer than their timeout are aborted", "10000", 1,
		func(c *txn.Config, n int64) { c.AbortTimedOutInterval = time.Duration(n) * time.Millisecond }),
	txnIntOption("transaction-remove-expired-transaction-cleanup-interval-ms", "transaction.remove.expired.transaction.cleanup.interval.ms",
		"how often expired transactional ids are removed", "3600000", 1,
		func(c *txn.Config, n int64) { c.RemoveExpiredInterval = time.Duration(n) * time.Millisecond }),
}

func txnIntOption(flag, key, usage, def string, least int64, set func(*txn.Config, int64)) option {
	return option{flag, []string{key}, usage, def, func(s *serveSettings, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n < least {
			err = errors.New("must be at least " + strconv.FormatInt(least, 10))
		}
		set(&s.txn, n)
		return err
	}}
}

// startTxnCoordinator starts the transaction coordinator over broker:
// local writes the markers of partitions this broker leads (the broker's
// WriteTxnMarkers), fwd (nil on a single node) reaches the other brokers'
// leaders and coordinators. It returns the KIP-890 verifier for the
// broker's produce path.
func startTxnCoordinator(s serveSettings, broker *server.Broker, local txn.MarkerWriter, fwd *forward.Forwarder,
	logger *slog.Logger) (*txn.Coordinator, *txn.Verifier, error) {
	var peers txn.PeerRequester // an untyped nil on a single node
	if fwd != nil {
		peers = fwd
	}
	cfg := s.txn
	cfg.Logger = logger
	cfg.Markers = &txn.ClusterMarkers{Broker: broker, Local: local, Peers: peers}
	c, err := txn.New(broker, cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, &txn.Verifier{Coordinator: c, Peers: peers}, nil
}

// newHTTPTransactor is POST /kafka's transactor: a pool of transactional
// ids named after this broker, run in process against coord and broker,
// with fwd (nil on a single node) for coordinators and leaders elsewhere.
func newHTTPTransactor(s serveSettings, broker *server.Broker, coord *txn.Coordinator, fwd *forward.Forwarder,
	logger *slog.Logger) (*txn.Transactor, error) {
	var peers txn.PeerRequester // an untyped nil on a single node
	if fwd != nil {
		peers = fwd
	}
	return txn.NewTransactor(txn.TransactorConfig{Broker: broker, Coordinator: coord, Peers: peers,
		IDPrefix: fmt.Sprintf("__ferry-http-%d", s.broker.BrokerID), Logger: logger})
}
