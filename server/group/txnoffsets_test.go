package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/ownership"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
	"github.com/ferry-mq/ferry/test/harness"
)

// controlBatch is Kafka's EndTxnMarker control batch for producer pid, as
// franz-go's kmsg encodes it.
func controlBatch(t *testing.T, base, pid int64, commit bool) []byte {
	t.Helper()
	return controlBatchAt(t, base, pid, 0, commit)
}

// controlBatchAt is controlBatch with the marker's producer epoch.
func controlBatchAt(t *testing.T, base, pid int64, epoch int16, commit bool) []byte {
	t.Helper()
	var typ int16
	if commit {
		typ = 1
	}
	key := binary.BigEndian.AppendUint16(nil, 0)
	key = binary.BigEndian.AppendUint16(key, uint16(typ))
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, 5) // coordinator epoch
	rec := kmsg.Record{Key: key, Value: value}
	recBytes := rec.AppendTo(nil)
	b := kmsg.RecordBatch{FirstOffset: base, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x20 | 0x10,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: -1, NumRecords: 1, Records: recBytes}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func txnCommitBatch(t *testing.T, base, pid int64, grp string, offset int64) []byte {
	t.Helper()
	return txnCommitBatchAt(t, base, pid, 0, grp, offset)
}

// txnCommitBatchAt is txnCommitBatch at a producer epoch.
func txnCommitBatchAt(t *testing.T, base, pid int64, epoch int16, grp string, offset int64) []byte {
	t.Helper()
	var bld records.Builder
	bld.Add(records.Record{Key: offsetKey(grp, topicPartition{"in", 0}),
		Value: offsetValue(offsetEntry{offset: offset, leaderEpoch: -1, commitTime: 1}), Timestamp: 1})
	data, err := bld.AppendBatch(nil, records.BatchOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1, Transactional: true})
	if err != nil {
		t.Fatal(err)
	}
	recordbatch.SetBaseOffset(data, base)
	return data
}

func TestControlCommitReadsEndTxnMarkers(t *testing.T) {
	for _, commit := range []bool{true, false} {
		got, ok := controlCommit(controlBatch(t, 0, 7, commit))
		if !ok || got != commit {
			t.Fatalf("commit %v read as %v %v", commit, got, ok)
		}
	}
	cb := controlBatch(t, 0, 7, true)
	for n := 0; n < len(cb); n++ {
		controlCommit(cb[:n]) // truncated: no panic
	}
	if _, ok := controlCommit(txnCommitBatch(t, 0, 7, "g", 1)); ok {
		t.Fatal("a data batch read as a marker")
	}
}

// The replay of a __consumer_offsets log: transactional commits wait for
// their producer's marker; a commit applies them, an abort drops them;
// what has no marker yet stays pending.
func TestTxnReplayFollowsMarkers(t *testing.T) {
	table := map[string]map[topicPartition]offsetEntry{}
	var r txnReplay
	log := [][]byte{
		txnCommitBatch(t, 0, 1, "committed", 10),
		txnCommitBatch(t, 1, 2, "aborted", 20),
		txnCommitBatch(t, 2, 3, "open", 30),
		controlBatch(t, 3, 1, true),
		controlBatch(t, 4, 2, false),
	}
	for _, b := range log {
		h := recordbatch.ReadHeader(b)
		done, err := r.batch(h, b, 0, 0, table)
		if err != nil || !done {
			t.Fatalf("batch at %d: %v %v", h.BaseOffset, done, err)
		}
	}
	if e := table["committed"][topicPartition{"in", 0}]; e.offset != 10 {
		t.Fatalf("committed: %+v", table["committed"])
	}
	if len(table["aborted"]) != 0 || len(table["open"]) != 0 {
		t.Fatalf("table %+v", table)
	}
	pending := r.pending()
	if len(pending) != 1 || pending["open"][txnKey{3, 0}][topicPartition{"in", 0}].offset != 30 {
		t.Fatalf("pending %+v", pending)
	}
}

func FuzzControlCommit(f *testing.F) {
	f.Add(controlBatch(&testing.T{}, 0, 7, true))
	f.Add(make([]byte, recordbatch.HeaderSize+1))
	f.Fuzz(func(t *testing.T, batch []byte) {
		controlCommit(batch) // must not panic on any input
	})
}

