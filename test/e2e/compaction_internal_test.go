package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestOffsetsTopicBoundedAfter100kCommits: 100,000 offset commits (1,000
// commits of 100 partitions each, every one a record of
// __consumer_offsets) leave the topic, once cleaned, below a bound set by
// its live keys and its active segment, not by the commits; after a
// restart the coordinator serves the last commit of every partition.
func TestOffsetsTopicBoundedAfter100kCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("100k commits")
	}
	node := harness.Start(t, "--log-cleaner-backoff-ms=100", "--offsets-topic-segment-bytes=65536",
		"--offsets-topic-num-partitions=1")
	node.WaitKafka()
	const topic, partitions, rounds = "committed-many", 100, 1000
	createTopic(t, node, topic, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	for round := 1; round <= rounds; round++ {
		var os kadm.Offsets
		for p := int32(0); p < partitions; p++ {
			os.AddOffset(topic, p, int64(round), -1)
		}
		if err := adm.CommitAllOffsets(ctx, "many", os); err != nil {
			t.Fatalf("commit round %d: %v", round, err)
		}
	}
	// Each commit record is about 100 bytes: 100k of them about 10 MB.
	const bound = 512 << 10
	var size int64
	took := harness.WaitFor(t, "the cleaner to bound __consumer_offsets", 60*time.Second, func() bool {
		size = topicSize(t, node, "__consumer_offsets")
		return size < bound
	})
	t.Logf("%d commits: __consumer_offsets %d bytes once cleaned (bound %d), %v after the last commit", partitions*rounds, size, bound, took)

	node.Stop()
	node.Restart()
	node.WaitKafka()
	adm = kadm.NewClient(franz(t, node))
	fetched, err := adm.FetchOffsets(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		if o, ok := fetched.Lookup(topic, p); !ok || o.At != rounds {
			t.Fatalf("partition %d after restart: %+v (%v), want %d", p, o, ok, rounds)
		}
	}
}

// topicSize sums size_bytes over the topic's partitions from GET /topics/{t}.
func topicSize(t testing.TB, node *harness.Node, topic string) int64 {
	t.Helper()
	resp, err := http.Get(node.URL + "/topics/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var td struct {
		Partitions []struct {
			SizeBytes int64 `json:"size_bytes"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(body, &td); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /topics/%s: %d %s", topic, resp.StatusCode, body)
	}
	var n int64
	for _, p := range td.Partitions {
		n += p.SizeBytes
	}
	return n
}
