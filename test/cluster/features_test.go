package cluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// advertisedTV is what a broker's ApiVersions says of transaction.version:
// the finalized level and epoch, and the highest EndTxn version (5 at
// every level).
func advertisedTV(t testing.TB, addr string) (level int16, epoch int64, endTxnMax int16, err error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			level = f.MaxVersionLevel
		}
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.EndTxn) {
			endTxnMax = k.MaxVersion
		}
	}
	return level, resp.FinalizedFeaturesEpoch, endTxnMax, nil
}

// waitAllAdvertise waits until every node advertises transaction.version
// at level, all at one epoch, and returns that epoch.
func waitAllAdvertise(t testing.TB, nodes []*harness.Node, level int16) int64 {
	t.Helper()
	var epoch int64
	harness.WaitFor(t, fmt.Sprintf("every broker to advertise transaction.version %d", level), 30*time.Second, func() bool {
		epochs := map[int64]bool{}
		for _, n := range nodes {
			l, e, endMax, err := advertisedTV(t, n.KafkaAddr)
			if err != nil || l != level || endMax != 5 {
				return false
			}
			epochs[e], epoch = true, e
		}
		return len(epochs) == 1
	})
	return epoch
}

// setTV sends UpdateFeatures for transaction.version to the cluster and
// returns the feature's error code and message.
func setTV(t testing.TB, nodes []*harness.Node, level int16, upgradeType int8) (int16, string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", level, upgradeType
	req.FeatureUpdates, req.TimeoutMillis = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 {
		t.Fatalf("UpdateFeatures: %d results, top-level %d", len(resp.Results), resp.ErrorCode)
	}
	msg := ""
	if resp.Results[0].ErrorMessage != nil {
		msg = *resp.Results[0].ErrorMessage
	}
	return resp.Results[0].ErrorCode, msg
}

// zkConnect is a node's --zookeeper.
func zkConnect(t testing.TB, n *harness.Node) string {
	i := slices.Index(n.Args, "--zookeeper")
	if i < 0 || i+1 >= len(n.Args) {
		t.Fatal("the node has no --zookeeper")
	}
	return n.Args[i+1]
}

// transaction.version is finalized once for the cluster (KIP-584): a new
// cluster finalizes 2 in /feature and every broker advertises it at one
// epoch; a downgrade through any broker reaches all of them; a broker
// supporting only 1 joins a cluster at 1, and while it is registered an
// upgrade to 2 is refused naming it; once it is gone the upgrade goes
// through, and the same broker then refuses to start rather than serve
// a level it does not support.
func TestTransactionVersionFinalizedClusterWide(t *testing.T) {
	nodes := startTxnBrokers(t)
	epoch := waitAllAdvertise(t, nodes, 2)
	f, err := zkOf(t, nodes[0]).Features()
	if err != nil || f.Levels["transaction.version"] != 2 || f.Epoch != epoch {
		t.Fatalf("/feature: %+v %v, want level 2 at epoch %d", f, err, epoch)
	}

	if code, msg := setTV(t, nodes[1:2], 1, 1); code != kerr.InvalidUpdateVersion.Code || !strings.Contains(msg, "downgrade") {
		t.Fatalf("a downgrade typed as an upgrade: %d %q", code, msg)
	}
	if code, msg := setTV(t, nodes[1:2], 1, 2); code != 0 {
		t.Fatalf("safe downgrade: %d %q", code, msg)
	}
	if e := waitAllAdvertise(t, nodes, 1); e != epoch+1 {
		t.Fatalf("epoch after the downgrade %d, want %d", e, epoch+1)
	}

	older := harness.Start(t, "--broker-id", "4", "--zookeeper", zkConnect(t, nodes[0]), "--zookeeper-session-timeout-ms", "6000",
		"--transaction-state-log-num-partitions", "3", "--transaction-version", "1")
	waitAllAdvertise(t, append(slices.Clone(nodes), older), 1)
	code, msg := setTV(t, nodes, 2, 1)
	if code != kerr.InvalidUpdateVersion.Code || !strings.Contains(msg, "Broker 4 does not support the given version") {
		t.Fatalf("upgrade with broker 4 at 1: %d %q", code, msg)
	}
	older.Stop()
	harness.WaitFor(t, "the upgrade once broker 4 is gone", 30*time.Second, func() bool {
		code, _ := setTV(t, nodes, 2, 1)
		return code == 0
	})
	waitAllAdvertise(t, nodes, 2)

	out, err := runBrokerUntilExit(t, "--broker-id", "5", "--zookeeper", zkConnect(t, nodes[0]), "--transaction-version", "1")
	if err == nil || !strings.Contains(out, "transaction.version is finalized at level 2") {
		t.Fatalf("a broker supporting 1 on a cluster at 2 started, or said something else (%v):\n%s", err, out)
	}
}

// A broker that reads from /feature a transaction.version it cannot serve
// stops serving, as Kafka's broker exits (FinalizedFeatureChangeListener):
// it logs why, shuts down and exits non-zero. Only a hand edit of
// /feature can do this (UpdateFeatures refuses a level a registered
// broker does not support). The brokers that serve the level adopt it
// and go on.
func TestBrokerExitsOnAnUnservableFinalizedLevel(t *testing.T) {
	nodes := startTxnBrokers(t)
	waitAllAdvertise(t, nodes, 2)
	if code, msg := setTV(t, nodes, 1, 2); code != 0 {
		t.Fatalf("safe downgrade: %d %q", code, msg)
	}
	waitAllAdvertise(t, nodes, 1)
	older := harness.Start(t, "--broker-id", "4", "--zookeeper", zkConnect(t, nodes[0]), "--zookeeper-session-timeout-ms", "6000",
		"--transaction-state-log-num-partitions", "3", "--transaction-version", "1")
	epoch := waitAllAdvertise(t, append(slices.Clone(nodes), older), 1)

	if _, err := zkOf(t, nodes[0]).SetFeatures(map[string]int16{"transaction.version": 2}, epoch); err != nil {
		t.Fatalf("writing transaction.version 2 to /feature by hand: %v", err)
	}
	code, exited := older.Exited(60 * time.Second)
	if !exited {
		t.Fatalf("broker 4, supporting transaction.version 0-1, still runs a minute after /feature said 2:\n%s", older.Logs())
	}
	logs := older.Logs()
	if code == 0 || !strings.Contains(logs, "cannot serve; shutting down") ||
		!strings.Contains(logs, "transaction.version is finalized at level 2, this broker supports 0-1") {
		t.Fatalf("broker 4 exited with %d, want non-zero and the reason logged:\n%s", code, logs)
	}
	waitAllAdvertise(t, nodes, 2)
	cl, _ := replicatedProducer(t, nodes, "after-exit")
	produceNumbered(t, cl, 0, 5)
}

// runBrokerUntilExit runs `ferry serve` with args on free ports and a
// fresh data dir, and returns its output once it exits (killed after a
// minute).
func runBrokerUntilExit(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string{"serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:" + strconv.Itoa(harness.FreePort(t)),
		"--kafka-addr", "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))}, args...)
	out, err := exec.CommandContext(ctx, harness.Binary(t), args...).CombinedOutput()
	return string(out), err
}
