package server

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestApplyProperties(t *testing.T) {
	text := `# Kafka server.properties
broker.id=7
log.dirs=/var/lib/ferry
num.partitions = 6
auto.create.topics.enable=false
log.segment.bytes=1048576
log.retention.hours=168
log.retention.minutes=30
log.retention.bytes=-1
log.retention.check.interval.ms=1000
log.flush.interval.messages=1
log.flush.interval.ms=250
message.max.bytes: 2000000
ferry.log.open.files.max=4096
num.network.threads=3
long.value=a\
  b
`
	props, err := ParseProperties(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if props["long.value"] != "ab" {
		t.Fatalf("continuation: %q", props["long.value"])
	}
	var c Config
	unknown, err := c.ApplyProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(unknown)
	if strings.Join(unknown, ",") != "long.value,num.network.threads" {
		t.Fatalf("unknown keys %v", unknown)
	}
	if c.BrokerID != 7 || c.DataDir != "/var/lib/ferry" || c.NumPartitions != 6 ||
		c.AutoCreateTopics || c.MessageMaxBytes != 2000000 || c.RetentionCheckInterval != time.Second ||
		c.MaxOpenLogFiles != 4096 {
		t.Fatalf("config %+v", c)
	}
	if c.Log.SegmentBytes != 1<<20 || c.Log.RetentionTime != 30*time.Minute || c.Log.RetentionBytes != -1 ||
		c.Log.FlushMessages != 1 || c.Log.FlushInterval != 250*time.Millisecond {
		t.Fatalf("log config %+v (minutes must win over hours)", c.Log)
	}
}

func TestApplyPropertiesRejectsBadValues(t *testing.T) {
	for _, line := range []string{"broker.id=x", "num.partitions=", "auto.create.topics.enable=maybe", "log.dirs=/a,/b", "log.retention.ms=soon"} {
		props, err := ParseProperties(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		var c Config
		if _, err := c.ApplyProperties(props); err == nil || !strings.Contains(err.Error(), strings.Split(line, "=")[0]) {
			t.Fatalf("%q: error %v should name the key", line, err)
		}
	}
	if _, err := ParseProperties(strings.NewReader("just-a-word")); err == nil {
		t.Fatal("a line without = must be an error")
	}
}

// replica.fetch.wait.max.ms is read, defaults to Kafka's 500 ms, and may
// not exceed replica.lag.time.max.ms (an idle follower would leave the
// ISR between two of its fetches), as Kafka's config check refuses.
func TestReplicaFetchWaitMax(t *testing.T) {
	for _, tc := range []struct {
		props string
		want  time.Duration
		bad   bool
	}{
		{"", 500 * time.Millisecond, false},
		{"replica.fetch.wait.max.ms=20000\nreplica.lag.time.max.ms=30000", 20 * time.Second, false},
		{"replica.fetch.wait.max.ms=40000", 0, true},
		{"replica.fetch.wait.max.ms=0.5", 0, true},
	} {
		props, err := ParseProperties(strings.NewReader(tc.props))
		if err != nil {
			t.Fatal(err)
		}
		c := Config{DataDir: t.TempDir()}
		_, err = c.ApplyProperties(props)
		if err == nil {
			c.Defaults()
			err = c.Validate()
		}
		if (err != nil) != tc.bad {
			t.Fatalf("%q: %v", tc.props, err)
		}
		if !tc.bad && c.ReplicaFetchWaitMax != tc.want {
			t.Fatalf("%q: replica.fetch.wait.max.ms %v, want %v", tc.props, c.ReplicaFetchWaitMax, tc.want)
		}
	}
}
