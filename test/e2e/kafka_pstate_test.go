package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// snapshotFiles lists the producer state snapshots of durable-idem-0.
func snapshotFiles(t *testing.T, node *harness.Node) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(node.DataDir, "durable-idem-0"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".snapshot") {
			out = append(out, e.Name())
		}
	}
	return out
}

// produceRange sends batches of two records at sequences [from, to) and
// returns the last one sent.
func produceRange(t *testing.T, ctx context.Context, cl *kgo.Client, opts records.BatchOptions, from, to int32) []byte {
	t.Helper()
	var last []byte
	for seq := from; seq < to; seq += 2 {
		opts.BaseSequence = seq
		last = idemBatch(t, opts)
		if p := rawProduce(t, ctx, cl, last); p.ErrorCode != 0 || p.BaseOffset != int64(seq) {
			t.Fatalf("seq %d: %+v", seq, p)
		}
	}
	return last
}

func idemEndOffset(t *testing.T, ctx context.Context, cl *kgo.Client) int64 {
	t.Helper()
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "durable-idem", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	resp, err := lo.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("list offsets: %v %+v", err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestKafkaIdempotenceAfterKill9UsesRollSnapshot: with small segments the
// broker snapshots producer state at rolls; after a SIGKILL between an
// acknowledged idempotent produce and its retry, the restarted broker loads
// the roll snapshot, replays the batches after it, and answers the retry
// with the original offset without appending it again.
func TestKafkaIdempotenceAfterKill9UsesRollSnapshot(t *testing.T) {
	node := kafkaNode(t)
	mustPost(t, node.URL+"/topics", "application/json",
		`{"name":"durable-idem","partitions":1,"configs":{"segment.bytes":"1024"}}`, 201)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := franz(t, node)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %+v", err, init)
	}
	opts := records.BatchOptions{ProducerID: init.ProducerID, ProducerEpoch: init.ProducerEpoch}
	produceRange(t, ctx, cl, opts, 0, 80) // several 1 KiB segments
	harness.WaitFor(t, "a producer state snapshot after segment rolls (the flush loop writes it)", 20*time.Second,
		func() bool { return len(snapshotFiles(t, node)) > 0 })
	last := produceRange(t, ctx, cl, opts, 80, 84) // after the snapshot
	cl.Close()
	cl = retryAfterKill(t, ctx, node, last, 82, opts, 90)
	if end := idemEndOffset(t, ctx, cl); end != 84 {
		t.Fatalf("end offset after the retry: %d, want 84 (nothing appended twice)", end)
	}
	if logs := node.Logs(); strings.Contains(logs, "snapshot ignored") || !strings.Contains(logs, "producer state loaded") ||
		strings.Contains(logs, "snapshot_offset=-1") {
		t.Fatalf("the state did not come from the roll snapshot:\n%s", logs)
	}
}

// TestKafkaIdempotenceAfterCleanStopUsesSnapshot: SIGTERM writes a
// snapshot at the log end; the restarted broker answers a retry from it.
func TestKafkaIdempotenceAfterCleanStopUsesSnapshot(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "durable-idem", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := franz(t, node)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %+v", err, init)
	}
	opts := records.BatchOptions{ProducerID: init.ProducerID, ProducerEpoch: init.ProducerEpoch}
	last := produceRange(t, ctx, cl, opts, 0, 20)
	cl.Close()

	node.Stop()
	if got, want := snapshotFiles(t, node), fmt.Sprintf("%020d.snapshot", 20); len(got) != 1 || got[0] != want {
		t.Fatalf("snapshots after SIGTERM: %v, want [%s]", got, want)
	}
	node.Restart()
	node.WaitKafka()
	cl = franz(t, node)
	if p := rawProduce(t, ctx, cl, last); p.ErrorCode != 0 || p.BaseOffset != 18 {
		t.Fatalf("retry after a clean restart: %+v, want the original offset 18", p)
	}
	if end := idemEndOffset(t, ctx, cl); end != 20 {
		t.Fatalf("end offset after the retry: %d, want 20", end)
	}
}
