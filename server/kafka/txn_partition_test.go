package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
	"github.com/ferry-mq/ferry/test/harness"
)

// The partition leaders' side of transactions, driven as the coordinator
// would drive it (the coordinator is not this file's): transactional
// batches produced with a raw Produce request, markers written with a raw
// WriteTxnMarkers request, then read by franz-go consumers at both
// isolation levels and by ListOffsets.

// txnBatchOf builds a transactional batch of values from producer id.
func txnBatchOf(t *testing.T, id int64, epoch int16, seq int32, values ...string) []byte {
	t.Helper()
	b := batch(t, records.BatchOptions{ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq}, values...)
	h := recordbatch.ReadHeader(b)
	h.Attributes |= recordbatch.AttrTransactional
	h.Put(b)
	return b
}

func produceTxnBatch(t *testing.T, c *client, txnID, topic string, data []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceReq(topic, 0, -1, data)
	req.TransactionID = kmsg.StringPtr(txnID)
	return do[*kmsg.ProduceResponse](c, req, 9).Topics[0].Partitions[0]
}

func writeMarker(t *testing.T, c *client, topic string, id int64, epoch int16, commit bool, coordEpoch int32) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = id, epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := do[*kmsg.WriteTxnMarkersResponse](c, req, 1)
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

func listLatest(t *testing.T, c *client, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := do[*kmsg.ListOffsetsResponse](c, req, 5).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets: error %d", p.ErrorCode)
	}
	return p.Offset
}

// consumeUntil reads topic from the start at an isolation level until it
// has seen last, and returns every value in order.
func consumeUntil(t *testing.T, addr, topic string, level kgo.IsolationLevel, last string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for !slices.Contains(got, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v, never %q", got, last)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

type markerLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *markerLog) TxnMarkerWritten(topic string, partition int32, producerID int64, _ int16, _, commit bool, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	what := "abort"
	if commit {
		what = "commit"
	}
	l.seen = append(l.seen, topic+" "+what+" "+string(rune('0'+producerID/100))+" @"+string(rune('0'+offset)))
}

func TestTxnReadCommittedVersusUncommitted(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	markers := &markerLog{}
	ts.broker.AddTxnMarkerListener(markers)

	mustOffset := func(p kmsg.ProduceResponseTopicPartition, want int64) {
		t.Helper()
		if p.ErrorCode != 0 || p.BaseOffset != want {
			t.Fatalf("produce: error %d offset %d, want offset %d", p.ErrorCode, p.BaseOffset, want)
		}
	}
	mustOffset(produceOne(c, 9, "tx", batch(t, records.BatchOptions{}, "p0")), 0)
	mustOffset(produceTxnBatch(t, c, "t1", "tx", txnBatchOf(t, 100, 0, 0, "a1", "a2")), 1)
	mustOffset(produceTxnBatch(t, c, "t2", "tx", txnBatchOf(t, 200, 0, 0, "c1")), 3)
	if code := writeMarker(t, c, "tx", 100, 0, false, 0); code != 0 { // offset 4
		t.Fatalf("abort marker: error %d", code)
	}
	if code := writeMarker(t, c, "tx", 200, 0, true, 0); code != 0 { // offset 5
		t.Fatalf("commit marker: error %d", code)
	}
	mustOffset(produceTxnBatch(t, c, "t3", "tx", txnBatchOf(t, 300, 0, 0, "o1")), 6) // stays open for now
	mustOffset(produceOne(c, 9, "tx", batch(t, records.BatchOptions{}, "p1")), 7)

	// A raw read_committed fetch: up to the LSO, with the abort listed.
	req := fetchReq("tx", 0, 0, 0, 0)
	req.IsolationLevel = 1
	p := do[*kmsg.FetchResponse](c, req, 11).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 8 || p.LastStableOffset != 6 {
		t.Fatalf("read_committed fetch: error %d, high watermark %d, LSO %d; want 8 and 6", p.ErrorCode, p.HighWatermark, p.LastStableOffset)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 100 || p.AbortedTransactions[0].FirstOffset != 1 {
		t.Fatalf("aborted transactions %+v, want producer 100 from 1", p.AbortedTransactions)
	}
	req.IsolationLevel = 0
	p = do[*kmsg.FetchResponse](c, req, 11).Topics[0].Partitions[0]
	if p.LastStableOffset != 6 || p.AbortedTransactions != nil || len(fetchValues(t, p, 0)) != 6 {
		t.Fatalf("read_uncommitted fetch: LSO %d, aborted %v, values %v", p.LastStableOffset, p.AbortedTransactions, fetchValues(t, p, 0))
	}
	if got := listLatest(t, c, "tx", 1); got != 6 {
		t.Fatalf("ListOffsets latest, read_committed: %d, want the LSO 6", got)
	}
	if got := listLatest(t, c, "tx", 0); got != 8 {
		t.Fatalf("ListOffsets latest, read_uncommitted: %d, want 8", got)
	}

	// DescribeProducers shows the open transaction.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "tx", []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dp := do[*kmsg.DescribeProducersResponse](c, dreq, 0).Topics[0].Partitions[0]
	open := map[int64]int64{}
	for _, ap := range dp.ActiveProducers {
		open[ap.ProducerID] = ap.CurrentTxnStartOffset
	}
	if open[300] != 6 || open[100] != -1 || open[200] != -1 {
		t.Fatalf("DescribeProducers: transaction starts %v", open)
	}

	// A non-transactional batch inside producer 300's transaction.
	idem := produceOne(c, 9, "tx", batch(t, records.BatchOptions{ProducerID: 300, BaseSequence: 1}, "x"))
	if idem.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("idempotent batch inside a transaction: error %d, want INVALID_TXN_STATE", idem.ErrorCode)
	}

	if code := writeMarker(t, c, "tx", 300, 0, true, 0); code != 0 { // offset 8
		t.Fatalf("commit marker: error %d", code)
	}
	committed := consumeUntil(t, ts.addr, "tx", kgo.ReadCommitted(), "p1")
	if want := []string{"p0", "c1", "o1", "p1"}; !slices.Equal(committed, want) {
		t.Fatalf("read_committed consumer read %v, want %v", committed, want)
	}
	all := consumeUntil(t, ts.addr, "tx", kgo.ReadUncommitted(), "p1")
	if want := []string{"p0", "a1", "a2", "c1", "o1", "p1"}; !slices.Equal(all, want) {
		t.Fatalf("read_uncommitted consumer read %v, want %v", all, want)
	}
	markers.mu.Lock()
	defer markers.mu.Unlock()
	if want := []string{"tx abort 1 @4", "tx commit 2 @5", "tx commit 3 @8"}; !slices.Equal(markers.seen, want) {
		t.Fatalf("marker listener saw %v, want %v", markers.seen, want)
	}
}

func TestWriteTxnMarkersErrors(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	if p := produceTxnBatch(t, c, "t1", "tx", txnBatchOf(t, 100, 3, 0, "a")); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	if code := writeMarker(t, c, "tx", 100, 2, true, 0); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker of an older producer epoch: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if code := writeMarker(t, c, "tx", 100, 3, true, 5); code != 0 {
		t.Fatalf("marker: error %d", code)
	}
	if code := writeMarker(t, c, "tx", 100, 3, false, 4); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker of an older coordinator epoch: error %d, want TRANSACTION_COORDINATOR_FENCED", code)
	}
	if code := writeMarker(t, c, "nope", 100, 3, true, 5); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker to an unknown topic: error %d", code)
	}
	// Only the accepted marker was written: the batch and one marker.
	if end := listLatest(t, c, "tx", 0); end != 2 {
		t.Fatalf("log end %d after the refused markers, want 2", end)
	}
	// A transactional batch without a producer id is refused.
	b := txnBatchOf(t, 0, 0, 0, "x") // ProducerID 0 writes -1
	if p := produceTxnBatch(t, c, "t1", "tx", b); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("transactional batch without a producer id: error %d", p.ErrorCode)
	}
}

