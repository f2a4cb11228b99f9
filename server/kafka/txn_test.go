package kafka

import (
	"context"
	"github.com/ferry-mq/ferry/server/features"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/txn"
	"github.com/ferry-mq/ferry/test/harness"
)

// markerSink records every marker the coordinator sends and writes it
// with the broker's WriteTxnMarkers once the partition side provides it
// (txnlog's branch). Until then it stands in for it: it tells the group
// coordinator of __consumer_offsets markers, as the broker's marker
// listener will.
type markerSink struct {
	mu      sync.Mutex
	ts      *testServer
	written []server.TxnMarker
}

func (m *markerSink) WriteTxnMarkers(ctx context.Context, ms []server.TxnMarker) []error {
	m.mu.Lock()
	m.written = append(m.written, ms...)
	m.mu.Unlock()
	if real, ok := partitionSide(m.ts.broker); ok {
		return real.WriteTxnMarkers(ctx, ms)
	}
	for _, mk := range ms {
		dataEpoch, known := mk.DataEpoch()
		m.ts.groups.TxnMarkerWritten(mk.Topic, mk.Partition, mk.ProducerID, dataEpoch, known, mk.Commit, -1)
	}
	return make([]error, len(ms))
}

// partitionSide is the broker's marker writer, when it has one.
func partitionSide(b *server.Broker) (txn.MarkerWriter, bool) {
	mw, ok := any(b).(txn.MarkerWriter)
	return mw, ok
}

// wirePartitionSide connects the coordinators to the broker's partition
// side as cmd/ferry's serve does, when the broker has it.
func wirePartitionSide(b *server.Broker, g *group.Coordinator, tc *txn.Coordinator) {
	g.SetTxnVerifier(&txn.Verifier{Coordinator: tc})
	if l, ok := any(b).(interface {
		AddTxnMarkerListener(server.TxnMarkerListener)
	}); ok {
		l.AddTxnMarkerListener(g)
	}
	if v, ok := any(b).(interface{ SetTxnVerifier(server.TxnVerifier) }); ok {
		v.SetTxnVerifier(&txn.Verifier{Coordinator: tc})
	}
}

func (m *markerSink) markers() []server.TxnMarker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]server.TxnMarker(nil), m.written...)
}

func newTxnTestServer(t *testing.T, mutate ...func(*Config)) (*testServer, *markerSink) {
	t.Helper()
	return newTxnTestServerTuned(t, nil, mutate...)
}

func newTxnTestServerTuned(t *testing.T, tune func(*txn.Config), mutate ...func(*Config)) (*testServer, *markerSink) {
	t.Helper()
	sink := &markerSink{}
	// The group coordinator names itself by the advertised address (the
	// listener then answers its own endpoint): one must be set.
	ts := &testServer{cfg: server.Config{DataDir: t.TempDir(), AutoCreateTopics: true, AdvertisedKafkaAddr: "127.0.0.1:9092"},
		txnMarkers: sink, txnTune: tune}
	sink.ts = ts
	startTestServer(t, ts, mutate...)
	return ts, sink
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

func expectCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %s, want %s", what, codeName(got), codeName(want))
	}
}

func initTxnReq(id string, timeoutMs int32) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	return req
}

func addPartitionsReq(id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	return req
}

func endTxnReq(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return req
}

func describeTxn(c *client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return do[*kmsg.DescribeTransactionsResponse](c, req, 0).TransactionStates[0]
}

// startTxn runs InitProducerId for id and returns the producer.
func startTxn(t *testing.T, c *client, id string) (int64, int16) {
	t.Helper()
	resp := do[*kmsg.InitProducerIDResponse](c, initTxnReq(id, 60000), 4)
	expectCode(t, "init "+id, resp.ErrorCode, 0)
	return resp.ProducerID, resp.ProducerEpoch
}

