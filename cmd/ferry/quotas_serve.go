package main

import (
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/quota"
)

// openQuotas gives the Kafka listener the client quotas: ZooKeeper's on a
// cluster (read at join, kept current by followConfigChanges), the data
// dir's file on a single node.
func openQuotas(kcfg *kafka.Config, s serveSettings, node *clusterNode) error {
	if node != nil {
		kcfg.Quotas, kcfg.QuotaStore = node.quotas, quota.NewZKStore(node.zk)
		return nil
	}
	st, err := quota.OpenFileStore(s.broker.DataDir)
	if err != nil {
		return err
	}
	m := quota.NewManager()
	if err := m.Load(st); err != nil {
		return err
	}
	kcfg.Quotas, kcfg.QuotaStore = m, st
	return nil
}
