package txn

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Transitions of many ids of one __transaction_state partition at once
// share appends, and every one answered is in the log: a restarted
// coordinator reads each id back.
func TestConcurrentStateWritesShareAppends(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, &markerLog{}, clk)
	var ids []string
	for i := 0; len(ids) < 64; i++ {
		if id := fmt.Sprintf("group-%d", i); StatePartition(id, 4) == 2 {
			ids = append(ids, id)
		}
	}
	ctx := context.Background()
	before := n.c.stateAppends.Load()
	pids := make([]int64, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			pid, _, code := n.c.InitProducerID(ctx, id, 60000, ProducerIDAndEpoch{ID: -1})
			must(t, "init "+id, code)
			pids[i] = pid
		})
	}
	wg.Wait()
	appends := n.c.stateAppends.Load() - before
	if appends >= int64(len(ids)) {
		t.Fatalf("%d concurrent writes took %d appends: none grouped", len(ids), appends)
	}
	t.Logf("%d concurrent state writes in %d appends", len(ids), appends)

	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	for i, id := range ids {
		got, code := n.c.Describe(id)
		must(t, "describe "+id+" after the restart", code)
		if got.ProducerID != pids[i] || got.State != Empty {
			t.Fatalf("%s after the restart: %+v, want producer %d in Empty", id, got, pids[i])
		}
	}
}
