package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A producer's next AddPartitionsToTxn sent while its last commit's
// markers are still being written waits for the completion and is
// answered once it is recorded, instead of CONCURRENT_TRANSACTIONS; while
// the markers cannot be written it is answered CONCURRENT_TRANSACTIONS
// after concurrentWait.
func TestAddPartitionsWaitsForTheCompletionInFlight(t *testing.T) {
	ml := &markerLog{failing: errors.New("leader slow")}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 0}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))

	start := time.Now()
	if code := n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the markers fail: %v", kerr.ErrorForCode(code))
	}
	if waited := time.Since(start); waited < concurrentWait {
		t.Fatalf("answered CONCURRENT_TRANSACTIONS after %v, before concurrentWait", waited)
	}

	go func() {
		time.Sleep(20 * time.Millisecond)
		ml.fail(nil)
	}()
	must(t, "add as the markers go through", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	if got, _ := n.c.Describe("tx"); got.State != Ongoing || len(got.Partitions) != 1 {
		t.Fatalf("after the wait: %+v", got)
	}
}
