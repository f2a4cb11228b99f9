package replication

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A data dir written by an earlier release (version 1: partition counts)
// reads as one replica per partition, this node, and keeps its cluster id.
func TestLocalMetadataReadsTheVersion1File(t *testing.T) {
	dir := t.TempDir()
	old := `{"version":1,"cluster_id":"abc","broker_id":0,"topics":[` +
		`{"name":"orders","id":"tid","partitions":2,"replication_factor":1,"configs":{"retention.ms":"1000"}}]}`
	if err := os.WriteFile(filepath.Join(dir, LocalMetadataFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenLocalMetadata(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []TopicMetadata{{Name: "orders", ID: "tid", Replicas: [][]int32{{3}, {3}}, Configs: map[string]string{"retention.ms": "1000"}}}
	if got, _ := m.Topics(); !reflect.DeepEqual(got, want) || m.ClusterID() != "abc" {
		t.Fatalf("topics %+v cluster %q, want %+v and abc", got, m.ClusterID(), want)
	}
}

// Changes are durable: a reopen sees every put and removal, and a new
// data dir gets a cluster id that then stays.
func TestLocalMetadataChangesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenLocalMetadata(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := m.ClusterID()
	if len(id) != 22 {
		t.Fatalf("cluster id %q, want 22 base64url characters", id)
	}
	a := TopicMetadata{Name: "a", ID: NewTopicID(), Replicas: [][]int32{{1}}}
	b := TopicMetadata{Name: "b", ID: NewTopicID(), Replicas: [][]int32{{1}, {1}, {1}}, Configs: map[string]string{"x": "y"}}
	for _, step := range []func() error{
		func() error { return m.PutTopic(b) },
		func() error { return m.PutTopic(a) },
		func() error { a.Replicas = append(a.Replicas, []int32{1}); return m.PutTopic(a) },
		func() error { return m.RemoveTopic("b") },
		func() error { return m.RemoveTopic("never") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	again, err := OpenLocalMetadata(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := again.Topics(); len(got) != 1 || got[0].Name != "a" || got[0].Partitions() != 2 || again.ClusterID() != id {
		t.Fatalf("after reopen: %+v, cluster %q (want a with 2 partitions, %q)", got, again.ClusterID(), id)
	}
}

func TestLocalMetadataRefusesAMalformedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LocalMetadataFile), []byte(`{"topics":[`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocalMetadata(dir, 1); err == nil || !strings.Contains(err.Error(), LocalMetadataFile) {
		t.Fatalf("open of a truncated file: %v, want an error naming %s", err, LocalMetadataFile)
	}
}

// A topic of a recorded name with another id is a different topic: it is
// refused, and the recorded one is kept as it was.
func TestLocalMetadataRefusesAnotherTopicOfTheSameName(t *testing.T) {
	m, err := OpenLocalMetadata(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	first := TopicMetadata{Name: "orders", ID: NewTopicID(), Replicas: [][]int32{{1}}}
	if err := m.PutTopic(first); err != nil {
		t.Fatal(err)
	}
	if err := m.PutTopic(TopicMetadata{Name: "orders", ID: NewTopicID(), Replicas: [][]int32{{1}, {1}}}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("another topic of the same name: %v, want ErrTopicExists", err)
	}
	got, ok, err := m.Topic("orders")
	if err != nil || !ok || got.ID != first.ID || len(got.Replicas) != 1 {
		t.Fatalf("the recorded topic changed: %+v %v %v", got, ok, err)
	}
}
