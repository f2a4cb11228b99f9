package main

import (
	"errors"
	"log/slog"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server/features"
)

// openFeatures reads the cluster's finalized features (finalizing the
// defaults on a new cluster or data dir): ZooKeeper's /feature on a
// cluster, after this broker registered its supported ranges, followed
// by a watch; ferry-features.json in the data dir on a single node. A
// broker that cannot serve the finalized levels does not start; one that
// reads such levels later (only a hand edit of /feature can write them)
// gets the error on unservable, and serve shuts it down with a non-zero
// exit, as Kafka's broker exits. A single node reads its file only here.
func openFeatures(s serveSettings, node *clusterNode, logger *slog.Logger) (m *features.Manager, stop func(), unservable <-chan error, err error) {
	cfg := features.Config{Supported: features.Supported(s.maxTransactionVersion), Logger: logger.With("component", "features")}
	if node == nil {
		cfg.Store = features.NewLocalStore(s.broker.DataDir)
		cfg.Brokers = func() ([]features.BrokerSupport, error) {
			return []features.BrokerSupport{{ID: s.broker.BrokerID, Features: cfg.Supported}}, nil
		}
		m, err := features.Open(cfg)
		return m, func() {}, nil, err
	}
	cfg.Store = zkFeatureStore{node.zk}
	cfg.Brokers = func() ([]features.BrokerSupport, error) { return brokersFeatures(node.zk) }
	m, err = features.Open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	w := node.zk.WatchFeatures()
	failed := make(chan error, 1)
	go func() {
		for f := range w.C {
			if f.Epoch < 0 {
				continue
			}
			if err := m.Observe(features.Finalized{Levels: f.Levels, Epoch: f.Epoch}); err != nil {
				select {
				case failed <- err:
				default: // the first is being acted on
				}
			}
		}
	}()
	return m, w.Stop, failed, nil
}

// supportedFeatures is what a broker registers in /brokers/ids/<id>.
func supportedFeatures(s serveSettings) map[string]zookeeper.FeatureRange {
	out := map[string]zookeeper.FeatureRange{}
	for name, r := range features.Supported(s.maxTransactionVersion) {
		out[name] = zookeeper.FeatureRange{Min: r.Min, Max: r.Max}
	}
	return out
}

func brokersFeatures(zk *zookeeper.Client) ([]features.BrokerSupport, error) {
	brokers, err := zk.Brokers()
	if err != nil {
		return nil, err
	}
	out := make([]features.BrokerSupport, 0, len(brokers))
	for _, b := range brokers {
		fs := map[string]features.Range{}
		for name, r := range b.Features {
			fs[name] = features.Range{Min: r.Min, Max: r.Max}
		}
		out = append(out, features.BrokerSupport{ID: b.ID, Features: fs})
	}
	return out, nil
}

// zkFeatureStore is features.Store over /feature.
type zkFeatureStore struct{ zk *zookeeper.Client }

func (z zkFeatureStore) Read() (features.Finalized, error) {
	f, err := z.zk.Features()
	return features.Finalized{Levels: f.Levels, Epoch: f.Epoch}, err
}

func (z zkFeatureStore) Write(levels map[string]int16, epoch int64) (features.Finalized, error) {
	f, err := z.zk.SetFeatures(levels, epoch)
	if errors.Is(err, zookeeper.ErrFeaturesChanged) {
		return features.Finalized{}, features.ErrChanged
	}
	return features.Finalized{Levels: f.Levels, Epoch: f.Epoch}, err
}
