package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/zookeeper"
)

// clusterNode is this broker's membership of a cluster coordinated by
// ZooKeeper (--zookeeper): its session, the cluster's metadata, its
// registration under /brokers/ids.
type clusterNode struct {
	zk     *zookeeper.Client
	meta   *zookeeper.Metadata
	logger *slog.Logger
}

// joinCluster connects to ZooKeeper, takes (or creates) the cluster id,
// checks the data dir belongs to this cluster and broker, and points the
// broker's config at the cluster's metadata.
func joinCluster(s *serveSettings, logger *slog.Logger) (*clusterNode, error) {
	zk, err := zookeeper.Open(s.zookeeper, s.zkSessionTimeout, logger)
	if err != nil {
		return nil, fmt.Errorf("--zookeeper %s: %w", s.zookeeper, err)
	}
	n := &clusterNode{zk: zk, logger: logger.With("component", "cluster")}
	go n.watchSession()
	clusterID, err := zk.GetOrCreateClusterID(replication.NewTopicID())
	if err != nil {
		zk.Close()
		return nil, fmt.Errorf("cluster id: %w", err)
	}
	n.meta = zookeeper.NewMetadata(zk, clusterID)
	s.broker.Metadata, s.broker.ISRStore, s.broker.AwaitRoles = n.meta, n.meta, true
	n.logger.Info("joined cluster", "cluster_id", clusterID, "zookeeper", s.zookeeper)
	return n, nil
}

// watchSession logs the session's changes; the zookeeper client registers
// the broker again after an expiry by itself.
func (n *clusterNode) watchSession() {
	for ev := range n.zk.Events() {
		n.logger.Info("zookeeper session", "state", ev.State.String(), "session", ev.SessionID, "err", ev.Err)
	}
}

// register creates /brokers/ids/<id> with the advertised Kafka listener.
func (n *clusterNode) register(s serveSettings) error {
	host, portText, err := net.SplitHostPort(s.advertisedKafkaAddr)
	if err != nil {
		return fmt.Errorf("advertised kafka address %q: %w", s.advertisedKafkaAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("advertised kafka address %q: %w", s.advertisedKafkaAddr, err)
	}
	info := zookeeper.BrokerInfo{ID: s.broker.BrokerID, Rack: s.brokerRack, JMXPort: -1, Timestamp: time.Now().UnixMilli(),
		Endpoints: []zookeeper.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: port, SecurityProtocol: "PLAINTEXT"}}}
	if err := n.zk.Register(info); err != nil {
		return fmt.Errorf("register broker %d: %w", s.broker.BrokerID, err)
	}
	n.logger.Info("registered", "endpoint", s.advertisedKafkaAddr, "rack", s.brokerRack)
	return nil
}

func (n *clusterNode) close() {
	if err := n.zk.Close(); err != nil {
		n.logger.Warn("zookeeper close", "err", err)
	}
}
