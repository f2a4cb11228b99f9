package replication

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Scripted transaction scenarios on one partition: what the LSO, the
// aborted-transaction index and the rules decide after each event.

// txnBatch is a transactional batch of n records from producer id.
func txnBatch(t *testing.T, id int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := idemBatch(t, id, epoch, seq, n)
	h := recordbatch.ReadHeader(b)
	h.Attributes |= recordbatch.AttrTransactional
	h.Put(b)
	return b
}

func produceTxn(t *testing.T, p *Replica, batch []byte, guard TxnGuard) (int64, error) {
	t.Helper()
	h, err := recordbatch.ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.AppendProducerBatch(h, batch, storage.AppendOptions{}, guard)
	return res.BaseOffset, err
}

func mustProduceTxn(t *testing.T, p *Replica, batch []byte, want int64) {
	t.Helper()
	if off, err := produceTxn(t, p, batch, TxnGuard{}); err != nil || off != want {
		t.Fatalf("transactional batch: offset %d, %v; want %d", off, err, want)
	}
}

func marker(t *testing.T, p *Replica, id int64, epoch int16, commit bool, coordEpoch int32) (int64, error) {
	t.Helper()
	res, err := p.AppendTxnMarker(id, epoch, recordbatch.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordEpoch}, storage.AppendOptions{})
	return res.BaseOffset, err
}

func mustMarker(t *testing.T, p *Replica, id int64, epoch int16, commit bool, want int64) {
	t.Helper()
	if off, err := marker(t, p, id, epoch, commit, 0); err != nil || off != want {
		t.Fatalf("marker: offset %d, %v; want %d", off, err, want)
	}
}

func wantLSO(t *testing.T, p *Replica, want int64) {
	t.Helper()
	if got := p.LastStableOffset(); got != want {
		t.Fatalf("LSO %d, want %d (high watermark %d, log end %d)", got, want, p.HighWatermark(), p.LogEndOffset())
	}
}

func wantAborted(t *testing.T, p *Replica, want ...storage.AbortedTxn) {
	t.Helper()
	got, err := p.AbortedTxns(0, p.LogEndOffset())
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("aborted transactions %v, %v; want %v", got, err, want)
	}
}

func TestTxnLastStableOffsetAndAbortIndex(t *testing.T) {
	p, _ := newTestPartition(t)
	if _, err := p.Append(plainBatch(t, "a", "b"), storage.AppendOptions{}); err != nil { // 0-1
		t.Fatal(err)
	}
	wantLSO(t, p, 2)
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 2), 2) // producer 7 opens at 2
	mustProduceTxn(t, p, txnBatch(t, 8, 0, 0, 1), 4) // producer 8 opens at 4
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 2, 1), 5)
	wantLSO(t, p, 2)
	mustMarker(t, p, 7, 0, true, 6) // 7 commits
	wantLSO(t, p, 4)
	mustMarker(t, p, 8, 0, false, 7) // 8 aborts
	wantLSO(t, p, 8)
	wantAborted(t, p, storage.AbortedTxn{ProducerID: 8, FirstOffset: 4, LastOffset: 7, LastStableOffset: 8})
	for _, s := range p.Producers() {
		if s.CurrentTxnStartOffset != -1 {
			t.Fatalf("producer %d still has a transaction from %d", s.ProducerID, s.CurrentTxnStartOffset)
		}
	}

	// An abort while another transaction is open records that one's
	// start as the LSO at abort.
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 3, 1), 8)
	mustProduceTxn(t, p, txnBatch(t, 8, 0, 1, 1), 9)
	mustMarker(t, p, 8, 0, false, 10)
	wantAborted(t, p, storage.AbortedTxn{ProducerID: 8, FirstOffset: 4, LastOffset: 7, LastStableOffset: 8},
		storage.AbortedTxn{ProducerID: 8, FirstOffset: 9, LastOffset: 10, LastStableOffset: 8})
	wantLSO(t, p, 8)
	states := p.Producers()
	i := slices.IndexFunc(states, func(s ProducerState) bool { return s.ProducerID == 7 })
	if i < 0 || states[i].CurrentTxnStartOffset != 8 {
		t.Fatalf("DescribeProducers: %+v", states)
	}
}

