package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
