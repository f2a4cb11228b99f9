package zookeeper

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Config change notifications name each changed topic once, in order,
// starting after the ones that existed when the follower started; one it
// cannot decode is skipped, not fatal.
func TestConfigChangesNameEachChangedTopicOnce(t *testing.T) {
	c := open(t, zks.Require(t).Addr()+testChroot(t), 10*time.Second)
	if err := c.SetTopicConfig("before", map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	w := c.WatchConfigChanges()
	defer w.Stop()
	names := <-w.C
	cursor := c.ConfigChangesAfter(names)
	if topics, err := cursor.Topics(names); err != nil || len(topics) != 0 {
		t.Fatalf("the starting notifications again: %v %v", topics, err)
	}

	for _, step := range []struct{ topic, value string }{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
		if err := c.SetTopicConfig(step.topic, map[string]string{"retention.ms": step.value}); err != nil {
			t.Fatal(err)
		}
	}
	// A notification from a writer of another format.
	if _, err := c.conn.Create(c.abs(configChangesPath+"/"+configChangePrefix), []byte(`{"version":9}`), zk.FlagSequence, openACL); err != nil {
		t.Fatal(err)
	}
	if err := c.SetTopicConfig("c", map[string]string{"retention.ms": "4"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	var got []string
	for !slices.Contains(got, "c") {
		select {
		case names = <-w.C:
		case <-deadline:
			t.Fatalf("notifications seen: %v", got)
		}
		topics, err := cursor.Topics(names)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, topics...)
	}
	// a, b and c, each once per read of the notifications: "a" again only
	// if its second change came in a later snapshot.
	if got[0] != "a" || !slices.Contains(got, "b") || slices.Contains(got, "before") {
		t.Fatalf("topics from the notifications: %v", got)
	}
	if topics, err := cursor.Topics(names); err != nil || len(topics) != 0 {
		t.Fatalf("the same notifications read twice: %v %v", topics, err)
	}
}

func TestDecodeConfigChange(t *testing.T) {
	for _, tc := range []struct {
		data string
		want string
		ok   bool
	}{
		{`{"version":2,"entity_path":"topics/orders"}`, "topics/orders", true},
		{`{"version":1,"entity_type":"topics","entity_name":"orders"}`, "topics/orders", true},
		{`{"version":2}`, "", false},
		{`{"version":3,"entity_path":"topics/x"}`, "", false},
		{`not json`, "", false},
		{``, "", false},
	} {
		got, err := decodeConfigChange([]byte(tc.data))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %q %v, want %q ok=%v", tc.data, got, err, tc.want, tc.ok)
		}
	}
}

// Broker configs are kept per broker id and for every broker, read back
// as written (none: empty), announced as broker changes, and refused for
// a name that is neither an id nor <default>.
func TestBrokerConfigsAreKeptAndAnnounced(t *testing.T) {
	c := open(t, zks.Require(t).Addr()+testChroot(t), 10*time.Second)
	if got, err := c.BrokerConfigs("3"); err != nil || len(got) != 0 {
		t.Fatalf("configs of a broker never set: %v %v", got, err)
	}
	w := c.WatchConfigChanges()
	defer w.Stop()
	names := <-w.C
	cursor := c.ConfigChangesAfter(names)
	rate := map[string]string{"leader.replication.throttled.rate": "1048576"}
	for _, entity := range []string{"3", DefaultBrokerEntity} {
		if err := c.SetBrokerConfigs(entity, rate); err != nil {
			t.Fatal(err)
		}
		if got, err := c.BrokerConfigs(entity); err != nil || !maps.Equal(got, rate) {
			t.Fatalf("configs of %s: %v %v, want %v", entity, got, err, rate)
		}
	}
	deadline := time.After(10 * time.Second)
	for brokers := false; !brokers; {
		select {
		case names = <-w.C:
		case <-deadline:
			t.Fatal("no broker config change announced")
		}
		changed, err := cursor.Read(names)
		if err != nil || len(changed.Topics) != 0 {
			t.Fatalf("broker changes read as %+v %v", changed, err)
		}
		brokers = changed.Brokers
	}
	for _, bad := range []string{"", "-1", "01", "../topics/x", "x"} {
		if err := c.SetBrokerConfigs(bad, rate); err == nil {
			t.Errorf("SetBrokerConfigs(%q) accepted", bad)
		}
	}
}