// The transaction APIs are Kafka 4's ranges (3.9's but EndTxn and
// TxnOffsetCommit v5, KIP-890 part 2) at transaction.version 1 too.
func TestTxnApisAdvertisedWithCoordinator(t *testing.T) {
	ts, _ := newTxnTestServerTuned(t, nil, func(c *Config) {
		c.Features = features.NewFixed(map[string]int16{features.TransactionVersion: 1})
	})
	resp := do[*kmsg.ApiVersionsResponse](ts.dial(t), kmsg.NewPtrApiVersionsRequest(), 3)
	want := map[int16][2]int16{24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 28: {0, 5}, 65: {0, 0}, 66: {0, 1}}
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Fatalf("%s: %d-%d, want %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) > 0 {
		t.Fatalf("not advertised: %v", want)
	}
}

func TestFindTransactionCoordinator(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = 1, "tx"
	resp := do[*kmsg.FindCoordinatorResponse](c, req, 3)
	expectCode(t, "v3", resp.ErrorCode, 0)
	if resp.NodeID != ts.broker.BrokerID() || resp.Port <= 0 {
		t.Fatalf("v3 answer %+v", resp)
	}
	req.CoordinatorKeys = []string{"tx", ""}
	resp = do[*kmsg.FindCoordinatorResponse](c, req, 4)
	if len(resp.Coordinators) != 2 || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].NodeID != ts.broker.BrokerID() ||
		resp.Coordinators[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v4 answer %+v", resp.Coordinators)
	}
}

func TestInitProducerIDTransactional(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	pid, epoch := startTxn(t, c, "tx")
	if pid < 1 || epoch != 0 {
		t.Fatalf("first producer %d/%d", pid, epoch)
	}
	again := do[*kmsg.InitProducerIDResponse](c, initTxnReq("tx", 60000), 4)
	if again.ProducerID != pid || again.ProducerEpoch != 1 {
		t.Fatalf("second init: %d/%d", again.ProducerID, again.ProducerEpoch)
	}
	expectCode(t, "timeout above transaction.max.timeout.ms",
		do[*kmsg.InitProducerIDResponse](c, initTxnReq("tx", int32(time.Hour/time.Millisecond)+1), 4).ErrorCode, kerr.InvalidTransactionTimeout.Code)
	expectCode(t, "empty transactional id", do[*kmsg.InitProducerIDResponse](c, initTxnReq("", 1000), 4).ErrorCode, 0) // empty means idempotent
	stale := initTxnReq("tx", 60000)
	stale.ProducerID, stale.ProducerEpoch = 999999, 0
	expectCode(t, "v4 with another producer's id", do[*kmsg.InitProducerIDResponse](c, stale, 4).ErrorCode, kerr.ProducerFenced.Code)
	expectCode(t, "v3 with another producer's id", do[*kmsg.InitProducerIDResponse](c, stale, 3).ErrorCode, kerr.InvalidProducerEpoch.Code)
	mine := initTxnReq("tx", 60000)
	mine.ProducerID, mine.ProducerEpoch = pid, 1
	if r := do[*kmsg.InitProducerIDResponse](c, mine, 4); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("KIP-360 bump: %+v", r)
	}
}

func TestInitProducerIDTransactionalWithoutCoordinator(t *testing.T) {
	ts := newTestServer(t)
	expectCode(t, "no coordinator", do[*kmsg.InitProducerIDResponse](ts.dial(t), initTxnReq("tx", 1000), 4).ErrorCode, codeInvalidRequest)
}