// A WriteTxnMarkers entry with ferry's probe tag writes nothing and
// answers, per partition, CONCURRENT_TRANSACTIONS while the producer has
// a transaction open there, 0 when not; a partition not here answers as
// for a marker.
func TestWriteTxnMarkersProbe(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	probe := func(topic string, id int64) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch = id, 3
		m.UnknownTags.Set(server.TxnProbeTag, []byte{})
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return do[*kmsg.WriteTxnMarkersResponse](c, req, 1).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := probe("tx", 100); code != 0 {
		t.Fatalf("probe with nothing open: error %d", code)
	}
	if p := produceTxnBatch(t, c, "t1", "tx", txnBatchOf(t, 100, 3, 0, "a")); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	if code := probe("tx", 100); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("probe of an open transaction: error %d, want CONCURRENT_TRANSACTIONS", code)
	}
	if code := probe("tx", 200); code != 0 {
		t.Fatalf("probe of another producer: error %d", code)
	}
	if code := probe("nope", 100); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("probe of an unknown topic: error %d", code)
	}
	// A broker that does not know the tag reads the entry as a marker:
	// at the probe's epochs (-1) it is refused, and ends nothing.
	if code := writeMarker(t, c, "tx", 100, -1, false, -1); code == 0 {
		t.Fatal("a marker at epoch -1 (an untagged probe) was written")
	}
	if end := listLatest(t, c, "tx", 0); end != 1 {
		t.Fatalf("log end %d after the probes, want 1 (the batch alone)", end)
	}
}

// verifierFunc adapts a function to server.TxnVerifier.
type verifierFunc func(txnID string, id int64, epoch int16, topic string, partition int32) int16

func (f verifierFunc) VerifyTxnPartition(_ context.Context, txnID string, id int64, epoch int16, topic string, partition int32) int16 {
	return f(txnID, id, epoch, topic, partition)
}

