package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/txn"
)

// Each transactions subcommand refuses incomplete flags as a usage error
// before it dials anything.
func TestTransactionsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"describe"},
		{"describe-producers", "--topic", "t"},
		{"describe-producers", "--partition", "0"},
		{"abort", "--topic", "t", "--partition", "0"},
		{"abort", "--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "1"},
		{"abort", "--partition", "0", "--start-offset", "3"},
		{"list", "extra"},
		{"unknown"},
	} {
		if err := runTransactions(args); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// The coordinator's settings take Kafka's keys, defaults and bounds; the
// coordinator starts from them on a single node.
func TestTxnSettings(t *testing.T) {
	s, _, err := loadServeSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.txn; c.StatePartitions != 50 || c.StateReplicationFactor != 3 || c.StateMinISR != 2 || c.MaxTimeout != 15*time.Minute ||
		c.IDExpiration != 7*24*time.Hour || c.AbortTimedOutInterval != 10*time.Second || c.StateSegmentBytes != 100<<20 {
		t.Fatalf("defaults: %+v", c)
	}
	s, _, err = loadServeSettings([]string{"--transaction-max-timeout-ms", "60000", "--transaction-state-log-num-partitions", "4"})
	if err != nil || s.txn.MaxTimeout != time.Minute || s.txn.StatePartitions != 4 {
		t.Fatalf("flags: %+v %v", s.txn, err)
	}
	for _, bad := range [][]string{
		{"--transaction-state-log-num-partitions", "0"},
		{"--transaction-max-timeout-ms", "soon"},
		{"--transaction-state-log-segment-bytes", "10"},
	} {
		if _, _, err := loadServeSettings(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	s.broker.DataDir = t.TempDir()
	broker, err := server.Open(s.broker, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	c, v, err := startTxnCoordinator(s, broker, noMarkers{}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// As Kafka, the state topic exists once a transaction needs it.
	if _, err := broker.PartitionCount(txn.StateTopic); err == nil {
		t.Fatalf("%s created before any transaction", txn.StateTopic)
	}
	pid, _, code := c.InitProducerID(context.Background(), "tx", 1000, txn.ProducerIDAndEpoch{ID: -1})
	if code != 0 || v.VerifyTxnPartition(context.Background(), "tx", pid, 0, "t", 0) == 0 {
		t.Fatalf("init %d; a partition outside the transaction verified", code)
	}
	if n, err := broker.PartitionCount(txn.StateTopic); err != nil || n != 4 {
		t.Fatalf("%s: %d partitions, %v", txn.StateTopic, n, err)
	}
}

type noMarkers struct{}

func (noMarkers) WriteTxnMarkers(_ context.Context, ms []server.TxnMarker) []error {
	return make([]error, len(ms))
}
