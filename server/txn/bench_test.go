package txn

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

// BenchmarkTransactionCycle is the coordinator's cost of one transaction:
// add a partition (Ongoing written), commit (PrepareCommit written, then
// markers, then CompleteCommit written), each write fsynced.
func BenchmarkTransactionCycle(b *testing.B) {
	broker, err := server.Open(server.Config{DataDir: b.TempDir(), AutoCreateTopics: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	if err := broker.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	c, err := New(broker, Config{Logger: slog.New(slog.DiscardHandler), Markers: &markerLog{}, ManualTick: true, StatePartitions: 1,
		MarkerRetryBackoff: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	pid, e, _ := c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	b.ReportAllocs()
	for b.Loop() {
		if code := c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}); code != 0 {
			b.Fatal(kerr.ErrorForCode(code))
		}
		if code := c.EndTxn(ctx, "tx", pid, e, true); code != 0 {
			b.Fatal(code)
		}
		// The next transaction starts once this one's markers are written.
		harness.WaitFor(b, "the commit completing", 10*time.Second, func() bool {
			txn, code := c.Describe("tx")
			return code == 0 && txn.State == CompleteCommit
		})
	}
}
