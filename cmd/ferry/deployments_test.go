package main

import (
	"path/filepath"
	"testing"
)

// The example broker configs of the cluster deployment load as `ferry
// serve --config` reads them, with no key ferry ignores.
func TestClusterDeploymentConfigsLoad(t *testing.T) {
	files, err := filepath.Glob("../../deployments/cluster/broker-*.properties")
	if err != nil || len(files) != 3 {
		t.Fatalf("broker configs %v: %v", files, err)
	}
	ids := map[int32]bool{}
	for _, f := range files {
		s, warnings, err := loadServeSettings([]string{"--config", f})
		if err != nil || len(warnings) > 0 {
			t.Fatalf("%s: %v %v", f, err, warnings)
		}
		if s.zookeeper != "zookeeper:2181/ferry" || s.brokerRack == "" || s.broker.DefaultReplicationFactor != 3 || s.broker.MinInsyncReplicas != 2 {
			t.Fatalf("%s: zookeeper %q rack %q rf %d min isr %d", f, s.zookeeper, s.brokerRack, s.broker.DefaultReplicationFactor, s.broker.MinInsyncReplicas)
		}
		ids[s.broker.BrokerID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("broker ids %v, want three distinct", ids)
	}
}
