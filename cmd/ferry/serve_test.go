package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// replica.high.watermark.checkpoint.interval.ms is Kafka's key and
// default, settable as a flag and in server.properties like its
// neighbours; 0 would checkpoint in a busy loop and is refused.
func TestHighWatermarkCheckpointIntervalSetting(t *testing.T) {
	s, _, err := loadServeSettings(nil)
	if err != nil || s.broker.HighWatermarkCheckpointInterval != 5*time.Second {
		t.Fatalf("default: %v %v, want 5s", s.broker.HighWatermarkCheckpointInterval, err)
	}
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("replica.high.watermark.checkpoint.interval.ms=250\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, warnings, err := loadServeSettings([]string{"--config", props})
	if err != nil || len(warnings) > 0 || s.broker.HighWatermarkCheckpointInterval != 250*time.Millisecond {
		t.Fatalf("properties: %v %v %v, want 250ms", s.broker.HighWatermarkCheckpointInterval, warnings, err)
	}
	s, _, err = loadServeSettings([]string{"--replica-high-watermark-checkpoint-interval-ms", "1000"})
	if err != nil || s.broker.HighWatermarkCheckpointInterval != time.Second {
		t.Fatalf("flag: %v %v, want 1s", s.broker.HighWatermarkCheckpointInterval, err)
	}
	if _, _, err := loadServeSettings([]string{"--replica-high-watermark-checkpoint-interval-ms", "0"}); err == nil {
		t.Fatal("an interval of 0 was accepted")
	}
}

// --security makes the --kafka-addr listener SASL_PLAINTEXT; listeners
// names protocols itself.
func TestSecuritySettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want auth.SecurityProtocol
		addr string
	}{
		{nil, auth.Plaintext, ":9092"},
		{[]string{"--security"}, auth.SASLPlaintext, ":9092"},
		{[]string{"--security", "--kafka-addr", "127.0.0.1:1"}, auth.SASLPlaintext, "127.0.0.1:1"},
		{[]string{"--security", "--listeners", "PLAINTEXT://127.0.0.1:1"}, auth.Plaintext, "127.0.0.1:1"},
		{[]string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:2"}, auth.SASLPlaintext, "127.0.0.1:2"},
	} {
		s, _, err := loadServeSettings(tc.args)
		if err != nil || len(s.listeners) != 1 || s.listeners[0].protocol != tc.want || s.listeners[0].addr != tc.addr {
			t.Errorf("%v: %+v %v, want one %v listener on %s", tc.args, s.listeners, err, tc.want, tc.addr)
		}
	}
	t.Setenv("FERRY_SECURITY", "true")
	t.Setenv("FERRY_CONNECTIONS_MAX_REAUTH_MS", "1500")
	t.Setenv("FERRY_SASL_ENABLED_MECHANISMS", "PLAIN")
	s, _, err := loadServeSettings(nil)
	if err != nil || len(s.listeners) != 1 || s.listeners[0].protocol != auth.SASLPlaintext ||
		s.kafkaLimits.ReauthTimeout != 1500*time.Millisecond || len(s.kafkaLimits.SaslMechanisms) != 1 {
		t.Errorf("from the environment: %+v %+v %v", s.listeners, s.kafkaLimits, err)
	}
	if _, _, err := loadServeSettings([]string{"--listeners", "BOGUS://:1"}); err == nil {
		t.Error("a listener of no known protocol accepted")
	}
}

// A cluster may ask its clients for SASL, but not its brokers: they do not
// authenticate to each other yet, so the inter-broker listener must not
// be SASL.
func TestClusterKeepsSaslOffTheInterBrokerListener(t *testing.T) {
	_, _, err := loadServeSettings([]string{"--zookeeper", "127.0.0.1:1", "--security"})
	if err == nil || !strings.Contains(err.Error(), "inter.broker.listener.name") {
		t.Fatalf("--security on a cluster with one listener: %v", err)
	}
	s, _, err := loadServeSettings([]string{"--zookeeper", "127.0.0.1:1", "--security",
		"--listeners", "EXTERNAL://127.0.0.1:1,INTERNAL://127.0.0.1:2",
		"--listener-security-protocol-map", "EXTERNAL:SASL_PLAINTEXT,INTERNAL:PLAINTEXT",
		"--inter-broker-listener-name", "INTERNAL"})
	if err != nil || len(s.listeners) != 2 || s.interBroker != "INTERNAL" {
		t.Fatalf("SASL for clients, PLAINTEXT between brokers: %+v %v", s.listeners, err)
	}
}

// transaction-version is a broker's highest supported transaction.version
// (the cluster finalizes the level): 2 by default, 1 to emulate an older
// broker, anything else refused.
func TestSupportedTransactionVersionSetting(t *testing.T) {
	s, _, err := loadServeSettings(nil)
	if err != nil || s.maxTransactionVersion != 2 {
		t.Fatalf("default: %d %v, want 2", s.maxTransactionVersion, err)
	}
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("transaction.version=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, _, err = loadServeSettings([]string{"--config", props}); err != nil || s.maxTransactionVersion != 1 {
		t.Fatalf("properties: %d %v, want 1", s.maxTransactionVersion, err)
	}
	for _, bad := range []string{"0", "3", "x"} {
		if _, _, err := loadServeSettings([]string{"--transaction-version", bad}); err == nil {
			t.Fatalf("--transaction-version %s accepted", bad)
		}
	}
}