func TestAddPartitionsToTxnErrors(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tp", 2)
	pid, epoch := startTxn(t, c, "tx")

	req := addPartitionsReq("tx", pid, epoch, "tp", 0, 5)
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "no-such-topic", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := do[*kmsg.AddPartitionsToTxnResponse](c, req, 3)
	got := map[string][]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got[t.Topic] = append(got[t.Topic], p.ErrorCode)
		}
	}
	if got["tp"][0] != codeOperationNotAttempted || got["tp"][1] != codeUnknownTopicOrPart || got["no-such-topic"][0] != codeUnknownTopicOrPart {
		t.Fatalf("unknown partitions: %v", got)
	}
	if d := describeTxn(c, "tx"); d.State != "Empty" {
		t.Fatalf("a refused add changed the transaction: %+v", d)
	}
	fenced := addPartitionsReq("tx", pid, epoch+1, "tp", 0)
	expectCode(t, "v1 wrong epoch", do[*kmsg.AddPartitionsToTxnResponse](c, fenced, 1).Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
	expectCode(t, "v2 wrong epoch", do[*kmsg.AddPartitionsToTxnResponse](c, fenced, 2).Topics[0].Partitions[0].ErrorCode, kerr.ProducerFenced.Code)
	expectCode(t, "wrong producer id",
		do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("tx", pid+1, epoch, "tp", 0), 3).Topics[0].Partitions[0].ErrorCode,
		kerr.InvalidProducerIDMapping.Code)
	expectCode(t, "unknown transactional id",
		do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("nobody", pid, epoch, "tp", 0), 3).Topics[0].Partitions[0].ErrorCode,
		kerr.InvalidProducerIDMapping.Code)
	expectCode(t, "add", do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("tx", pid, epoch, "tp", 1), 3).Topics[0].Partitions[0].ErrorCode, 0)
	if d := describeTxn(c, "tx"); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Partitions[0] != 1 {
		t.Fatalf("after the add: %+v", d)
	}
}

// v4 verifyOnly (KIP-890) answers whether each partition is in the
// producer's transaction, writing nothing.
func TestAddPartitionsToTxnVerifyOnly(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tp", 2)
	pid, epoch := startTxn(t, c, "tx")
	expectCode(t, "add", do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("tx", pid, epoch, "tp", 0), 3).Topics[0].Partitions[0].ErrorCode, 0)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", pid, epoch, true
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = "tp", []int32{0, 1}
	tx.Topics = append(tx.Topics, rt)
	stale := tx
	stale.TransactionalID, stale.ProducerEpoch = "tx", epoch-1
	req.Transactions = append(req.Transactions, tx)
	resp := do[*kmsg.AddPartitionsToTxnResponse](c, req, 4)
	expectCode(t, "top level", resp.ErrorCode, 0)
	ps := resp.Transactions[0].Topics[0].Partitions
	expectCode(t, "in the transaction", ps[0].ErrorCode, 0)
	expectCode(t, "not in the transaction", ps[1].ErrorCode, kerr.InvalidTxnState.Code)
	if d := describeTxn(c, "tx"); len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("verifyOnly added a partition: %+v", d)
	}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{stale}
	resp = do[*kmsg.AddPartitionsToTxnResponse](c, req, 4)
	expectCode(t, "an older epoch", resp.Transactions[0].Topics[0].Partitions[0].ErrorCode, kerr.ProducerFenced.Code)
}

func TestEndTxnCommitSendsMarkers(t *testing.T) {
	ts, sink := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tp", 2)
	pid, epoch := startTxn(t, c, "tx")
	do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("tx", pid, epoch, "tp", 1, 0), 3)
	expectCode(t, "empty id", do[*kmsg.EndTxnResponse](c, endTxnReq("", pid, epoch, true), 3).ErrorCode, codeInvalidRequest)
	expectCode(t, "v1 wrong epoch", do[*kmsg.EndTxnResponse](c, endTxnReq("tx", pid, epoch+1, true), 1).ErrorCode, kerr.InvalidProducerEpoch.Code)
	expectCode(t, "v2 wrong epoch", do[*kmsg.EndTxnResponse](c, endTxnReq("tx", pid, epoch+1, true), 2).ErrorCode, kerr.ProducerFenced.Code)
	expectCode(t, "commit", do[*kmsg.EndTxnResponse](c, endTxnReq("tx", pid, epoch, true), 3).ErrorCode, 0)
	harness.WaitFor(t, "the commit completes", 10*time.Second, func() bool { return describeTxn(c, "tx").State == "CompleteCommit" })
	ms := sink.markers()
	if len(ms) != 2 || !ms[0].Commit || ms[0].Topic != "tp" || ms[0].Partition != 0 || ms[1].Partition != 1 || ms[0].ProducerID != pid {
		t.Fatalf("markers %+v", ms)
	}
	// A new connection commits again with the stored producer (Flink's
	// resumeTransaction after a restart): tolerated.
	c2 := ts.dial(t)
	expectCode(t, "commit answered again", do[*kmsg.EndTxnResponse](c2, endTxnReq("tx", pid, epoch, true), 3).ErrorCode, 0)
	expectCode(t, "abort after commit", do[*kmsg.EndTxnResponse](c2, endTxnReq("tx", pid, epoch, false), 3).ErrorCode, kerr.InvalidTxnState.Code)
}

