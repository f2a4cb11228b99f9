package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// oldClient makes librdkafka speak as to a Kafka 0.9 broker: no ApiVersions,
// Produce v1 and Fetch v1 with magic 0 message sets, ListOffsets v0,
// JoinGroup/SyncGroup/Heartbeat v0, the versions Kafka 4.0 dropped.
var oldClient = []string{"-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"}

// TestKafkaKcatOldProtocol: an 0.9-era producer's message sets (every codec
// librdkafka writes for magic 0) are stored as batches that a current
// consumer reads, and an 0.9-era consumer, plain and in a group, reads
// back both its own records and a current producer's, down-converted.
func TestKafkaKcatOldProtocol(t *testing.T) {
	kcatPath(t)
	node := kafkaNode(t)
	createTopic(t, node, "oldkc", 1)
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4"} {
		in := fmt.Sprintf("a-%s:one\nb-%s:two\n", codec, codec)
		kcat(t, in, append([]string{"-b", node.KafkaAddr, "-P", "-t", "oldkc", "-K:", "-z", codec}, oldClient...)...)
		want = append(want, strings.Split(strings.TrimSpace(in), "\n")...)
	}
	kcat(t, "new:with-header\n", "-b", node.KafkaAddr, "-P", "-t", "oldkc", "-K:", "-H", "h=v", "-z", "zstd")
	want = append(want, "new:with-header")
	for i := range want {
		want[i] = fmt.Sprintf("%d %s", i, want[i])
	}
	format := []string{"-o", "beginning", "-e", "-q", "-f", `%o %k:%s\n`}
	check := func(who, out string) {
		t.Helper()
		if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%s consumed:\n%s\nwant:\n%s", who, out, strings.Join(want, "\n"))
		}
	}
	check("current consumer", kcat(t, "", append([]string{"-b", node.KafkaAddr, "-C", "-t", "oldkc"}, format...)...))
	check("0.9 consumer", kcat(t, "", append(append([]string{"-b", node.KafkaAddr, "-C", "-t", "oldkc"}, format...), oldClient...)...))
	check("0.9 group consumer", kcat(t, "", append(append([]string{"-b", node.KafkaAddr, "-G", "old-group", "oldkc"}, format...), oldClient...)...))
}
