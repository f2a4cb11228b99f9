package server

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

func configValue(t *testing.T, b *Broker, topic, name string) ConfigEntry {
	t.Helper()
	info, err := b.DescribeTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range info.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s not described", name)
	return ConfigEntry{}
}

func TestChangeTopicConfigsIsAllOrNothing(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "c", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	err := b.ChangeTopicConfigs("c", []ConfigOp{
		{Name: CfgRetentionMs, Op: ConfigSet, Value: "1000"},
		{Name: CfgCleanupPolicy, Op: ConfigAppend, Value: "shred"},
	}, false, false)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad APPEND: %v", err)
	}
	if c := configValue(t, b, "c", CfgRetentionMs); c.Source == SourceTopic {
		t.Fatalf("a refused change set retention.ms: %+v", c)
	}
	ops := []ConfigOp{{Name: CfgCleanupPolicy, Op: ConfigAppend, Value: "compact"}}
	if err := b.ChangeTopicConfigs("c", ops, false, true); err != nil {
		t.Fatal(err)
	}
	if c := configValue(t, b, "c", CfgCleanupPolicy); c.Value != "delete" {
		t.Fatalf("validate-only changed cleanup.policy to %q", c.Value)
	}
	if err := b.ChangeTopicConfigs("c", ops, false, false); err != nil {
		t.Fatal(err)
	}
	if c := configValue(t, b, "c", CfgCleanupPolicy); c.Value != "delete,compact" || c.Source != SourceTopic {
		t.Fatalf("after APPEND: %+v", c)
	}
	if s := b.mustTopic(t, "c").settings; !s.compact || s.log.RetentionTime < 0 {
		t.Fatalf("delete,compact: compact %v, retention %v", s.compact, s.log.RetentionTime)
	}
}

func (b *Broker) mustTopic(t *testing.T, name string) *topic {
	t.Helper()
	tp, err := b.lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestCheckRecordRules(t *testing.T) {
	const now = int64(1_000_000)
	open := topicSettings{tsBeforeMs: math.MaxInt64, tsAfterMs: math.MaxInt64}
	bounded := topicSettings{tsBeforeMs: 1000, tsAfterMs: 10}
	compact := open
	compact.compact = true
	for _, c := range []struct {
		name string
		s    topicSettings
		r    records.Record
		want error
	}{
		{"negative timestamp, default bounds", open, records.Record{Timestamp: -5}, nil},
		{"minimum timestamp, default bounds", open, records.Record{Timestamp: math.MinInt64}, nil},
		{"no timestamp (-1) under bounds", bounded, records.Record{Timestamp: -1}, nil},
		{"minimum timestamp, bounded before only", topicSettings{tsBeforeMs: 1000, tsAfterMs: math.MaxInt64}, records.Record{Timestamp: math.MinInt64}, ErrInvalidTimestamp},
		{"maximum timestamp, bounded after only", topicSettings{tsBeforeMs: math.MaxInt64, tsAfterMs: 10}, records.Record{Timestamp: math.MaxInt64}, ErrInvalidTimestamp},
		{"too old", bounded, records.Record{Timestamp: now - 1001}, ErrInvalidTimestamp},
		{"too new", bounded, records.Record{Timestamp: now + 11}, ErrInvalidTimestamp},
		{"within bounds", bounded, records.Record{Timestamp: now - 1000}, nil},
		{"keyless on compacted", compact, records.Record{Value: []byte("v")}, ErrInvalidRecord},
		{"keyed on compacted", compact, records.Record{Key: []byte{}, Value: []byte("v")}, nil},
	} {
		err := c.s.checkRecord(&c.r, now)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestDownConversionSetting(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "old", Partitions: 1, Configs: map[string]string{"message.downconversion.enable": "false"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "new", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.DownConversionEnabled("old"); ok {
		t.Fatal("old: down-conversion enabled despite the config")
	}
	if ok, _ := b.DownConversionEnabled("new"); !ok {
		t.Fatal("new: down-conversion disabled by default")
	}
}

// TestCompactionSettings: cleanup.policy and the compaction configs reach
// the log over the broker's log.cleaner.* defaults; max.compaction.lag.ms
// caps segment.ms for a compacted topic (KIP-354); compact alone turns
// retention off, compact,delete keeps it.
func TestCompactionSettings(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.Cleaner.DeleteRetention = 2 * time.Hour })
	check := func(cfgs map[string]string, want storage.Compaction, segAge, retention time.Duration) {
		t.Helper()
		s := b.resolveSettings(cfgs)
		if s.log.Compaction != want || s.log.SegmentMaxAge != segAge || s.log.RetentionTime != retention {
			t.Fatalf("%v: %+v, segment age %v, retention %v", cfgs, s.log.Compaction, s.log.SegmentMaxAge, s.log.RetentionTime)
		}
	}
	week := 7 * 24 * time.Hour
	check(map[string]string{}, storage.Compaction{MinCleanableRatio: 0.5, DeleteRetention: 2 * time.Hour}, week, week)
	check(map[string]string{"cleanup.policy": "compact"},
		storage.Compaction{Enabled: true, MinCleanableRatio: 0.5, DeleteRetention: 2 * time.Hour}, week, -1)
	check(map[string]string{"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1", "min.compaction.lag.ms": "1000",
		"max.compaction.lag.ms": "60000", "delete.retention.ms": "5000"},
		storage.Compaction{Enabled: true, MinCleanableRatio: 0.1, MinLag: time.Second, MaxLag: time.Minute, DeleteRetention: 5 * time.Second},
		time.Minute, week)
	check(map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "9223372036854775807"},
		storage.Compaction{Enabled: true, MinCleanableRatio: 0.5, DeleteRetention: 2 * time.Hour}, week, -1)
}
