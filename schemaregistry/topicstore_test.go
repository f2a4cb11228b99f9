package schemaregistry_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/schemaregistry/internal/storetest"
	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// TestTopicStoreConformance runs the store suite over topics of a real
// one-broker cluster (ferry serve with ZooKeeper): each store is a fresh
// topic, reopening consumes it again from its start. The cluster behaviour
// (several nodes, failover) is test/cluster's registry_test.go.
func TestTopicStoreConformance(t *testing.T) {
	zk := zkserver.Start(t)
	node := harness.Start(t, "--broker-id", "1", "--zookeeper", zk.Addr()+"/conformance",
		"--zookeeper-session-timeout-ms", "6000",
		"--transaction-state-log-replication-factor", "1", "--transaction-state-log-min-isr", "1")
	var topics atomic.Int64
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) sr.Store {
			return openTopicStore(t, node.KafkaAddr, fmt.Sprintf("_schemas-%d", topics.Add(1)))
		},
		Reopen: func(t *testing.T, s sr.Store) sr.Store {
			topic := s.(*sr.TopicStore).Topic()
			s.Close()
			return openTopicStore(t, node.KafkaAddr, topic)
		},
	})
}

// openTopicStore opens a store on topic and, as Registry would before its
// first read, catches up with what the topic holds.
func openTopicStore(t *testing.T, kafkaAddr, topic string) sr.Store {
	s, err := sr.OpenTopicStore(sr.TopicStoreConfig{Brokers: []string{kafkaAddr}, Topic: topic,
		ReplicationFactor: 1, Timeout: 20 * time.Second, Logger: storetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CatchUp(context.Background()); err != nil {
		t.Fatalf("catch up with %s: %v", topic, err)
	}
	return s
}