func TestDescribeAndListTransactions(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "tp", 1)
	pa, ea := startTxn(t, c, "a")
	startTxn(t, c, "b")
	do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("a", pa, ea, "tp", 0), 3)
	if d := describeTxn(c, "nobody"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("unknown id: %+v", d)
	}
	d := describeTxn(c, "a")
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != pa || d.TimeoutMillis != 60000 || d.StartTimestamp <= 0 {
		t.Fatalf("describe a: %+v", d)
	}
	list := func(v int16, states []string, pids []int64) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters, req.ProducerIDFilters = states, pids
		return do[*kmsg.ListTransactionsResponse](c, req, v)
	}
	if r := list(0, nil, nil); len(r.TransactionStates) != 2 {
		t.Fatalf("list all: %+v", r.TransactionStates)
	}
	if r := list(1, []string{"Ongoing", "Bogus"}, nil); len(r.TransactionStates) != 1 || r.TransactionStates[0].TransactionalID != "a" ||
		len(r.UnknownStateFilters) != 1 || r.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("list ongoing: %+v", r)
	}
	if r := list(1, []string{"Bogus"}, nil); len(r.TransactionStates) != 0 {
		t.Fatalf("only unknown states matched %+v", r.TransactionStates)
	}
	if r := list(1, nil, []int64{pa}); len(r.TransactionStates) != 1 || r.TransactionStates[0].TransactionState != "Ongoing" {
		t.Fatalf("list by producer: %+v", r.TransactionStates)
	}
}

func txnOffsetCommitReq(id, grp string, pid int64, epoch int16, topic string, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, grp, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func stableOffset(c *client, grp, topic string) (int16, int64) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = grp, true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	p := do[*kmsg.OffsetFetchResponse](c, req, 7).Topics[0].Partitions[0]
	return p.ErrorCode, p.Offset
}