// A transaction whose marker is not yet below the high watermark still
// holds the LSO (a follower cluster: the leader's HW lags its log end).
func TestTxnLSOWaitsForTheMarkerBelowTheHighWatermark(t *testing.T) {
	p, _ := newTestPartition(t)
	follower, _ := newTestPartition(t, func(c *Config) { c.BrokerID = 2 })
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 3), 0)
	mustMarker(t, p, 7, 0, false, 3)
	if _, err := follower.AppendAsFollower(readAll(t, p, 0)); err != nil {
		t.Fatal(err)
	}
	follower.FollowHighWatermark(2)
	wantLSO(t, follower, 0)
	follower.FollowHighWatermark(3) // the marker itself is not yet below
	wantLSO(t, follower, 0)
	follower.FollowHighWatermark(4)
	wantLSO(t, follower, 4)
	want := storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}
	wantAborted(t, follower, want)
	wantAborted(t, p, want)
}

func TestTxnRules(t *testing.T) {
	p, _ := newTestPartition(t)
	mustProduceTxn(t, p, txnBatch(t, 7, 2, 0, 1), 0)
	// A plain idempotent batch inside the producer's transaction.
	if _, err := produceIdem(t, p, idemBatch(t, 7, 2, 1, 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch in a transaction: %v", err)
	}
	// A marker from an older producer epoch.
	if _, err := marker(t, p, 7, 1, true, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an older epoch: %v", err)
	}
	if _, err := marker(t, p, 7, 2, true, 5); err != nil {
		t.Fatal(err)
	}
	// A deposed coordinator's marker (older coordinator epoch).
	if _, err := marker(t, p, 7, 2, false, 4); !errors.Is(err, ErrTxnCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v", err)
	}
	// A bumped epoch (the coordinator aborting a timed-out transaction)
	// is accepted and fences the older one.
	if _, err := marker(t, p, 7, 3, false, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := produceTxn(t, p, txnBatch(t, 7, 2, 1, 1), TxnGuard{}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("data from the fenced epoch: %v", err)
	}
	if p.LogEndOffset() != 3 {
		t.Fatalf("refused batches were written: log end %d", p.LogEndOffset())
	}
}

// KIP-890 part 1: a batch verified while no transaction was open is
// refused when a marker lands between the verification and the append.
func TestTxnVerificationGuard(t *testing.T) {
	p, _ := newTestPartition(t)
	b := txnBatch(t, 7, 0, 0, 1)
	need, guard := p.TxnVerification(recordbatch.ReadHeader(b))
	if !need {
		t.Fatal("a producer without a transaction here needs no verification")
	}
	if _, err := marker(t, p, 7, 0, false, 0); err != nil { // a late marker of its previous transaction
		t.Fatal(err)
	}
	if _, err := produceTxn(t, p, b, guard); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append after a marker since the verification: %v", err)
	}
	need, guard = p.TxnVerification(recordbatch.ReadHeader(b))
	if off, err := produceTxn(t, p, b, guard); !need || err != nil || off != 1 {
		t.Fatalf("verified append: need %v offset %d, %v", need, off, err)
	}
	if need, _ := p.TxnVerification(recordbatch.ReadHeader(txnBatch(t, 7, 0, 1, 1))); need {
		t.Fatal("a batch of an open transaction asked for verification")
	}
}

// A coordinator's probe (ProbeTxn) finds a producer's open transaction,
// and, finding none, revokes the verification a batch of it holds: that
// batch is refused, so it cannot open a transaction the coordinator was
// just told does not exist. A batch verified after the probe goes in.
func TestTxnProbeRevokesVerifications(t *testing.T) {
	p, _ := newTestPartition(t)
	b := txnBatch(t, 7, 0, 0, 1)
	need, guard := p.TxnAddition(recordbatch.ReadHeader(b))
	if !need {
		t.Fatal("a producer without a transaction here needs no add")
	}
	if p.ProbeTxn(7) {
		t.Fatal("a probe found a transaction open before any batch")
	}
	if _, err := produceTxn(t, p, b, guard); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append verified before a probe that found nothing open: %v", err)
	}
	_, retaken := p.TxnAddition(recordbatch.ReadHeader(b))
	if _, err := produceTxn(t, p, b, retaken.AskedAt(guard)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with a guard taken again after the probe, for a question asked before it: %v", err)
	}
	_, guard = p.TxnAddition(recordbatch.ReadHeader(b))
	if off, err := produceTxn(t, p, b, guard); err != nil || off != 0 {
		t.Fatalf("append verified after the probe: offset %d, %v", off, err)
	}
	if !p.ProbeTxn(7) {
		t.Fatal("a probe missed the open transaction")
	}
	if off, err := produceTxn(t, p, txnBatch(t, 7, 0, 1, 1), TxnGuard{}); err != nil || off != 1 {
		t.Fatalf("the open transaction's next batch after a probe found it: offset %d, %v", off, err)
	}
	if p.ProbeTxn(8) {
		t.Fatal("a probe of another producer found a transaction")
	}
}

