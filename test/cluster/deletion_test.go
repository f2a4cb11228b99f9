package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/test/harness"
)

// zkOf opens the cluster's ZooKeeper (under its chroot) as an operator's
// zkCli.sh would see it.
func zkOf(t *testing.T, n *harness.Node) *zookeeper.Client {
	t.Helper()
	i := slices.Index(n.Args, "--zookeeper")
	if i < 0 || i+1 >= len(n.Args) {
		t.Fatal("the node has no --zookeeper")
	}
	c, err := zookeeper.Open(n.Args[i+1], 10*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		for range c.Events() {
		}
	}()
	return c
}

// partitionDirs lists a broker's directories of topic (deleted ones
// awaiting removal included).
func partitionDirs(t *testing.T, n *harness.Node, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(n.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A topic deleted over HTTP on a cluster leaves every broker's metadata
// when the request returns; each live replica's files go; a broker that
// was dead deletes its replica when it returns, and only then do the
// topic's znodes go; the name can then be created again, empty.
func TestTopicDeletionRemovesEveryReplica(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("doomed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "every replica is in sync", 30*time.Second, func() bool {
		md, err := metadataFrom(t, nodes, "doomed")
		if err != nil || len(md.Topics["doomed"].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics["doomed"].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	produceValues(ctx, t, cl, 0, 30)

	dead := nodes[2]
	dead.Kill()
	req, _ := http.NewRequest(http.MethodDelete, nodes[0].URL+"/topics/doomed", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("DELETE /topics/doomed: %d %s", res.StatusCode, body)
	}
	// The broker that served the DELETE waited for its own metadata (as
	// Kafka's DeleteTopics waits for its controller); the other hears the
	// controller's UpdateMetadata in its own time — later when the broker
	// killed above was the controller and a new one takes over first.
	if md, err := metadataFrom(t, nodes[:1], "doomed"); err == nil && md.Topics["doomed"].Err == nil {
		t.Fatalf("broker at %s, which served the DELETE, still describes the deleted topic", nodes[0].KafkaAddr)
	}
	for _, n := range nodes[:2] {
		harness.WaitFor(t, "the live broker no longer describes the topic", 30*time.Second, func() bool {
			md, err := metadataFrom(t, []*harness.Node{n}, "doomed")
			return err != nil || md.Topics["doomed"].Err != nil
		})
		harness.WaitFor(t, "the live broker's replicas are deleted", 30*time.Second, func() bool {
			return len(partitionDirs(t, n, "doomed")) == 0
		})
	}
	if len(partitionDirs(t, dead, "doomed")) != 3 {
		t.Fatalf("the dead broker's replicas: %v", partitionDirs(t, dead, "doomed"))
	}
	zk := zkOf(t, nodes[0])
	if topics, err := zk.Topics(); err != nil || !slices.Contains(topics, "doomed") {
		t.Fatalf("the topic znode went while a replica was not deleted: %v %v", topics, err)
	}

	dead.Restart()
	harness.WaitFor(t, "the returning broker deletes its replicas", 60*time.Second, func() bool {
		return len(partitionDirs(t, dead, "doomed")) == 0
	})
	harness.WaitFor(t, "the topic's znodes are gone", 30*time.Second, func() bool {
		topics, err := zk.Topics()
		marked, err2 := zk.TopicsMarkedForDeletion()
		return err == nil && err2 == nil && !slices.Contains(topics, "doomed") && len(marked) == 0
	})

	// The name is free again: a new, empty topic.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := kadm.NewClient(fresh).CreateTopic(ctx, 1, 3, nil, "doomed"); err != nil {
		t.Fatalf("create the name again: %v", err)
	}
	harness.WaitFor(t, "the new topic has a leader", 30*time.Second, func() bool {
		leader, _ := partitionState(t, nodes, "doomed")
		return leader > 0
	})
	// Its leader may answer before the client's metadata knows it: ask
	// until the partition is answered, then it must be empty.
	var end kadm.ListedOffset
	harness.WaitFor(t, "the new topic's end offset is answered", 30*time.Second, func() bool {
		ends, err := kadm.NewClient(fresh).ListEndOffsets(ctx, "doomed")
		if err != nil {
			return false
		}
		o, ok := ends.Lookup("doomed", 0)
		end = o
		return ok && o.Err == nil && o.Topic == "doomed"
	})
	if end.Offset != 0 {
		t.Fatalf("the new topic's end offset: %+v", end)
	}
}