// AddOffsetsToTxn puts the group's __consumer_offsets partition in the
// transaction; TxnOffsetCommit's offsets are unstable until the commit
// marker reaches it, then committed.
func TestTxnOffsetCommitMaterializesOnCommitMarker(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "in", 1)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "etl"
	do[*kmsg.FindCoordinatorResponse](c, find, 3) // creates __consumer_offsets
	startTxn(t, c, "tx")
	pid, epoch := startTxn(t, c, "tx") // epoch 1: epoch 0 is a zombie's
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "tx", pid, epoch, ""
	expectCode(t, "no group", do[*kmsg.AddOffsetsToTxnResponse](c, add, 3).ErrorCode, kerr.InvalidGroupID.Code)
	expectCode(t, "txn offset commit before AddOffsetsToTxn (KIP-890)",
		do[*kmsg.TxnOffsetCommitResponse](c, txnOffsetCommitReq("tx", "etl", pid, epoch, "in", 1), 3).Topics[0].Partitions[0].ErrorCode,
		kerr.InvalidTxnState.Code)
	add.Group = "etl"
	add.ProducerEpoch = epoch + 1
	expectCode(t, "v1 fenced", do[*kmsg.AddOffsetsToTxnResponse](c, add, 1).ErrorCode, kerr.InvalidProducerEpoch.Code)
	add.ProducerEpoch = epoch
	expectCode(t, "add offsets", do[*kmsg.AddOffsetsToTxnResponse](c, add, 3).ErrorCode, 0)
	d := describeTxn(c, "tx")
	if len(d.Topics) != 1 || d.Topics[0].Topic != group.OffsetsTopic {
		t.Fatalf("the group's partition is not in the transaction: %+v", d)
	}
	zombie := txnOffsetCommitReq("tx", "etl", pid, epoch-1, "in", 41)
	expectCode(t, "v3 zombie", do[*kmsg.TxnOffsetCommitResponse](c, zombie, 3).Topics[0].Partitions[0].ErrorCode, kerr.ProducerFenced.Code)
	expectCode(t, "v2 zombie", do[*kmsg.TxnOffsetCommitResponse](c, zombie, 2).Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerEpoch.Code)
	resp := do[*kmsg.TxnOffsetCommitResponse](c, txnOffsetCommitReq("tx", "etl", pid, epoch, "in", 42), 3)
	expectCode(t, "txn offset commit", resp.Topics[0].Partitions[0].ErrorCode, 0)
	code, _ := stableOffset(c, "etl", "in")
	expectCode(t, "require_stable while pending", code, kerr.UnstableOffsetCommit.Code)

	expectCode(t, "commit", do[*kmsg.EndTxnResponse](c, endTxnReq("tx", pid, epoch, true), 3).ErrorCode, 0)
	harness.WaitFor(t, "the offset is committed", 10*time.Second, func() bool {
		code, off := stableOffset(c, "etl", "in")
		return code == 0 && off == 42
	})
}

func TestTxnOffsetCommitDroppedOnAbortAndKeptPendingAcrossRestart(t *testing.T) {
	ts, _ := newTxnTestServer(t)
	c := ts.dial(t)
	createTopic(t, ts, "in", 1)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "etl"
	do[*kmsg.FindCoordinatorResponse](c, find, 3)
	pid, epoch := startTxn(t, c, "tx")
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "tx", pid, epoch, "etl"
	do[*kmsg.AddOffsetsToTxnResponse](c, add, 3)
	expectCode(t, "txn commit", do[*kmsg.TxnOffsetCommitResponse](c, txnOffsetCommitReq("tx", "etl", pid, epoch, "in", 7), 3).Topics[0].Partitions[0].ErrorCode, 0)
	bad := txnOffsetCommitReq("tx", "etl", pid, epoch, "in", 8)
	bad.Topics[0].Partitions[0].Partition = 3
	expectCode(t, "unknown partition", do[*kmsg.TxnOffsetCommitResponse](c, bad, 3).Topics[0].Partitions[0].ErrorCode, codeUnknownTopicOrPart)

	// The group coordinator reloads __consumer_offsets: the transactional
	// batch without a marker is pending again.
	ts.restart(t)
	c = ts.dial(t)
	harness.WaitFor(t, "the group coordinator serves again", 10*time.Second, func() bool {
		code, _ := stableOffset(c, "etl", "in")
		return code != kerr.CoordinatorLoadInProgress.Code
	})
	code, _ := stableOffset(c, "etl", "in")
	expectCode(t, "pending after restart", code, kerr.UnstableOffsetCommit.Code)
	// The transaction coordinator reloaded Ongoing; the abort's marker
	// drops the commit.
	expectCode(t, "abort", do[*kmsg.EndTxnResponse](c, endTxnReq("tx", pid, epoch, false), 3).ErrorCode, 0)
	harness.WaitFor(t, "the pending commit is dropped", 10*time.Second, func() bool {
		code, off := stableOffset(c, "etl", "in")
		return code == 0 && off == -1
	})
}