// The open transactions and the abort index come back after a clean close
// (from the snapshot) and after a kill -9 (from the log above the newest
// snapshot), even when the abort's index entry was lost.
func TestTxnStateSurvivesRestart(t *testing.T) {
	p, cfg := newTestPartition(t)
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 2), 0)
	mustProduceTxn(t, p, txnBatch(t, 8, 0, 0, 1), 2)
	mustMarker(t, p, 8, 0, false, 3)
	abort := storage.AbortedTxn{ProducerID: 8, FirstOffset: 2, LastOffset: 3, LastStableOffset: 0}
	wantAborted(t, p, abort)

	crashed := crashCopy(t, cfg)
	// The crash also lost the index entry (a torn write): the log has it.
	if err := os.Remove(filepath.Join(crashed.Dir, "00000000000000000000.txnindex")); err != nil {
		t.Fatal(err)
	}
	c := openPartition(t, crashed)
	wantLSO(t, c, 0)
	wantAborted(t, c, abort)
	mustMarker(t, c, 7, 0, true, 4)
	wantLSO(t, c, 5)

	p = reopen(t, p, cfg)
	if got := snapshotOffsets(t, cfg.Dir); !slices.Contains(got, 4) {
		t.Fatalf("no snapshot at the log end after a clean close: %v", got)
	}
	wantLSO(t, p, 0)
	wantAborted(t, p, abort)
	if _, err := produceIdem(t, p, idemBatch(t, 7, 0, 2, 1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("the reloaded transaction did not hold: %v", err)
	}
	mustMarker(t, p, 7, 0, true, 4)
	wantLSO(t, p, 5)
}

// A follower copying the leader's batches ends with the same LSO and
// abort index; truncating its tail forgets what was cut.
func TestTxnFollowerMatchesLeader(t *testing.T) {
	leader, _ := newTestPartition(t)
	follower, _ := newTestPartition(t, func(c *Config) { c.BrokerID = 2 })
	mustProduceTxn(t, leader, txnBatch(t, 7, 0, 0, 2), 0)
	mustProduceTxn(t, leader, txnBatch(t, 8, 0, 0, 2), 2)
	mustMarker(t, leader, 7, 0, false, 4)
	follow(t, leader, follower)
	wantLSO(t, follower, leader.LastStableOffset())
	wantLSO(t, follower, 2)
	wantAborted(t, follower, storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 4, LastStableOffset: 2})
	mustMarker(t, leader, 8, 0, false, 5)
	follow(t, leader, follower)
	leaderAborted, _ := leader.AbortedTxns(0, 100)
	followerAborted, _ := follower.AbortedTxns(0, 100)
	if !slices.Equal(leaderAborted, followerAborted) || len(followerAborted) != 2 {
		t.Fatalf("leader's aborted %v, follower's %v", leaderAborted, followerAborted)
	}
	wantLSO(t, follower, 6)
	if err := follower.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, follower, storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 4, LastStableOffset: 2})
	wantLSO(t, follower, 2) // producer 8's transaction is open again
}

