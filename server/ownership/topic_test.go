package ownership

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/fence"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
	"github.com/ferry-mq/ferry/test/harness"
)

var errNoOwner = errors.New("no owner")

func openBroker(t *testing.T, cfg server.Config) *server.Broker {
	t.Helper()
	cfg.DataDir = t.TempDir()
	b, err := server.Open(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// byName reads a key's partition from its first letter: tests choose it.
func byName(key string, n int32) int32 { return int32(key[0]-'a') % n }

func testTopic(b *server.Broker) *Topic {
	return &Topic{Broker: b, Name: "__coordinated", Partitions: 4, SingleNodePartitions: 1, ReplicationFactor: 3,
		SegmentBytes: 1 << 20, ReplicationSetting: "coordinated.replication.factor", MinISR: 2,
		Configs: map[string]string{"unclean.leader.election.enable": "false"}, PartitionOf: byName, NoCoordinator: errNoOwner}
}

func configsOf(t *testing.T, b *server.Broker, name string) map[string]string {
	t.Helper()
	info, err := b.DescribeTopic(name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range info.Configs {
		out[c.Name] = c.Value
	}
	return out
}

// TestTopicCreateOnSingleNode: a single node creates the topic compacted,
// with one replica, its single-node partition count and min.insync.replicas
// capped at that one replica; a second Create finds it and succeeds.
func TestTopicCreateOnSingleNode(t *testing.T) {
	b := openBroker(t, server.Config{})
	topic := testTopic(b)
	if _, ok := topic.Partition("a"); ok {
		t.Fatal("a partition of a topic not created yet")
	}
	if err := topic.Create(); err != nil {
		t.Fatal(err)
	}
	if err := topic.Create(); err != nil {
		t.Fatalf("creating it again: %v", err)
	}
	if n := topic.PartitionCount(); n != 1 {
		t.Fatalf("%d partitions, want the single node's 1", n)
	}
	info, _ := b.DescribeTopic(topic.Name)
	if info.ReplicationFactor != 1 {
		t.Fatalf("replication factor %d on a single node", info.ReplicationFactor)
	}
	cfg := configsOf(t, b, topic.Name)
	for k, want := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576",
		"min.insync.replicas": "1", "unclean.leader.election.enable": "false"} {
		if cfg[k] != want {
			t.Errorf("%s = %q, want %q", k, cfg[k], want)
		}
	}
}

// TestTopicCreateFailureNamesTheSetting: a cluster of one live broker
// cannot place three replicas; the error says which setting asked for
// them, and lookups that need the topic wrap the owner's error.
func TestTopicCreateFailureNamesTheSetting(t *testing.T) {
	b := openBroker(t, server.Config{BrokerID: 1, AwaitRoles: true})
	if err := b.ApplyUpdateMetadata(1, 1, []server.ClusterBroker{{ID: 1, Host: "h1", Port: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	topic := testTopic(b)
	err := topic.Create()
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("coordinated.replication.factor 3")) {
		t.Fatalf("create with 3 replicas on 1 broker: %v", err)
	}
	if _, err := topic.Leader("a"); !errors.Is(err, errNoOwner) {
		t.Fatalf("lookup while the topic cannot be created: %v, want it to wrap the owner's error", err)
	}
}

// TestTopicLeaderAndCoordinator: on a cluster a key's coordinator is the
// leader of its partition in the controller's view; a leaderless
// partition, or a leader that is not live, names none.
func TestTopicLeaderAndCoordinator(t *testing.T) {
	b := openBroker(t, server.Config{BrokerID: 1, AwaitRoles: true})
	topic := testTopic(b)
	tp := func(p int32) server.TopicPartition { return server.TopicPartition{Topic: topic.Name, Partition: p} }
	brokers := []server.ClusterBroker{{ID: 1, Host: "h1", Port: 1}, {ID: 2, Host: "h2", Port: 2}}
	views := map[server.TopicPartition]server.PartitionView{
		tp(0): {Leader: 2, Replicas: []int32{2}}, tp(1): {Leader: -1, Replicas: []int32{1}},
		tp(2): {Leader: 9, Replicas: []int32{9}}, tp(3): {Leader: 1, Replicas: []int32{1}},
	}
	if err := b.ApplyUpdateMetadata(1, 1, brokers, views); err != nil {
		t.Fatal(err)
	}
	if co, err := topic.Coordinator("a"); err != nil || co.ID != 2 || co.Host != "h2" || co.Port != 2 {
		t.Fatalf("coordinator of a (partition 0): %+v, %v", co, err)
	}
	if id, err := topic.Leader("d"); err != nil || id != 1 {
		t.Fatalf("leader of d (partition 3): %d, %v", id, err)
	}
	for key, want := range map[string]string{"b": "__coordinated-1 has no leader", "c": "__coordinated-2 is led by broker 9, which is not live"} {
		_, err := topic.Coordinator(key)
		if !errors.Is(err, errNoOwner) || err.Error() != "no owner: "+want {
			t.Errorf("coordinator of %s: %v, want %q", key, err, want)
		}
	}
	// Leader does not ask for liveness (the transaction coordinator's
	// FindCoordinator names the leader as the controller does).
	if id, err := topic.Leader("c"); err != nil || id != 9 {
		t.Fatalf("leader of c: %d, %v", id, err)
	}
}

// TestFencedLeaderNamesNoCoordinator: a broker that leads a key's
// partition in its last view but fenced itself, cut from ZooKeeper for
// its session timeout with no follower fetching (replication/fence),
// names no coordinator for the key (the owners answer
// COORDINATOR_NOT_AVAILABLE): another broker leads, or will shortly. A
// partition whose ISR is this broker alone, which nobody can take over,
// and keys led by other brokers are answered as before. The same session
// reconnecting ends the fence at once; after an expiry it lasts until the
// controller gives the role again.
func TestFencedLeaderNamesNoCoordinator(t *testing.T) {
	guard := replication.NewSessionGuard(50 * time.Millisecond)
	b := openBroker(t, server.Config{BrokerID: 1, AwaitRoles: true, ZooKeeperSession: guard})
	topic := testTopic(b)
	if err := b.CreateTopic(server.TopicSpec{Name: topic.Name, Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	tp := func(p int32) server.TopicPartition { return server.TopicPartition{Topic: topic.Name, Partition: p} }
	brokers := []server.ClusterBroker{{ID: 1, Host: "h1", Port: 1}, {ID: 2, Host: "h2", Port: 2}, {ID: 3, Host: "h3", Port: 3}}
	if err := b.ApplyUpdateMetadata(1, 1, brokers, map[server.TopicPartition]server.PartitionView{
		tp(0): {Leader: 2, Replicas: []int32{2, 1, 3}, ISR: []int32{2, 1, 3}},
		tp(2): {Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}},
		tp(3): {Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
	}); err != nil {
		t.Fatal(err)
	}
	lead := func(epoch int32) {
		t.Helper()
		roles := []server.PartitionRole{
			{Topic: topic.Name, Partition: 2, Role: replication.Role{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}},
			{Topic: topic.Name, Partition: 3, Role: replication.Role{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}},
		}
		addrs := []server.BrokerAddress{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: 1}, {ID: 3, Host: "127.0.0.1", Port: 1}}
		if errs, err := b.ApplyLeaderAndIsr(1, roles, addrs); err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("LeaderAndIsr at epoch %d: %v %v", epoch, err, errs)
		}
	}
	lead(1)
	named := func(key string, want int32) {
		t.Helper()
		if id, err := topic.Leader(key); err != nil || id != want {
			t.Fatalf("leader of %s: %d, %v; want %d", key, id, err, want)
		}
		if co, err := topic.Coordinator(key); err != nil || co.ID != want {
			t.Fatalf("coordinator of %s: %+v, %v; want %d", key, co, err, want)
		}
	}
	fenced := func(what string) {
		t.Helper()
		harness.WaitFor(t, what+": no coordinator for d", 10*time.Second, func() bool {
			_, err := topic.Leader("d")
			return err != nil
		})
		_, err := topic.Leader("d")
		if !errors.Is(err, errNoOwner) || !strings.Contains(err.Error(), "lost its ZooKeeper session") {
			t.Fatalf("%s: leader of d: %v, want the owner's error saying the session is lost", what, err)
		}
		if _, err := topic.Coordinator("d"); !errors.Is(err, errNoOwner) {
			t.Fatalf("%s: coordinator of d: %v", what, err)
		}
		named("c", 1) // its ISR is this broker alone: nobody else can lead it
		named("a", 2)
	}
	named("d", 1)
	named("c", 1)

	guard.Disconnected(time.Now().Add(-fence.ExpiryRounding - time.Second)) // cut, no word of an expiry yet
	fenced("cut from ZooKeeper past its session timeout")
	guard.Connected() // the same session: the controller still counts this broker
	named("d", 1)

	guard.Disconnected(time.Now())
	guard.Expired()
	guard.Connected() // a new session: the role is not confirmed yet
	fenced("its session expired")
	lead(2) // the controller's LeaderAndIsr after the new registration
	named("d", 1)
}

// TestReadRecordsReadsTheWholeLog: records come back in order, tombstones
// included, across more than one read of the log (each read is bounded
// at 1 MiB).
func TestReadRecordsReadsTheWholeLog(t *testing.T) {
	b := openBroker(t, server.Config{})
	topic := testTopic(b)
	topic.SegmentBytes = 64 << 20
	if err := topic.Create(); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("v"), 300<<10)
	var want []string
	for i := range 8 {
		req := &server.ProduceRequest{Topic: topic.Name, Internal: true}
		for j := range 2 {
			key := fmt.Sprintf("k%d-%d", i, j)
			rec := records.Record{Key: []byte(key), Value: big}
			if j == 1 {
				rec.Value = nil // a tombstone
			}
			req.Records = append(req.Records, server.ProduceRecord{Partition: 0, Record: rec})
			want = append(want, fmt.Sprintf("%s/%v", key, rec.Value == nil))
		}
		if _, err := b.Produce(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	next := int64(0)
	err := topic.ReadRecords(0, func(r records.Record) {
		if r.Offset != next {
			t.Errorf("record at offset %d, want %d", r.Offset, next)
		}
		next = r.Offset + 1
		got = append(got, fmt.Sprintf("%s/%v", r.Key, r.Value == nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v\nwant %v", got, want)
	}
}

// TestJavaHashPartitionIsKafkas: (hashCode & 0x7fffffff) % 50 over UTF-16
// units, computed apart; "polygenelubricants" hashes to Integer.MIN_VALUE.
func TestJavaHashPartitionIsKafkas(t *testing.T) {
	for key, want := range map[string]int32{"": 0, "a": 47, "hello": 22, "my-txn": 3, "\U0001F600": 49,
		"transactional-id-with-a-long-name-0123456789": 35, "polygenelubricants": 0} {
		if got := JavaHashPartition(key, 50); got != want {
			t.Errorf("%q: %d, want %d", key, got, want)
		}
	}
}

// ReadLogFrom reads on from where a previous read stopped: only the
// batches appended since, and where it stopped again.
func TestReadLogFromReadsWhatWasAppendedSince(t *testing.T) {
	b := openBroker(t, server.Config{})
	topic := testTopic(b)
	if err := topic.Create(); err != nil {
		t.Fatal(err)
	}
	produce := func(keys ...string) {
		t.Helper()
		req := &server.ProduceRequest{Topic: topic.Name, Internal: true}
		for _, k := range keys {
			req.Records = append(req.Records, server.ProduceRecord{Partition: 0, Record: records.Record{Key: []byte(k), Value: []byte(k)}})
		}
		if _, err := b.Produce(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	read := func(from int64) (keys []string, next int64) {
		t.Helper()
		next, err := topic.ReadLogFrom(0, from, func(batch []byte, _ recordbatch.Header, from int64) error {
			return records.Decode(batch, from, 1<<20, func(r records.Record) bool {
				keys = append(keys, string(r.Key))
				return true
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys, next
	}

	produce("a", "b")
	produce("c")
	keys, next := read(-1)
	if fmt.Sprint(keys) != "[a b c]" || next != 3 {
		t.Fatalf("from the start: %v, next %d; want [a b c] and 3", keys, next)
	}
	if keys, again := read(next); len(keys) != 0 || again != next {
		t.Fatalf("nothing appended: read %v, next %d; want nothing and %d", keys, again, next)
	}
	produce("d", "e")
	if keys, next = read(next); fmt.Sprint(keys) != "[d e]" || next != 5 {
		t.Fatalf("after two more: %v, next %d; want [d e] and 5", keys, next)
	}
}
