package zookeeper

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// Kafka's FeatureZNode, version 2 (KIP-778), and a version 1 one as Kafka
// 2.7–3.2 wrote it (with min_version_level, ignored).
const (
	kafkaFeatureV2 = `{"version":2,"status":1,"features":{"transaction.version":{"max_version_level":2}}}`
	kafkaFeatureV1 = `{"version":1,"status":1,"features":{"transaction.version":{"min_version_level":1,"max_version_level":2}}}`
	kafkaBrokerTV  = `{"features":{"transaction.version":{"min_version":0,"max_version":2}},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1625336133848"}`
)

func TestFeatureZNodeIsKafkas(t *testing.T) {
	sameJSON(t, "/feature", encodeFeatures(map[string]int16{"transaction.version": 2}), kafkaFeatureV2)
	for _, in := range []string{kafkaFeatureV2, kafkaFeatureV1} {
		f, err := decodeFeatures([]byte(in), 4)
		if err != nil || f.Epoch != 4 || !reflect.DeepEqual(f.Levels, map[string]int16{"transaction.version": 2}) {
			t.Errorf("decode %s: %+v %v", in, f, err)
		}
	}
	if f, err := decodeFeatures([]byte(`{"version":2,"status":0,"features":{"transaction.version":{"max_version_level":2}}}`), 1); err != nil || len(f.Levels) != 0 {
		t.Errorf("a disabled /feature finalizes nothing: %+v %v", f, err)
	}
	for _, bad := range []string{`{"version":3,"status":1,"features":{}}`, `{"version":2,"status":1,"features":{"x":{}}}`,
		`{"version":2,"status":1,"features":{"x":{"max_version_level":70000}}}`, `{"version":2,"status":1,"features":{"x":{"max_version_level":-1}}}`, `[]`} {
		if _, err := decodeFeatures([]byte(bad), 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %s: %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestBrokerFeaturesAreKafkas(t *testing.T) {
	b := BrokerInfo{ID: 1, JMXPort: -1, Timestamp: 1625336133848, Version: 5,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}},
		Features:  map[string]FeatureRange{"transaction.version": {Min: 0, Max: 2}}}
	sameJSON(t, "broker with features", encodeBroker(b), kafkaBrokerTV)
	got, err := decodeBroker(1, []byte(kafkaBrokerTV))
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	bad := `{"features":{"transaction.version":{"min_version":3,"max_version":2}},"endpoints":["PLAINTEXT://h:1"],"version":5}`
	if _, err := decodeBroker(1, []byte(bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("an inverted range: %v", err)
	}
}

// /feature on a server: created once (a second creation loses), replaced
// only at the version read, the epoch its data version, watched.
func TestFeaturesConditionalWritesAndWatch(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	f, err := c.Features()
	if err != nil || f.Epoch != -1 || len(f.Levels) != 0 {
		t.Fatalf("absent: %+v %v", f, err)
	}
	w := c.WatchFeatures()
	defer w.Stop()
	nextSnapshot(t, w, func(f FinalizedFeatures) bool { return f.Epoch == -1 })
	if f, err = c.SetFeatures(map[string]int16{"transaction.version": 2}, -1); err != nil || f.Epoch != 0 {
		t.Fatalf("create: %+v %v", f, err)
	}
	sameJSON(t, "/feature", raw(t, srv.Addr(), root+"/feature"), kafkaFeatureV2)
	if _, err := c.SetFeatures(map[string]int16{"transaction.version": 1}, -1); !errors.Is(err, ErrFeaturesChanged) {
		t.Fatalf("a second creation: %v", err)
	}
	if _, err := c.SetFeatures(map[string]int16{"transaction.version": 1}, 5); !errors.Is(err, ErrFeaturesChanged) {
		t.Fatalf("a stale epoch: %v", err)
	}
	if f, err = c.SetFeatures(map[string]int16{"transaction.version": 1}, 0); err != nil || f.Epoch != 1 {
		t.Fatalf("replace: %+v %v", f, err)
	}
	got := nextSnapshot(t, w, func(f FinalizedFeatures) bool { return f.Epoch == 1 })
	if got.Levels["transaction.version"] != 1 {
		t.Fatalf("watched: %+v", got)
	}
	if f, err = c.SetFeatures(map[string]int16{"transaction.version": 0}, 1); err != nil || len(f.Levels) != 0 {
		t.Fatalf("level 0 removes the feature: %+v %v", f, err)
	}
}