// A kill -9 after a snapshot at a roll: the open transaction comes from the
// snapshot, the events after it from the log above it.
func TestTxnStateFromSnapshotAndLogAbove(t *testing.T) {
	p, cfg := newTestPartition(t, func(c *Config) { c.Log.SegmentBytes = 300 })
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 2), 0) // open across the snapshot
	for range 4 {                                    // plain batches until the log rolls
		if _, err := p.Append(plainBatch(t, "padding-padding-padding-padding-padding"), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p.MaybeFlush(time.Now()) // snapshots the state at the roll
	snaps := snapshotOffsets(t, cfg.Dir)
	if len(snaps) == 0 {
		t.Fatal("no snapshot after the roll")
	}
	end := p.LogEndOffset()
	mustProduceTxn(t, p, txnBatch(t, 8, 0, 0, 1), end) // above the snapshot
	mustMarker(t, p, 8, 0, false, end+1)
	abort := storage.AbortedTxn{ProducerID: 8, FirstOffset: end, LastOffset: end + 1, LastStableOffset: 0}
	wantAborted(t, p, abort)

	crashed := crashCopy(t, cfg)
	lost, _ := filepath.Glob(filepath.Join(crashed.Dir, "*.txnindex"))
	for _, f := range lost { // as if the entry's write had not reached the disk
		os.Remove(f)
	}
	c := openPartition(t, crashed)
	wantLSO(t, c, 0)
	wantAborted(t, c, abort)
	states := c.Producers()
	i := slices.IndexFunc(states, func(s ProducerState) bool { return s.ProducerID == 7 })
	if i < 0 || states[i].CurrentTxnStartOffset != 0 {
		t.Fatalf("producer 7 after the crash: %+v (snapshots %v)", states, snaps)
	}
	mustMarker(t, c, 7, 0, true, end+2)
	wantLSO(t, c, end+3)
}

// An abort is in the aborted-transaction index before the LSO passes its
// records: while the index entry is being written, the marker is in the
// log and (no follower here) below the high watermark, yet a
// read_committed fetch must still stop before the aborted records, or it
// would find them below the LSO with no abort to drop them by. The
// flapping nemesis caught a consumer reading an aborted transaction in
// that window.
func TestTxnAbortIndexedBeforeTheLSOPassesIt(t *testing.T) {
	fs := errorfs.New(nil)
	p, _ := newTestPartition(t, func(c *Config) { c.FS = fs })
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 2), 0) // 0-1
	lsoDuringIndexWrite := int64(-1)
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".txnindex", Times: 1, Hook: func(string) {
		lsoDuringIndexWrite = p.LastStableOffset()
	}})
	mustMarker(t, p, 7, 0, false, 2)
	if lsoDuringIndexWrite != 0 {
		t.Fatalf("LSO %d while the abort was being indexed, want 0 (the aborted records are below it, unindexed)", lsoDuringIndexWrite)
	}
	wantLSO(t, p, 3)
	wantAborted(t, p, storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3})
}

func markerEnding(t *testing.T, p *Replica, id int64, epoch, ends int16, commit bool) (off int64, appended bool, err error) {
	t.Helper()
	res, appended, err := p.AppendTxnMarkerEnding(id, epoch, ends, recordbatch.EndTxnMarker{Commit: commit}, storage.AppendOptions{})
	return res.BaseOffset, appended, err
}

// transaction.version 2: each transaction has its own epoch and its
// markers carry the next one's. A marker that says the epoch it ends,
// resent after the partition closed that transaction (a lost answer, a
// new coordinator resending what its log left pending), appends nothing,
// whether the next transaction has begun here or ended too; one ahead
// of the open transaction's own marker is refused, retriable.
func TestTxnMarkerEndingAClosedTransactionAppendsNothing(t *testing.T) {
	p, _ := newTestPartition(t)
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 2), 0) // transaction at epoch 0: 0-1
	if _, _, err := markerEnding(t, p, 7, 2, 1, true); !errors.Is(err, ErrTxnMarkerEarly) {
		t.Fatalf("marker ending epoch 1 while epoch 0 is open: %v, want ErrTxnMarkerEarly", err)
	}
	if off, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || !appended || off != 2 {
		t.Fatalf("marker ending epoch 0: offset %d, appended %v, %v", off, appended, err)
	}
	// The resend before the next transaction's data: a copy, as Kafka
	// appends it (the group coordinator's listener hears it again).
	if off, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || !appended || off != 3 {
		t.Fatalf("the marker again, nothing open: offset %d, appended %v, %v", off, appended, err)
	}
	mustProduceTxn(t, p, txnBatch(t, 7, 1, 0, 2), 4) // the next transaction, epoch 1: 4-5
	p.hw.Store(p.LogEndOffset())
	wantLSO(t, p, 4)
	end := p.LogEndOffset()
	if off, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || appended || off != end-1 {
		t.Fatalf("the marker again after the next transaction's data: offset %d, appended %v, %v; want nothing appended, up to %d",
			off, appended, err, end-1)
	}
	if p.LogEndOffset() != end {
		t.Fatalf("log end %d, want %d", p.LogEndOffset(), end)
	}
	wantLSO(t, p, 4) // still open: the stale marker did not end it
	if off, appended, err := markerEnding(t, p, 7, 2, 1, false); err != nil || !appended || off != 6 {
		t.Fatalf("marker ending epoch 1: offset %d, appended %v, %v", off, appended, err)
	}
	p.hw.Store(p.LogEndOffset())
	wantLSO(t, p, 7)
	wantAborted(t, p, storage.AbortedTxn{ProducerID: 7, FirstOffset: 4, LastOffset: 6, LastStableOffset: 7})
	// Epoch 0's marker once more, after epoch 1's: closed, not fenced.
	if _, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || appended {
		t.Fatalf("epoch 0's marker after epoch 1's: appended %v, %v", appended, err)
	}
	// Without the epoch it ends (Kafka's tools): as before, fenced.
	if _, err := marker(t, p, 7, 1, true, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("an older marker without its data epoch: %v, want ErrInvalidProducerEpoch", err)
	}
}

