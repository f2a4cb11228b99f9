package cluster_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// Every broker writes each replica's high watermark to
// <data-dir>/replication-offset-checkpoint on the interval
// replica.high.watermark.checkpoint.interval.ms sets, so a follower killed
// with kill -9 (no shutdown write) finds the committed high watermark
// there, and goes on checkpointing once it is restarted and caught up.
func TestKilledFollowerKeepsItsHighWatermarkCheckpoint(t *testing.T) {
	nodes := startCluster(t, 3, "--replica-high-watermark-checkpoint-interval-ms", "200")
	cl, adm := replicatedProducer(t, nodes, "ckpt")
	acked := produceNumbered(t, cl, 0, 20)
	leader := leaderOf(t, adm, "ckpt")
	var follower *harness.Node
	for i, n := range nodes {
		if int32(i+1) != leader {
			follower = n
			break
		}
	}
	checkpointed := func() int64 {
		data, _ := os.ReadFile(filepath.Join(follower.DataDir, "replication-offset-checkpoint"))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "ckpt" && f[1] == "0" {
				hw, _ := strconv.ParseInt(f[2], 10, 64)
				return hw
			}
		}
		return -1
	}
	harness.WaitFor(t, "the follower checkpoints high watermark 20", 30*time.Second, func() bool { return checkpointed() == 20 })

	follower.Kill()
	if hw := checkpointed(); hw != 20 {
		t.Fatalf("after kill -9 the follower's checkpoint holds %d, want 20", hw)
	}
	// Acknowledged once the controller, its session expired, has removed
	// it from the ISR; that also frees its registration for the restart.
	acked = produceNumbered(t, cl, acked, 10)
	if hw := checkpointed(); hw != 20 {
		t.Fatalf("the dead follower's checkpoint changed to %d", hw)
	}
	follower.Restart()
	harness.WaitFor(t, "the restarted follower checkpoints high watermark 30", 60*time.Second, func() bool {
		return checkpointed() == int64(acked)
	})
}