// KIP-890 part 1: the batch that would open a producer's transaction on
// a partition is verified with the coordinator; its refusal is the
// produce's answer and writes nothing; later batches of the open
// transaction are not verified again.
func TestTxnProduceIsVerified(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	var mu sync.Mutex
	var asked []string
	ts.broker.SetTxnVerifier(verifierFunc(func(txnID string, id int64, epoch int16, topic string, partition int32) int16 {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, txnID)
		if txnID == "late" {
			return kerr.InvalidTxnState.Code
		}
		return 0
	}))
	if p := produceTxnBatch(t, c, "late", "tx", txnBatchOf(t, 100, 0, 0, "a")); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("refused by the coordinator: error %d, want INVALID_TXN_STATE", p.ErrorCode)
	}
	if p := produceTxnBatch(t, c, "ok", "tx", txnBatchOf(t, 200, 0, 0, "b")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("verified batch: error %d offset %d (the refused one must have written nothing)", p.ErrorCode, p.BaseOffset)
	}
	if p := produceTxnBatch(t, c, "ok", "tx", txnBatchOf(t, 200, 0, 1, "c")); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("second batch: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(asked, []string{"late", "ok"}) {
		t.Fatalf("verifier asked for %v, want [late ok]", asked)
	}
}

// A coordinator that answers the verification PRODUCER_FENCED (a newer
// producer took the transactional id) makes the produce's answer
// INVALID_PRODUCER_EPOCH, as Kafka's AddPartitionsToTxnManager does:
// librdkafka knows a fenced producer on a produce by that code alone and
// takes PRODUCER_FENCED there for an abortable error, so the zombie went
// on to a new transaction (librdkafka's own test 0103, do_test_fenced_txn).
// Nothing is written.
func TestFencedTxnProduceAnswersInvalidProducerEpoch(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tx", 1)
	ts.broker.SetTxnVerifier(verifierFunc(func(txnID string, id int64, epoch int16, topic string, partition int32) int16 {
		if epoch == 0 {
			return kerr.ProducerFenced.Code
		}
		return 0
	}))
	if p := produceTxnBatch(t, c, "zombie", "tx", txnBatchOf(t, 100, 0, 0, "late")); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced producer's batch: error %d, want INVALID_PRODUCER_EPOCH (%d)", p.ErrorCode, kerr.InvalidProducerEpoch.Code)
	}
	if p := produceTxnBatch(t, c, "zombie", "tx", txnBatchOf(t, 100, 1, 0, "new")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("the new epoch's batch: error %d offset %d (the fenced one must have written nothing)", p.ErrorCode, p.BaseOffset)
	}
}

// Markers may go to __consumer_offsets (transactional offset commits end
// there), and the group coordinator still loads that partition after a
// restart, the markers skipped.
func TestWriteTxnMarkersToConsumerOffsets(t *testing.T) {
	ts := newTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "t", 1)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	commit.Generation = -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 42
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if code := do[*kmsg.OffsetCommitResponse](c, commit, 8).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("offset commit: %d", code)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.Committed = 5, true
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic = "__consumer_offsets"
	for p := range int32(50) {
		mt.Partitions = append(mt.Partitions, p)
	}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	for _, rp := range do[*kmsg.WriteTxnMarkersResponse](c, req, 1).Markers[0].Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("marker on __consumer_offsets-%d: error %d", rp.Partition, rp.ErrorCode)
		}
	}
	ts.restart(t)
	c = ts.dial(t)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	if got := do[*kmsg.OffsetFetchResponse](c, fetch, 5).Topics[0].Partitions[0]; got.Offset != 42 {
		t.Fatalf("committed offset after the restart: %+v", got)
	}
}

// A read_committed fetch at the last stable offset, held back by an open
// transaction, waits for the transaction to end, however far the high
// watermark is: it used to be answered at once, empty, because its wait
// counted the records below the high watermark, and a consumer asked
// again at once for as long as the transaction stayed open (each of
// Flink's checkpoint intervals). On a single node the commit's marker
// moves the high watermark and the last stable offset in one append, and
// the parked fetch is answered with the committed records.
func TestReadCommittedFetchWaitsForTheTransactionToEnd(t *testing.T) {
	ts := newTestServer(t)
	c, reader := ts.dial(t), ts.dial(t)
	createTopic(t, ts, "rc", 1)
	if p := produceTxnBatch(t, c, "t1", "rc", txnBatchOf(t, 1000, 0, 0, "a", "b")); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	req := fetchReq("rc", 0, 0, 60000, 1)
	req.IsolationLevel = 1
	corr := reader.send(withVersion(req, 11))
	harness.WaitFor(t, "the read_committed fetch to park", 10*time.Second, func() bool { return ts.broker.WaitingFetches("rc", 0) == 1 })
	if code := writeMarker(t, c, "rc", 1000, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: %d", code)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	reader.recv(corr, resp)
	p := resp.Topics[0].Partitions[0]
	if got := fetchValues(t, p, 0); p.ErrorCode != 0 || p.LastStableOffset != 3 || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after the commit: error %d, last stable offset %d, values %q", p.ErrorCode, p.LastStableOffset, got)
	}
}
