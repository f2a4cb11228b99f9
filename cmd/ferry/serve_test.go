package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/kafka"
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

// --security makes the Kafka listener SASL_PLAINTEXT unless listeners
// names a protocol; listeners keeps its scheme as the protocol.
func TestSecuritySettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want auth.SecurityProtocol
		addr string
	}{
		{nil, auth.Plaintext, ":9092"},
		{[]string{"--security"}, auth.SASLPlaintext, ":9092"},
		{[]string{"--security", "--kafka-addr", "127.0.0.1:1"}, auth.SASLPlaintext, "127.0.0.1:1"},
		{[]string{"--security", "--kafka-addr", "PLAINTEXT://127.0.0.1:1"}, auth.Plaintext, "127.0.0.1:1"},
		{[]string{"--kafka-addr", "SASL_PLAINTEXT://127.0.0.1:2"}, auth.SASLPlaintext, "127.0.0.1:2"},
	} {
		s, _, err := loadServeSettings(tc.args)
		if err != nil || s.kafkaLimits.SecurityProtocol != tc.want || s.kafkaAddr != tc.addr {
			t.Errorf("%v: %v %s %v, want %v %s", tc.args, s.kafkaLimits.SecurityProtocol, s.kafkaAddr, err, tc.want, tc.addr)
		}
	}
	t.Setenv("FERRY_SECURITY", "true")
	t.Setenv("FERRY_CONNECTIONS_MAX_REAUTH_MS", "1500")
	t.Setenv("FERRY_SASL_ENABLED_MECHANISMS", "PLAIN")
	s, _, err := loadServeSettings(nil)
	if err != nil || s.kafkaLimits.SecurityProtocol != auth.SASLPlaintext || s.kafkaLimits.ReauthTimeout != 1500*time.Millisecond ||
		len(s.kafkaLimits.SaslMechanisms) != 1 {
		t.Errorf("from the environment: %+v %v", s.kafkaLimits, err)
	}
	for _, bad := range []string{"SSL://:1", "BOGUS://:1", "PLAINTEXT://:1,SASL_PLAINTEXT://:2"} {
		if _, _, err := loadServeSettings([]string{"--kafka-addr", bad}); err == nil {
			t.Errorf("listeners %s accepted", bad)
		}
	}
}

// Until brokers have a listener of their own, a cluster refuses a SASL
// Kafka listener: their own connections would be shut out.
func TestClusterRefusesSaslListener(t *testing.T) {
	cfg := kafka.Config{SecurityProtocol: auth.SASLPlaintext}
	err := openCredentials(&cfg, serveSettings{}, &clusterNode{})
	if err == nil || !strings.Contains(err.Error(), "SASL_PLAINTEXT") {
		t.Fatalf("a SASL listener on a cluster: %v", err)
	}
}
