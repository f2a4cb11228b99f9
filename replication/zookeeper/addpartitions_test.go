package zookeeper

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
)

// Adding partitions rewrites /brokers/topics/<t> as Kafka's
// AdminZkClient.addPartitions does: the existing partitions and the topic
// id as they were, the new ones joined, the JSON Kafka writes. The write is
// conditional on the version the change was made to: a change made to an
// older version, or racing another broker's, is refused and the znode keeps
// the winner's assignment.
func TestAddPartitionsRewritesTheTopicZnode(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	other := open(t, srv.Addr()+root, 5*time.Second) // another broker's session
	ta := TopicAssignment{Name: "orders", ID: sampleUUID, Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}}
	if err := c.CreateTopic(ta, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	watch, err := c.WatchTopic("orders")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	nextSnapshot(t, watch, func(s TopicSnapshot) bool { return len(s.Assignment.Partitions) == 3 })

	m := NewMetadata(c, sampleUUID.String())
	read, ok, err := m.Topic("orders")
	if err != nil || !ok {
		t.Fatalf("read: %v %v", ok, err)
	}
	if err := m.AddPartitions("orders", read.Version, [][]int32{{1, 3, 2}, {2, 1, 3}}); err != nil {
		t.Fatalf("add partitions: %v", err)
	}
	const want = `{"partitions":{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2],"3":[1,3,2],"4":[2,1,3]},` +
		`"topic_id":"AAECAwQFRgeICQoLDA0ODw","adding_replicas":{},"removing_replicas":{},"version":3}`
	sameJSON(t, "/brokers/topics/orders", raw(t, srv.Addr(), root+"/brokers/topics/orders"), want)
	snap := nextSnapshot(t, watch, func(s TopicSnapshot) bool { return len(s.Assignment.Partitions) == 5 })
	if !slices.Equal(snap.Assignment.Partitions[4], []int32{2, 1, 3}) || snap.Assignment.ID != sampleUUID {
		t.Fatalf("the topic watch sees %+v", snap.Assignment)
	}
	if cfg, err := c.TopicConfig("orders"); err != nil || cfg["retention.ms"] != "1000" {
		t.Fatalf("configs after adding partitions: %v %v", cfg, err)
	}

	// An add made to the version before it (a broker that read the topic
	// then) is refused; PutTopic, which changes configs, adds none.
	if err := m.AddPartitions("orders", read.Version, [][]int32{{1, 2, 3}}); !errors.Is(err, replication.ErrTopicChanged) {
		t.Fatalf("an add to an older version: %v, want ErrTopicChanged", err)
	}
	wider := read
	wider.Replicas = append(slices.Clone(read.Replicas), [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}...)
	if err := m.PutTopic(wider); err == nil {
		t.Fatal("PutTopic added partitions")
	}
	// A broker whose table is behind changes configs: the partitions stay.
	if err := m.PutTopic(replication.TopicMetadata{Name: "orders", ID: read.ID, Replicas: read.Replicas,
		Configs: map[string]string{"retention.ms": "2000"}}); err != nil {
		t.Fatalf("a config change from a broker that knows 3 of 5 partitions: %v", err)
	}
	sameJSON(t, "after a config change", raw(t, srv.Addr(), root+"/brokers/topics/orders"), want)

	// Another broker creating a topic of the same name at once (an
	// auto-create racing the first create) is told it exists, with its
	// own id and configs: it must not keep its topic for this one.
	rival := replication.TopicMetadata{Name: "orders", ID: replication.NewTopicID(), Replicas: read.Replicas}
	if err := NewMetadata(other, sampleUUID.String()).PutTopic(rival); !errors.Is(err, replication.ErrTopicExists) {
		t.Fatalf("a rival create of the same name: %v, want ErrTopicExists", err)
	}
	sameJSON(t, "after a rival create", raw(t, srv.Addr(), root+"/brokers/topics/orders"), want)

	// Another broker adds a partition after this one read the topic: the
	// conditional write fails and the znode keeps the other's partition.
	now, _, err := m.Topic("orders")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.AddPartitions("orders", map[int32][]int32{5: {3, 2, 1}}, now.Version); err != nil {
		t.Fatalf("the other broker's add: %v", err)
	}
	if err := c.AddPartitions("orders", map[int32][]int32{5: {1, 2, 3}}, now.Version); !errors.Is(err, ErrStaleTopic) {
		t.Fatalf("a write at the version before the other's: %v, want ErrStaleTopic", err)
	}
	if err := m.AddPartitions("orders", now.Version, [][]int32{{1, 2, 3}}); !errors.Is(err, replication.ErrTopicChanged) {
		t.Fatalf("an add racing the other broker's: %v, want ErrTopicChanged", err)
	}
	after, _, err := m.Topic("orders")
	if err != nil || len(after.Replicas) != 6 || !slices.Equal(after.Replicas[5], []int32{3, 2, 1}) {
		t.Fatalf("the winner's assignment was not kept: %+v %v", after.Replicas, err)
	}

	// Partitions are numbered on without a gap, and only on a topic that exists.
	if err := c.AddPartitions("orders", map[int32][]int32{8: {1, 2, 3}}, after.Version); err == nil {
		t.Fatal("partition 8 of a topic with 6 was accepted")
	}
	if err := c.AddPartitions("orders", map[int32][]int32{6: {1, 1}}, after.Version); err == nil {
		t.Fatal("a replica list naming broker 1 twice was accepted")
	}
	if err := m.AddPartitions("missing", 0, [][]int32{{1}}); !errors.Is(err, replication.ErrTopicChanged) {
		t.Fatalf("adding to a missing topic: %v, want ErrTopicChanged", err)
	}
	final, _, err := m.Topic("orders")
	if err != nil || final.Version != after.Version || !slices.EqualFunc(final.Replicas, after.Replicas, slices.Equal) {
		t.Fatalf("refused changes wrote something: %+v %v", final, err)
	}
	if err := c.MarkTopicForDeletion("orders"); err != nil {
		t.Fatal(err)
	}
	if err := m.AddPartitions("orders", final.Version, [][]int32{{1, 2, 3}}); !errors.Is(err, replication.ErrTopicQueuedForDeletion) {
		t.Fatalf("adding to a topic queued for deletion: %v, want ErrTopicQueuedForDeletion", err)
	}
}