// A batch opening the producer's next transaction waits for the marker of
// the one open here (whose marker would end both otherwise), until its
// context ends; the marker's append releases it.
func TestTxnAwaitOrderWaitsForTheOpenTransactionsMarker(t *testing.T) {
	p, _ := newTestPartition(t)
	mustProduceTxn(t, p, txnBatch(t, 7, 0, 0, 1), 0)
	if err := p.AwaitTxnOrder(t.Context(), 7, 0); err != nil {
		t.Fatalf("same epoch: %v", err)
	}
	if err := p.AwaitTxnOrder(t.Context(), 8, 3); err != nil {
		t.Fatalf("another producer: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := p.AwaitTxnOrder(short, 7, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no marker: %v, want the context's deadline", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.AwaitTxnOrder(t.Context(), 7, 1) }()
	select {
	case err := <-done:
		t.Fatalf("returned before the marker: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || !appended {
		t.Fatalf("marker: appended %v, %v", appended, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after the marker")
	}
	mustProduceTxn(t, p, txnBatch(t, 7, 1, 0, 1), 2)
}

func coordinatorTxn(t *testing.T, p *Replica, batch []byte) (int64, error) {
	t.Helper()
	res, err := p.AppendCoordinatorTxnBatch(recordbatch.ReadHeader(batch), batch, storage.AppendOptions{})
	return res.BaseOffset, err
}

// A coordinator's transactional batch (the group coordinator's
// TxnOffsetCommit: no sequence) opens its producer's transaction as a
// client's does: the LSO stops at it, the producer's next transaction
// waits for its marker, and that marker resent after the next
// transaction began appends nothing. Two alike in one transaction are
// both appended (no sequence, no duplicate); an older epoch is fenced.
func TestCoordinatorTxnBatchOpensTheProducersTransaction(t *testing.T) {
	p, _ := newTestPartition(t)
	commit := func(epoch int16) []byte { return txnBatch(t, 7, epoch, -1, 1) }
	for want := int64(0); want < 2; want++ {
		if off, err := coordinatorTxn(t, p, commit(0)); err != nil || off != want {
			t.Fatalf("coordinator batch: offset %d, %v; want %d", off, err, want)
		}
	}
	wantLSO(t, p, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.AwaitTxnOrder(ctx, 7, 1); err == nil {
		t.Fatal("the next transaction did not wait for the open one's marker")
	}
	if off, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || !appended || off != 2 {
		t.Fatalf("marker: offset %d, appended %v, %v", off, appended, err)
	}
	if off, err := coordinatorTxn(t, p, commit(1)); err != nil || off != 3 {
		t.Fatalf("next transaction's batch: offset %d, %v", off, err)
	}
	if _, appended, err := markerEnding(t, p, 7, 1, 0, true); err != nil || appended {
		t.Fatalf("resent marker: appended %v, %v; want nothing appended", appended, err)
	}
	wantLSO(t, p, 3)
	if _, err := coordinatorTxn(t, p, commit(0)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("batch of the fenced epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if _, err := coordinatorTxn(t, p, idemBatch(t, 7, 1, -1, 1)); err == nil {
		t.Fatal("a non-transactional batch was taken as a coordinator's transaction")
	}
}
