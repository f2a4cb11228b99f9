package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// kcatPath finds kcat. Without it the test is skipped, except under CI
// (CI set), where a missing kcat fails the test: make test installs it.
func kcatPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	harness.RequireService(t, "kcat", err)
	return path
}

func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "PROTOERR") {
		t.Fatalf("kcat %s reported protocol errors:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}

// TestKafkaKcat lists metadata, produces keyed lines with every codec
// librdkafka has, and consumes them back from the beginning.
func TestKafkaKcat(t *testing.T) {
	kcatPath(t)
	node := kafkaNode(t)
	createTopic(t, node, "kc", 3)
	meta := kcat(t, "", "-b", node.KafkaAddr, "-L")
	for _, want := range []string{"broker 0 at " + node.KafkaAddr, `topic "kc" with 3 partitions`} {
		if !strings.Contains(meta, want) {
			t.Fatalf("kcat -L lacks %q:\n%s", want, meta)
		}
	}
	var lines []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd", "idempotent"} {
		in := "alpha:" + codec + "-1\nbeta:" + codec + "-2\ngamma:" + codec + "-3\n"
		// murmur2_random is Kafka's Java default; librdkafka's own default is CRC32
		args := []string{"-b", node.KafkaAddr, "-P", "-t", "kc", "-K:", "-X", "partitioner=murmur2_random"}
		if codec == "idempotent" {
			args = append(args, "-X", "enable.idempotence=true")
		} else {
			args = append(args, "-z", codec)
		}
		kcat(t, in, args...)
		lines = append(lines, strings.Split(strings.TrimSpace(in), "\n")...)
	}
	// read_committed is librdkafka's default: it needs a correct last stable offset
	out := kcat(t, "", "-b", node.KafkaAddr, "-C", "-t", "kc", "-o", "beginning", "-e", "-q", "-f", `%p %o %k:%s\n`)
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != len(lines) {
		t.Fatalf("consumed %d records, want %d:\n%s", len(got), len(lines), out)
	}
	partitionOf := map[string]string{}
	seen := map[string]bool{}
	for _, l := range got {
		var p, off, kv string
		fields := strings.SplitN(l, " ", 3)
		p, off, kv = fields[0], fields[1], fields[2]
		key := strings.SplitN(kv, ":", 2)[0]
		if q, ok := partitionOf[key]; ok && q != p {
			t.Fatalf("key %s in partitions %s and %s", key, q, p)
		}
		partitionOf[key] = p
		if seen[p+"/"+off] {
			t.Fatalf("offset %s of partition %s seen twice", off, p)
		}
		seen[p+"/"+off] = true
	}
	for _, l := range lines {
		if !strings.Contains(out, l) {
			t.Fatalf("record %q not consumed:\n%s", l, out)
		}
	}
	// with murmur2 the keys land where the HTTP gateway puts them
	for key, p := range partitionOf {
		if hp := httpPartitionForKey(t, node, 3, key); hp != p {
			t.Fatalf("key %s: kcat put it in partition %s, the gateway in %s", key, p, hp)
		}
	}
}