// A plain commit written after a transactional one of the same partition
// wins, though the transaction's marker comes later (Kafka's order).
func TestTxnCommitYieldsToLaterPlainCommit(t *testing.T) {
	var bld records.Builder
	bld.Add(records.Record{Key: offsetKey("g", topicPartition{"in", 0}),
		Value: offsetValue(offsetEntry{offset: 20, leaderEpoch: -1, commitTime: 1}), Timestamp: 1})
	plain, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recordbatch.SetBaseOffset(plain, 1)
	table := map[string]map[topicPartition]offsetEntry{}
	var r txnReplay
	for _, b := range [][]byte{txnCommitBatch(t, 0, 1, "g", 10), plain, controlBatch(t, 2, 1, true)} {
		h := recordbatch.ReadHeader(b)
		done, err := r.batch(h, b, 0, 0, table)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			if err := records.Decode(b, 0, 0, func(rec records.Record) bool { applyOffsetRecord(table, rec); return true }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := table["g"][topicPartition{"in", 0}].offset; got != 20 {
		t.Fatalf("replayed offset %d, want the later plain commit's 20", got)
	}
	live := map[topicPartition]offsetEntry{{"in", 0}: {offset: 20, logOffset: 1}}
	materialize(live, topicPartition{"in", 0}, offsetEntry{offset: 10, logOffset: 0})
	materialize(live, topicPartition{"in", 1}, offsetEntry{offset: 5, logOffset: 3})
	if live[topicPartition{"in", 0}].offset != 20 || live[topicPartition{"in", 1}].offset != 5 {
		t.Fatalf("live %+v", live)
	}
}

// A transaction.version 2 producer's transactions each have their own
// epoch, and the next one may commit offsets before the previous one's
// marker is told here: a marker saying the epoch of the data it ends
// decides that epoch's commits only; one that does not decides all the
// producer's.
func TestTxnMarkerDecidesItsOwnEpochsCommits(t *testing.T) {
	in0, in1 := topicPartition{"in", 0}, topicPartition{"in", 1}
	g := &group{offsets: map[topicPartition]offsetEntry{}}
	g.holdTxnOffsets(txnKey{7, 4}, map[topicPartition]offsetEntry{in0: {offset: 10, logOffset: 0}})
	g.holdTxnOffsets(txnKey{7, 5}, map[topicPartition]offsetEntry{in0: {offset: 20, logOffset: 2}, in1: {offset: 5, logOffset: 2}})
	g.holdTxnOffsets(txnKey{8, 4}, map[topicPartition]offsetEntry{in1: {offset: 99, logOffset: 3}})

	g.decideTxnOffsets(7, 4, true, true)
	if g.offsets[in0].offset != 10 || len(g.offsets) != 1 {
		t.Fatalf("after epoch 4's commit: offsets %+v, want in-0 at 10 only", g.offsets)
	}
	if _, ok := g.txnOffsets[txnKey{7, 5}]; !ok || len(g.txnOffsets) != 2 {
		t.Fatalf("after epoch 4's commit: pending %+v, want epoch 5's and producer 8's", g.txnOffsets)
	}
	g.decideTxnOffsets(7, 4, true, true) // told again: nothing left
	g.decideTxnOffsets(7, 5, true, false)
	if g.offsets[in0].offset != 10 || len(g.offsets) != 1 || len(g.txnOffsets) != 1 {
		t.Fatalf("after epoch 5's abort: offsets %+v pending %+v", g.offsets, g.txnOffsets)
	}

	g.holdTxnOffsets(txnKey{7, 6}, map[topicPartition]offsetEntry{in0: {offset: 30, logOffset: 5}})
	g.holdTxnOffsets(txnKey{7, 7}, map[topicPartition]offsetEntry{in0: {offset: 40, logOffset: 7}})
	g.decideTxnOffsets(7, 0, false, true)
	if g.offsets[in0].offset != 40 || len(g.txnOffsets) != 1 {
		t.Fatalf("after a commit of unknown epoch: offsets %+v pending %+v; want in-0 at the later 40, producer 8 pending",
			g.offsets, g.txnOffsets)
	}
	if _, ok := g.txnOffsets[txnKey{8, 4}]; !ok {
		t.Fatalf("another producer's commits decided: %+v", g.txnOffsets)
	}
}

// The replay of a log where the producer's next transaction (epoch e+1)
// committed offsets after the previous one's marker: the previous one's
// offsets are the group's, the next one's pending under (pid, e+1), where
// the next marker, saying epoch e+1, finds them.
func TestTxnReplayKeysPendingCommitsByEpoch(t *testing.T) {
	table := map[string]map[topicPartition]offsetEntry{}
	var r txnReplay
	for _, b := range [][]byte{
		txnCommitBatchAt(t, 0, 7, 4, "g", 10),
		controlBatchAt(t, 1, 7, 5, true),
		txnCommitBatchAt(t, 2, 7, 5, "g", 20),
	} {
		h := recordbatch.ReadHeader(b)
		if done, err := r.batch(h, b, 0, 0, table); err != nil || !done {
			t.Fatalf("batch at %d: %v %v", h.BaseOffset, done, err)
		}
	}
	if e := table["g"][topicPartition{"in", 0}]; e.offset != 10 {
		t.Fatalf("replayed offset %+v, want epoch 4's 10", table["g"])
	}
	pending := r.pending()
	if got := pending["g"][txnKey{7, 5}][topicPartition{"in", 0}]; len(pending["g"]) != 1 || got.offset != 20 {
		t.Fatalf("pending %+v, want epoch 5's 20 under producer 7 epoch 5", pending)
	}
}

// txnCommit writes a transactional offset commit of producer 7 at epoch
// (TxnOffsetCommit v3).
func (e *testEnv) txnCommit(group string, epoch int16, offset int64) {
	e.t.Helper()
	if code := e.txnCommitCode(context.Background(), 3, group, epoch, offset); code != errNone {
		e.t.Fatalf("TxnOffsetCommit at epoch %d: error %d", epoch, code)
	}
}

func (e *testEnv) txnCommitCode(ctx context.Context, version int16, group string, epoch int16, offset int64) int16 {
	e.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = version, "tx", group, 7, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return e.c.HandleTxnOffsetCommit(ctx, req).Topics[0].Partitions[0].ErrorCode
}

// newMarkerEnv is a broker and group coordinator told of the transaction
// markers written, with the topic "orders" the transactional commits
// (txnCommitCode) name, the group "billing" and its __consumer_offsets
// partition.
func newMarkerEnv(t *testing.T) (e *testEnv, group string, part int32) {
	t.Helper()
	e = newTestEnv(t)
	e.createTopic("orders", 1)
	e.broker.AddTxnMarkerListener(e.c)
	return e, "billing", e.c.offsetsPartition("billing")
}

// offsetsMarker is the marker of producer 7 (txnCommitCode's) at epoch on
// part, ending the transaction of dataEpoch (transaction.version 2).
func offsetsMarker(part int32, epoch, dataEpoch int16, commit bool) server.TxnMarker {
	return server.TxnMarker{ProducerID: 7, ProducerEpoch: epoch, Commit: commit, Topic: OffsetsTopic, Partition: part,
		TxnEpoch: dataEpoch, HasTxnEpoch: true}
}

// instantAdder is a transaction.version 2 coordinator answering every
// add at once, as one answering ahead of the previous markers does.
type instantAdder struct{}

func (instantAdder) VerifyTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return 0
}
func (instantAdder) AddTxnPartition(context.Context, string, int64, int16, string, int32) int16 {
	return 0
}

// The group's transactional commits open the producer's transaction in
// the __consumer_offsets partition's producer state, as a client's
// batches do: a TxnOffsetCommit v5 of the producer's next transaction
// (epoch 1), added ahead of the previous transaction's marker, is not
// written before that marker, which would otherwise end it in the log;
// and a commit of an older epoch than the partition's is refused as a
// fenced producer's.
func TestNextTransactionsCommitWaitsForThePreviousMarker(t *testing.T) {
	e, name, part := newMarkerEnv(t)
	e.c.SetTxnVerifier(instantAdder{})
	p, err := e.broker.Partition(OffsetsTopic, part)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if code := e.txnCommitCode(ctx, 5, name, 0, 10); code != errNone {
		t.Fatalf("N's commit: error %d", code)
	}
	end := p.LogEndOffset()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if code := e.txnCommitCode(short, 5, name, 1, 20); code == errNone {
		t.Fatal("N+1's commit was written before N's marker")
	}
	if p.LogEndOffset() != end {
		t.Fatalf("log end %d, was %d: N+1's commit written before N's marker", p.LogEndOffset(), end)
	}
	if errs := e.broker.WriteTxnMarkers(ctx, []server.TxnMarker{offsetsMarker(part, 1, 0, true)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if code := e.txnCommitCode(ctx, 5, name, 1, 20); code != errNone {
		t.Fatalf("N+1's commit after N's marker: error %d", code)
	}
	if lso := p.LastStableOffset(); lso != end+1 {
		t.Fatalf("LSO %d, want %d: N+1's commit holds it", lso, end+1)
	}
	if got, pending := e.fetchV1(name, "orders", 0)[0], e.c.PendingTxnOffsets(name); got != 10 || pending[7] != 1 {
		t.Fatalf("committed %d, pending %v; want 10 and N+1's pending", got, pending)
	}
	e.c.SetTxnVerifier(nil)
	if code := e.txnCommitCode(ctx, 3, name, 0, 30); code != errInvalidProducerEpoch {
		t.Fatalf("a commit of the fenced epoch 0: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
}

// The exactly-once hole of markers written ahead of the next transaction
// (transaction.version 2), end to end on a broker with its group
// coordinator: transaction N (epoch 0) commits offset 10; its marker is
// appended but its acks=all wait fails, so the coordinator is not told;
// transaction N+1 (epoch 1) commits offset 20 on the same partition; the
// transaction coordinator resends N's marker, which appends nothing there
// now. The resend must decide N's commit, and only it: offset 10 is
// committed, N+1's 20 stays pending until its own marker (an abort here),
// and a coordinator loading the log in between sees the same.
func TestResentMarkerDecidesOnlyItsTransactionsOffsets(t *testing.T) {
	e, name, part := newMarkerEnv(t)
	ctx := context.Background()
	logEnd := func() int64 {
		p, err := e.broker.Partition(OffsetsTopic, part)
		if err != nil {
			t.Fatal(err)
		}
		return p.LogEndOffset()
	}
	committed := func() int64 { return e.fetchV1(name, "orders", 0)[0] }

	e.txnCommit(name, 0, 10)
	// N's marker: in the log, its wait failed, nobody told (the append
	// WriteTxnMarkers does, without its wait and listeners).
	p, err := e.broker.Partition(OffsetsTopic, part)
	if err != nil {
		t.Fatal(err)
	}
	n := offsetsMarker(part, 1, 0, true)
	if _, appended, err := p.(*replication.Replica).AppendTxnMarkerEnding(n.ProducerID, n.ProducerEpoch, n.TxnEpoch,
		recordbatch.EndTxnMarker{Commit: true}, storage.AppendOptions{}); err != nil || !appended {
		t.Fatalf("N's marker: appended %v, %v", appended, err)
	}
	if got := committed(); got != -1 {
		t.Fatalf("committed %d before any marker was told", got)
	}
	e.txnCommit(name, 1, 20)
	end := logEnd()
	if errs := e.broker.WriteTxnMarkers(ctx, []server.TxnMarker{n}); errs[0] != nil {
		t.Fatalf("N's marker resent: %v", errs[0])
	}
	if logEnd() != end {
		t.Fatalf("the resent marker was appended again (log end %d, was %d)", logEnd(), end)
	}
	if got, pending := committed(), e.c.PendingTxnOffsets(name); got != 10 || pending[7] != 1 {
		t.Fatalf("after N's resent marker: committed %d, pending %v; want N's 10 committed and N+1's one commit pending", got, pending)
	}

	// A coordinator loading the log now: N's offsets committed, N+1's
	// pending under epoch 1, which N+1's marker then decides.
	e.close()
	e.open()
	e.broker.AddTxnMarkerListener(e.c)
	harness.WaitFor(t, "the coordinator serves the group", 10*time.Second, func() bool { return e.c.serves(name) == errNone })
	if got, pending := committed(), e.c.PendingTxnOffsets(name); got != 10 || pending[7] != 1 {
		t.Fatalf("after a reload: committed %d, pending %v; want 10 and one pending", got, pending)
	}
	if errs := e.broker.WriteTxnMarkers(ctx, []server.TxnMarker{offsetsMarker(part, 2, 1, false)}); errs[0] != nil {
		t.Fatalf("N+1's abort: %v", errs[0])
	}
	if got, pending := committed(), e.c.PendingTxnOffsets(name); got != 10 || len(pending) != 0 {
		t.Fatalf("after N+1's abort: committed %d, pending %v; want 10 and none", got, pending)
	}
}

// A marker the broker writes while the coordinator loads the group's
// partition, after the load has read the log and before its groups are
// installed, is told to no group; the install must still decide the
// commits it ends. Before, such a commit stayed pending for good: every
// stable OffsetFetch of its partition answered UNSTABLE_OFFSET_COMMIT, so
// no exactly-once consumer (require_stable, KIP-447) assigned that
// partition after a rebalance could start on it.
func TestMarkerWrittenWhileLoadingDecidesItsCommits(t *testing.T) {
	e, name, part := newMarkerEnv(t)
	e.txnCommit(name, 0, 10)
	loaded, own := e.loadThenMark(part)
	if e.c.lockGroup(name, false) != nil {
		t.Fatal("the group was served before its partition was installed")
	}
	// ... and the partition is installed.
	if after, err := e.c.installLoaded(part, own, loaded, 0); err != nil {
		t.Fatal(err)
	} else if after != nil {
		after()
	}

	if got, pending := e.fetchV1(name, "orders", 0)[0], e.c.PendingTxnOffsets(name); got != 10 || len(pending) != 0 {
		t.Fatalf("committed %d, pending %v; want the marker's 10 committed and nothing pending", got, pending)
	}
	code, topics := e.c.fetchOffsets(name, []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}, true)
	if code != errNone || topics[0].Partitions[0].ErrorCode != errNone || topics[0].Partitions[0].Offset != 10 {
		t.Fatalf("stable offset fetch: error %d, partition %+v; want offset 10", code, topics[0].Partitions[0])
	}
}

// When the install cannot read what was appended while its partition
// loaded, it serves nothing: serving what the load read would leave the
// commit whose marker landed in the unread part pending for good. The
// next load, read from the start, decides it.
func TestInstallThatCannotReadOnServesNothing(t *testing.T) {
	e, name, part := newMarkerEnv(t)
	e.txnCommit(name, 0, 10)
	loaded, own := e.loadThenMark(part)
	e.c.readTail = func(int32, *loadedPartition) error { return errors.New("read error") }
	if after, err := e.c.installLoaded(part, own, loaded, 0); err == nil || after != nil {
		t.Fatalf("install with its read failing: %v; want an error and nothing to run after", err)
	}
	if e.c.lockGroup(name, false) != nil {
		t.Fatal("the group is served though its partition's install failed")
	}

	// The Table loads the partition again, from its start.
	e.c.readTail = nil
	again := newLoadedPartition(false)
	if err := e.c.readPartition(part, again); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.installLoaded(part, own, again, 0); err != nil {
		t.Fatal(err)
	}
	e.checkOffsets("installed from a second load", name, 10, 0)
}

// loadThenMark is a new leader's load of part whose read of the log ends
// before producer 7's commit marker lands there, told to no group (the
// partition is not installed): what the load read, and the partition's
// ownership to install it with.
func (e *testEnv) loadThenMark(part int32) (*loadedPartition, ownership.Owned) {
	e.t.Helper()
	e.c.unloadPartition(part)
	loaded := newLoadedPartition(false)
	if err := e.c.readPartition(part, loaded); err != nil {
		e.t.Fatal(err)
	}
	if errs := e.broker.WriteTxnMarkers(context.Background(), []server.TxnMarker{offsetsMarker(part, 1, 0, true)}); errs[0] != nil {
		e.t.Fatal(errs[0])
	}
	own, ok := e.c.own.Get(part)
	if !ok {
		e.t.Fatal("the coordinator does not lead the group's partition")
	}
	return loaded, own
}

// A marker decides the commits of the groups on its own __consumer_offsets
// partition only: a transaction that committed for two groups on two
// partitions has each decided by that partition's marker.
func TestMarkerDecidesOnlyTheGroupsOfItsPartition(t *testing.T) {
	e, name, part := newMarkerEnv(t)
	other := ""
	for i := 0; other == ""; i++ {
		if candidate := fmt.Sprintf("audit-%d", i); e.c.offsetsPartition(candidate) != part {
			other = candidate
		}
	}
	e.txnCommit(name, 0, 10)
	e.txnCommit(other, 0, 20)
	ctx := context.Background()
	if errs := e.broker.WriteTxnMarkers(ctx, []server.TxnMarker{offsetsMarker(part, 1, 0, true)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	e.checkOffsets("after its partition's marker", name, 10, 0)
	e.checkOffsets("on another partition", other, -1, 1)
	if errs := e.broker.WriteTxnMarkers(ctx, []server.TxnMarker{offsetsMarker(e.c.offsetsPartition(other), 1, 0, true)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	e.checkOffsets("after its partition's marker", other, 20, 0)
}

// checkOffsets fails the test unless group's committed offset of orders-0
// is committed, with pending transactions of producer 7 (txnCommitCode's)
// holding commits, and none of any producer when pending is 0.
func (e *testEnv) checkOffsets(when, group string, committed int64, pending int) {
	e.t.Helper()
	got, held := e.fetchV1(group, "orders", 0)[0], e.c.PendingTxnOffsets(group)
	if got != committed || held[7] != pending || pending == 0 && len(held) != 0 {
		e.t.Fatalf("%s, %s: committed %d, pending %v; want %d and %d of producer 7 pending", group, when, got, held, committed, pending)
	}
}
