package kafkascripts_test

import (
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestKafkaFeaturesScript: kafka-features.sh with Kafka 3.9's commands
// describes a new node's transaction.version (finalized at 2, epoch 0),
// refuses a downgrade asked as an upgrade with Kafka's message (exit 1),
// dry-runs, downgrades and upgrades it, each change a new epoch, and
// `ferry features describe` reads the same.
func TestKafkaFeaturesScript(t *testing.T) {
	node := harness.Start(t)
	node.WaitKafka()
	b := node.KafkaAddr
	describe := func() string { return ok(t, "", "kafka-features.sh", "--bootstrap-server", b, "describe") }
	want := "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: 0\n"
	if out := describe(); out != want {
		t.Fatalf("describe:\n%q\nwant\n%q", out, want)
	}
	res := run(t, "", "kafka-features.sh", "--bootstrap-server", b, "upgrade", "--feature", "transaction.version=1")
	if res.code != 1 || !strings.Contains(res.stdout, "Could not upgrade transaction.version to 1. Invalid update version 1 for feature transaction.version. Can't downgrade") {
		t.Fatalf("upgrade to 1: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if out := ok(t, "", "kafka-features.sh", "--bootstrap-server", b, "downgrade", "--feature", "transaction.version=1", "--dry-run"); out != "transaction.version can be downgraded to 1.\n" {
		t.Fatalf("dry run: %q", out)
	}
	if out := ok(t, "", "kafka-features.sh", "--bootstrap-server", b, "downgrade", "--feature", "transaction.version=1", "--unsafe"); out != "transaction.version was downgraded to 1.\n" {
		t.Fatalf("downgrade: %q", out)
	}
	if out := describe(); !strings.Contains(out, "FinalizedVersionLevel: 1\tEpoch: 1") {
		t.Fatalf("after the downgrade: %q", out)
	}
	if out := ok(t, "", "kafka-features.sh", "--bootstrap-server", b, "upgrade", "--feature", "transaction.version=2"); out != "transaction.version was upgraded to 2.\n" {
		t.Fatalf("upgrade: %q", out)
	}
	if out := ok(t, "", "ferry", "features", "describe", "--bootstrap", b); !strings.Contains(out, "FinalizedVersionLevel: 2\tEpoch: 2") {
		t.Fatalf("ferry features describe: %q", out)
	}
}
