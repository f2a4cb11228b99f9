package zookeeper

import (
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
