package server

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/test/harness"
)

// memBrokerConfigs is BrokerConfigStore in memory; ZooKeeper's is tested
// in replication/zookeeper.
type memBrokerConfigs struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func (s *memBrokerConfigs) BrokerConfigs(entity string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m[entity]), nil
}

func (s *memBrokerConfigs) SetBrokerConfigs(entity string, cfgs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string]string{}
	}
	s.m[entity] = maps.Clone(cfgs)
	return nil
}

// The dynamic log defaults reach the replicas of topics without their own
// value, a broker's own value beats the cluster default, .ms beats
// .hours, and log.cleaner.threads resizes the cleaner both ways.
func TestDynamicLogDefaultsAndCleanerThreads(t *testing.T) {
	b := newTestBroker(t, func(c *Config) {
		c.BrokerConfigs = &memBrokerConfigs{}
		c.Cleaner.Backoff = 5 * time.Millisecond
	})
	if err := b.CreateTopic(TopicSpec{Name: "plain", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "own", Partitions: 1, Configs: map[string]string{CfgRetentionMs: "1000"}}); err != nil {
		t.Fatal(err)
	}
	static := b.cfg.Log
	logOf := func(topic string, p int32) storage.Config {
		t.Helper()
		part, err := b.Partition(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		return part.(interface{ LogConfig() storage.Config }).LogConfig()
	}
	change := func(entity string, ops ...ConfigOp) {
		t.Helper()
		if err := b.ChangeBrokerConfigs(entity, ops, false); err != nil {
			t.Fatal(err)
		}
	}
	change("", ConfigOp{Name: CfgLogRetentionMs, Op: ConfigSet, Value: "3600000"}, ConfigOp{Name: CfgLogSegmentBytes, Op: ConfigSet, Value: "1048576"},
		ConfigOp{Name: CfgLogCleanerThreads, Op: ConfigSet, Value: "3"})
	for p := range int32(2) {
		if c := logOf("plain", p); c.RetentionTime != time.Hour || c.SegmentBytes != 1<<20 {
			t.Errorf("plain-%d: retention %v, segment %d; want the cluster default 1h, 1 MiB", p, c.RetentionTime, c.SegmentBytes)
		}
	}
	if c := logOf("own", 0); c.RetentionTime != time.Second || c.SegmentBytes != 1<<20 {
		t.Errorf("own-0: retention %v, segment %d; want its own 1s and the default 1 MiB", c.RetentionTime, c.SegmentBytes)
	}
	if got := b.cleanerRunning(); got != 3 {
		t.Errorf("%d cleaner threads, want 3", got)
	}
	sourceOf := func(key string) (string, string) {
		for _, e := range b.describeConfigs(nil) {
			if e.Name == key {
				return e.Value, e.Source
			}
		}
		return "", ""
	}
	if v, src := sourceOf(CfgRetentionMs); v != "3600000" || src != SourceDynamicDefaultBroker {
		t.Errorf("topics describe retention.ms from the broker as %s (%s)", v, src)
	}
	if v, src := sourceOf(CfgRetentionBytes); src != SourceDefault {
		t.Errorf("retention.bytes, not changed, reads %s (%s)", v, src)
	}

	change("", ConfigOp{Name: CfgBrokerMinISR, Op: ConfigSet, Value: "2"}, ConfigOp{Name: CfgCleanerMinCleanRatio, Op: ConfigSet, Value: "0.2"},
		ConfigOp{Name: CfgLogFlushMessages, Op: ConfigSet, Value: "1000"}, ConfigOp{Name: CfgCleanerMinLagMs, Op: ConfigSet, Value: "5000"})
	if c := logOf("plain", 0); c.FlushMessages != 1000 || c.Compaction.MinCleanableRatio != 0.2 || c.Compaction.MinLag != 5*time.Second {
		t.Errorf("flush messages %d, cleanable ratio %v, min lag %v; want 1000, 0.2, 5s", c.FlushMessages, c.Compaction.MinCleanableRatio, c.Compaction.MinLag)
	}
	if v, src := sourceOf(CfgMinInsyncReplicas); v != "2" || src != SourceDynamicDefaultBroker {
		t.Errorf("min.insync.replicas reads %s (%s), want the dynamic default 2", v, src)
	}
	change("", ConfigOp{Name: CfgBrokerMinISR, Op: ConfigDelete}, ConfigOp{Name: CfgCleanerMinCleanRatio, Op: ConfigDelete},
		ConfigOp{Name: CfgLogFlushMessages, Op: ConfigDelete}, ConfigOp{Name: CfgCleanerMinLagMs, Op: ConfigDelete})
	if v, src := sourceOf(CfgMinInsyncReplicas); v != "1" || src != SourceDefault {
		t.Errorf("min.insync.replicas after the delete reads %s (%s)", v, src)
	}

	// This broker's own hours lose to the default's ms; its own ms wins.
	change("0", ConfigOp{Name: CfgLogRetentionHours, Op: ConfigSet, Value: "2"})
	if c := logOf("plain", 0); c.RetentionTime != time.Hour {
		t.Errorf("with the default's ms and own hours: %v, want 1h", c.RetentionTime)
	}
	change("0", ConfigOp{Name: CfgLogRetentionMs, Op: ConfigSet, Value: "60000"})
	if c := logOf("plain", 0); c.RetentionTime != time.Minute {
		t.Errorf("with own ms: %v, want 1m", c.RetentionTime)
	}
	if v, src := sourceOf(CfgRetentionMs); v != "60000" || src != SourceDynamicBroker {
		t.Errorf("with own ms, topics describe retention.ms as %s (%s)", v, src)
	}

	change("0", ConfigOp{Name: CfgLogRetentionMs, Op: ConfigDelete}, ConfigOp{Name: CfgLogRetentionHours, Op: ConfigDelete})
	change("", ConfigOp{Name: CfgLogRetentionMs, Op: ConfigDelete}, ConfigOp{Name: CfgLogSegmentBytes, Op: ConfigDelete},
		ConfigOp{Name: CfgLogCleanerThreads, Op: ConfigDelete})
	if c := logOf("plain", 1); c.RetentionTime != static.RetentionTime || c.SegmentBytes != static.SegmentBytes {
		t.Errorf("after the deletes: %v, %d; want server.properties' %v, %d", c.RetentionTime, c.SegmentBytes, static.RetentionTime, static.SegmentBytes)
	}
	harness.WaitFor(t, "one cleaner thread after going back to 1", 10*time.Second, func() bool { return b.cleanerRunning() == 1 })

	for _, bad := range []ConfigOp{{Name: CfgLogCleanerThreads, Op: ConfigSet, Value: "0"}, {Name: CfgLogSegmentBytes, Op: ConfigSet, Value: "10"},
		{Name: CfgCleanerMinCleanRatio, Op: ConfigSet, Value: "1.5"}, {Name: CfgBrokerMinISR, Op: ConfigSet, Value: "0"},
		{Name: CfgLogRetentionHours, Op: ConfigSet, Value: "soon"}, {Name: "log.dirs", Op: ConfigSet, Value: "/x"}} {
		if err := b.ChangeBrokerConfigs("", []ConfigOp{bad}, false); err == nil {
			t.Errorf("%s=%s accepted", bad.Name, bad.Value)
		}
	}
}

func (b *Broker) cleanerRunning() int {
	b.cleaner.mu.Lock()
	defer b.cleaner.mu.Unlock()
	return b.cleaner.mu.running
}
