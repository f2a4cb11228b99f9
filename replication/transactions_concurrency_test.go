package replication

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Producers opening and ending transactions concurrently while readers
// take the LSO and the abort index and snapshots are written: every abort
// is indexed once, and with every transaction ended the LSO is the high
// watermark.
func TestTxnConcurrentProducersAndSnapshots(t *testing.T) {
	p, _ := newTestPartition(t)
	const producers, rounds = 6, 20
	var aborts atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	for id := int64(1); id <= producers; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				b := txnBatch(t, id, 0, int32(2*r), 2)
				if _, err := produceTxn(t, p, b, TxnGuard{}); err != nil {
					t.Error(err)
					return
				}
				commit := (int(id)+r)%3 != 0
				if _, err := marker(t, p, id, 0, commit, 0); err != nil {
					t.Error(err)
					return
				}
				if !commit {
					aborts.Add(1)
				}
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso > hw {
				t.Errorf("LSO %d above the high watermark %d", lso, hw)
				return
			}
			if _, err := p.AbortedTxns(0, p.LogEndOffset()); err != nil {
				t.Error(err)
				return
			}
			p.snapshotProducers("test")
		}
	}()
	wg.Wait()
	close(done)
	readers.Wait()
	wantLSO(t, p, p.HighWatermark())
	got, err := p.AbortedTxns(0, p.LogEndOffset())
	if err != nil || int64(len(got)) != aborts.Load() {
		t.Fatalf("%d aborts indexed (%v), want %d", len(got), err, aborts.Load())
	}
}
