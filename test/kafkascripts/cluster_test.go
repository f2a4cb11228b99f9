package kafkascripts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestSeedGuideSequences runs the command sequences of the 0.8-era guides
// this project started from, unchanged but for hosts and the broker
// count: topics created, listed and described through --zookeeper, lines
// produced with --broker-list --sync, read back with --zookeeper
// --from-beginning, partitions moved with --topics-to-move-json-file
// --generate, then --execute and --verify, and a preferred election. The
// remaining subtests cover each Kafka 3.9 script on the same cluster.
func TestSeedGuideSequences(t *testing.T) {
	nodes, zk := startCluster(t)
	broker := nodes[0].KafkaAddr
	dir := t.TempDir()

	// kafka-topics.sh --create --topic idoall_testTopic --replication-factor 4 --partitions 2 --zookeeper m1:2181
	out := ok(t, "", "kafka-topics.sh", "--create", "--topic", "idoall_testTopic", "--replication-factor", "3", "--partitions", "2", "--zookeeper", zk)
	if out != "Created topic idoall_testTopic.\n" {
		t.Fatalf("create printed %q", out)
	}
	res := run(t, "", "kafka-topics.sh", "--create", "--topic", "idoall_testTopic", "--replication-factor", "3", "--partitions", "2", "--zookeeper", zk)
	if res.code != 1 || !strings.HasPrefix(res.stdout, "Error while executing topic command : ") || !strings.Contains(res.stdout, "exists") {
		t.Fatalf("second create: exit %d, stdout %q", res.code, res.stdout)
	}
	res = run(t, "", "kafka-topics.sh", "--create", "--topic", "too_many", "--replication-factor", "4", "--partitions", "1", "--zookeeper", zk)
	if res.code != 1 || !strings.Contains(res.stdout, "Error while executing topic command : ") {
		t.Fatalf("create with replication factor 4 of 3 brokers: exit %d, stdout %q", res.code, res.stdout)
	}
	// kafka-topics.sh --list --zookeeper m1:2181
	if out := ok(t, "", "kafka-topics.sh", "--list", "--zookeeper", zk); !strings.Contains("\n"+out, "\nidoall_testTopic\n") || strings.Contains(out, "too_many") {
		t.Fatalf("list:\n%s", out)
	}
	// kafka-console-producer.sh --broker-list m1:9092 --sync --topic idoall_testTopic
	ok(t, "hello idoall.org\n", "kafka-console-producer.sh", "--broker-list", broker, "--sync", "--topic", "idoall_testTopic")
	// kafka-console-consumer.sh --zookeeper m1:2181 --topic idoall_testTopic --from-beginning
	res = run(t, "", "kafka-console-consumer.sh", "--zookeeper", zk, "--topic", "idoall_testTopic", "--from-beginning", "--max-messages", "1")
	if res.code != 0 || res.stdout != "hello idoall.org\n" || !strings.Contains(res.stderr, "Processed a total of 1 messages") {
		t.Fatalf("consume: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	// kafka-topics.sh --describe: the lines scripts parse.
	summary := regexp.MustCompile(`(?m)^Topic: idoall_testTopic\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: .*$`)
	partition := regexp.MustCompile(`(?m)^\tTopic: idoall_testTopic\tPartition: ([01])\tLeader: [123]\tReplicas: [123],[123],[123]\tIsr: [123],[123],[123]\tElr: N/A\tLastKnownElr: N/A$`)
	out = ok(t, "", "kafka-topics.sh", "--describe", "--zookeeper", zk, "--topic", "idoall_testTopic")
	if !summary.MatchString(out) || len(strings.Split(strings.TrimSpace(out), "\n")) != 3 {
		t.Fatalf("describe:\n%s", out)
	}
	// Every replica is in sync once the followers have fetched.
	harness.WaitFor(t, "both partitions described with three in-sync replicas", 30*time.Second, func() bool {
		out = ok(t, "", "kafka-topics.sh", "--describe", "--zookeeper", zk, "--topic", "idoall_testTopic")
		return len(partition.FindAllString(out, -1)) == 2
	})
	// Create idoall, delete it, list again.
	ok(t, "", "kafka-topics.sh", "--create", "--topic", "idoall", "--replication-factor", "3", "--partitions", "2", "--zookeeper", zk)
	// kafka-run-class.sh kafka.admin.DeleteTopicCommand --topic idoall --zookeeper m2:2181
	if out := ok(t, "", "kafka-run-class.sh", "kafka.admin.DeleteTopicCommand", "--topic", "idoall", "--zookeeper", zk); out != "deletion succeeded!\n" {
		t.Fatalf("DeleteTopicCommand printed %q", out)
	}
	harness.WaitFor(t, "idoall is gone from --list", 30*time.Second, func() bool {
		return !strings.Contains("\n"+ok(t, "", "kafka-topics.sh", "--list", "--zookeeper", zk), "\nidoall\n")
	})

	t.Run("reassign", func(t *testing.T) { seedReassign(t, zk, broker, dir) })
	t.Run("preferred-election", func(t *testing.T) {
		out := ok(t, "", "kafka-preferred-replica-election.sh", "--zookeeper", zk)
		if !strings.Contains(out, "idoall_testTopic-0") {
			t.Fatalf("election printed:\n%s", out)
		}
	})
	t.Run("consumer-groups", func(t *testing.T) { scriptGroups(t, broker) })
	t.Run("offsets-and-records", func(t *testing.T) { scriptOffsets(t, nodes, dir) })
	t.Run("configs", func(t *testing.T) { scriptConfigs(t, broker, zk) })
	t.Run("acls", func(t *testing.T) { scriptACLs(t, broker) })
	t.Run("perf", func(t *testing.T) { scriptPerf(t, broker) })
	t.Run("headers-and-nulls", func(t *testing.T) {
		ok(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--create", "--topic", "headed", "--partitions", "1", "--replication-factor", "3")
		ok(t, "trace:abc,app:web|k1|v1\napp:cli|k2|NULL\n", "kafka-console-producer.sh", "--bootstrap-server", broker, "--topic", "headed",
			"--property", "parse.headers=true", "--property", "headers.delimiter=|", "--property", "parse.key=true",
			"--property", "key.separator=|", "--property", "null.marker=NULL")
		out := ok(t, "", "kafka-console-consumer.sh", "--bootstrap-server", broker, "--topic", "headed", "--from-beginning", "--max-messages", "2",
			"--property", "print.headers=true", "--property", "print.key=true", "--property", "print.offset=true", "--property", "null.literal=<none>")
		if want := "Offset:0\ttrace:abc,app:web\tk1\tv1\nOffset:1\tapp:cli\tk2\t<none>\n"; out != want {
			t.Fatalf("consumed %q, want %q", out, want)
		}
		res := run(t, "no-separator\n", "kafka-console-producer.sh", "--bootstrap-server", broker, "--topic", "headed", "--property", "parse.key=true")
		if res.code != 1 || !strings.Contains(res.stderr, "no key separator") {
			t.Fatalf("a line without its key: exit %d, stderr %q", res.code, res.stderr)
		}
	})
	t.Run("command-config", func(t *testing.T) {
		props := filepath.Join(dir, "client.properties")
		if err := os.WriteFile(props, []byte("security.protocol=PLAINTEXT\nclient.id=ops\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out := ok(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--command-config", props, "--list"); !strings.Contains(out, "idoall_testTopic") {
			t.Fatalf("list with --command-config:\n%s", out)
		}
		if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		res := run(t, "", "kafka-topics.sh", "--bootstrap-server", broker, "--command-config", props, "--list")
		if res.code != 1 || !strings.Contains(res.stderr, "GSSAPI") {
			t.Fatalf("GSSAPI: exit %d, stderr %q", res.code, res.stderr)
		}
	})
}

// seedReassign moves a two-partition topic with data from broker 1 to
// brokers 2 and 3 as 0.8's guide does, then reads the data back.
func seedReassign(t *testing.T, zk, broker, dir string) {
	ok(t, "", "kafka-topics.sh", "--create", "--topic", "moving", "--replica-assignment", "1,1", "--zookeeper", zk)
	ok(t, "a\nb\nc\nd\n", "kafka-console-producer.sh", "--broker-list", broker, "--topic", "moving")
	topicsFile := filepath.Join(dir, "topics-to-move.json")
	if err := os.WriteFile(topicsFile, []byte(`{"topics": [{"topic": "moving"}], "version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "", "kafka-reassign-partitions.sh", "--zookeeper", zk, "--topics-to-move-json-file", topicsFile, "--broker-list", "2,3", "--generate")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "Current partition replica assignment" || lines[3] != "Proposed partition reassignment configuration" {
		t.Fatalf("--generate printed:\n%s", out)
	}
	var current, proposed struct {
		Version    int `json:"version"`
		Partitions []struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Replicas  []int32 `json:"replicas"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &current); err != nil || len(current.Partitions) != 2 || current.Partitions[0].Replicas[0] != 1 {
		t.Fatalf("current assignment %s: %v", lines[1], err)
	}
	if err := json.Unmarshal([]byte(lines[4]), &proposed); err != nil || proposed.Version != 1 || len(proposed.Partitions) != 2 {
		t.Fatalf("proposed assignment %s: %v", lines[4], err)
	}
	for _, p := range proposed.Partitions {
		if len(p.Replicas) != 1 || p.Replicas[0] == 1 {
			t.Fatalf("proposal keeps a replica on broker 1 or changes the factor: %s", lines[4])
		}
	}
	plan := filepath.Join(dir, "expand-cluster-reassignment.json")
	if err := os.WriteFile(plan, []byte(lines[4]), 0o600); err != nil {
		t.Fatal(err)
	}
	out = ok(t, "", "kafka-reassign-partitions.sh", "--zookeeper", zk, "--reassignment-json-file", plan, "--execute")
	if !strings.Contains(out, "Save this to use as the --reassignment-json-file option during rollback") ||
		!strings.Contains(out, "Successfully started partition reassignments for moving-0,moving-1") {
		t.Fatalf("--execute printed:\n%s", out)
	}
	harness.WaitFor(t, "--verify reports both partitions completed", 60*time.Second, func() bool {
		out := ok(t, "", "kafka-reassign-partitions.sh", "--zookeeper", zk, "--reassignment-json-file", plan, "--verify")
		return strings.HasPrefix(out, "Status of partition reassignment:\n") &&
			strings.Contains(out, "Reassignment of partition moving-0 is completed.") &&
			strings.Contains(out, "Reassignment of partition moving-1 is completed.")
	})
	// The broker answering learns the new leaders from the controller's
	// UpdateMetadata, a moment after the move completes.
	harness.WaitFor(t, "describe shows the partitions on their new brokers", 30*time.Second, func() bool {
		out = ok(t, "", "kafka-topics.sh", "--describe", "--bootstrap-server", broker, "--topic", "moving")
		for _, p := range proposed.Partitions {
			want := fmt.Sprintf("\tTopic: moving\tPartition: %d\tLeader: %d\tReplicas: %d\tIsr: %d\t", p.Partition, p.Replicas[0], p.Replicas[0], p.Replicas[0])
			if !strings.Contains(out, want) {
				return false
			}
		}
		return true
	})
	res := run(t, "", "kafka-console-consumer.sh", "--bootstrap-server", broker, "--topic", "moving", "--from-beginning", "--max-messages", "4", "--timeout-ms", "20000",
		"--isolation-level", "read_committed", "--consumer-property", "client.id=ops")
	if got := sortedLines(res.stdout); res.code != 0 || strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("records after the move: exit %d, %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	// The partition filters print partition lines only.
	if out := ok(t, "", "kafka-topics.sh", "--describe", "--bootstrap-server", broker, "--at-min-isr-partitions"); strings.Count(out, "\tTopic: moving\t") != 2 || strings.Contains(out, "PartitionCount") || strings.Contains(out, "idoall_testTopic") {
		t.Fatalf("--at-min-isr-partitions (moving has one replica, min.insync.replicas 1):\n%s", out)
	}
	for _, filter := range []string{"--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"} {
		if out := ok(t, "", "kafka-topics.sh", "--describe", "--bootstrap-server", broker, filter); out != "" {
			t.Fatalf("%s on a healthy cluster:\n%s", filter, out)
		}
	}
	if out := ok(t, "", "kafka-reassign-partitions.sh", "--bootstrap-server", broker, "--list"); out != "No partition reassignments found.\n" {
		t.Fatalf("--list printed %q", out)
	}
}

func sortedLines(s string) []string {
	lines := strings.Fields(s)
	sort.Strings(lines)
	return lines
}
