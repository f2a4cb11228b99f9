package server

import (
	"errors"
	"math"
	"testing"

	"github.com/ferry-mq/ferry/server/records"
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