// ACLs as Kafka's: WRITE on the transactional id for the producer's
// requests, WRITE on each topic added, READ on the group, DESCRIBE to see
// an id, CLUSTER_ACTION for a broker's verifyOnly batches.
func TestTxnAPIsEnforceACLs(t *testing.T) {
	m := acl.NewManager(acl.New(acl.Config{}), &acl.MemoryStore{})
	for _, err := range m.Create([]acl.Binding{
		allowAnon(auth.ResourceTransactionalID, "ok", auth.PatternLiteral, auth.OpWrite),
		allowAnon(auth.ResourceTransactionalID, "write-only", auth.PatternLiteral, auth.OpWrite),
		allowAnon(auth.ResourceTopic, "allowed", auth.PatternLiteral, auth.OpAll),
		allowAnon(auth.ResourceGroup, "g", auth.PatternLiteral, auth.OpRead),
		allowAnon(auth.ResourceCluster, "kafka-cluster", auth.PatternLiteral, auth.OpCreate),
	}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ts, _ := newTxnTestServer(t, func(c *Config) { c.ACLs = m })
	c := ts.dial(t)
	createTopic(t, ts, "allowed", 1)
	createTopic(t, ts, "denied", 1)

	expectCode(t, "init without WRITE", do[*kmsg.InitProducerIDResponse](c, initTxnReq("nope", 1000), 4).ErrorCode, codeTxnIDAuthFailed)
	pid, epoch := startTxn(t, c, "ok")
	startTxn(t, c, "write-only") // WRITE implies DESCRIBE, as in Kafka
	req := addPartitionsReq("ok", pid, epoch, "allowed", 0)
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "denied", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := do[*kmsg.AddPartitionsToTxnResponse](c, req, 3)
	expectCode(t, "allowed topic", resp.Topics[0].Partitions[0].ErrorCode, codeOperationNotAttempted)
	expectCode(t, "denied topic", resp.Topics[1].Partitions[0].ErrorCode, codeTopicAuthFailed)
	expectCode(t, "add for another id",
		do[*kmsg.AddPartitionsToTxnResponse](c, addPartitionsReq("nope", pid, epoch, "allowed", 0), 3).Topics[0].Partitions[0].ErrorCode,
		codeTxnIDAuthFailed)
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "ok", pid, epoch, "other-group"
	expectCode(t, "add offsets without READ on the group", do[*kmsg.AddOffsetsToTxnResponse](c, add, 3).ErrorCode, codeGroupAuthFailed)
	expectCode(t, "end another id", do[*kmsg.EndTxnResponse](c, endTxnReq("nope", pid, epoch, true), 3).ErrorCode, codeTxnIDAuthFailed)
	commit := txnOffsetCommitReq("ok", "g", pid, epoch, "denied", 1)
	expectCode(t, "txn offset commit of a denied topic",
		do[*kmsg.TxnOffsetCommitResponse](c, commit, 3).Topics[0].Partitions[0].ErrorCode, codeTopicAuthFailed)
	if d := describeTxn(c, "nope"); d.ErrorCode != codeTxnIDAuthFailed {
		t.Fatalf("describe without DESCRIBE: %+v", d)
	}
	if _, _, code := ts.txns.InitProducerID(context.Background(), "hidden", 1000, txn.ProducerIDAndEpoch{ID: -1}); code != 0 {
		t.Fatal(codeName(code))
	}
	list := do[*kmsg.ListTransactionsResponse](c, kmsg.NewPtrListTransactionsRequest(), 0)
	if len(list.TransactionStates) != 2 || list.TransactionStates[0].TransactionalID == "hidden" || list.TransactionStates[1].TransactionalID == "hidden" {
		t.Fatalf("list shows ids without DESCRIBE: %+v", list.TransactionStates)
	}
	v4 := kmsg.NewPtrAddPartitionsToTxnRequest()
	v4.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "ok", ProducerID: pid, ProducerEpoch: epoch, VerifyOnly: true}}
	expectCode(t, "v4 without CLUSTER_ACTION", do[*kmsg.AddPartitionsToTxnResponse](c, v4, 4).ErrorCode, codeClusterAuthFailed)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorType, find.CoordinatorKey = 1, "nope"
	expectCode(t, "find without DESCRIBE", do[*kmsg.FindCoordinatorResponse](c, find, 3).ErrorCode, codeTxnIDAuthFailed)
}
