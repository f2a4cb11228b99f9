package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// gatewayNode is a single node whose coordinator writes its markers to
// the broker's own partitions and whose leaders verify transactional
// batches with it (KIP-890), as `ferry serve` wires them.
type gatewayNode struct {
	t      *testing.T
	broker *server.Broker
	c      *Coordinator
	clock  *clock
}

func newGatewayNode(t *testing.T) *gatewayNode {
	t.Helper()
	b, err := server.Open(server.Config{DataDir: t.TempDir()}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, spec := range []server.TopicSpec{{Name: "orders", Partitions: 3}, {Name: "audit", Partitions: 1},
		{Name: "small", Partitions: 1, Configs: map[string]string{"max.message.bytes": "1024"}}} {
		if err := b.CreateTopic(spec); err != nil {
			t.Fatal(err)
		}
	}
	clk := &clock{now: time.Now()}
	c, err := New(b, Config{Logger: testLogger(t), Markers: &ClusterMarkers{Broker: b, Local: b}, ManualTick: true,
		Now: clk.Now, StatePartitions: 4, MarkerRetryBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b.SetTxnVerifier(&Verifier{Coordinator: c})
	return &gatewayNode{t: t, broker: b, c: c, clock: clk}
}

func (n *gatewayNode) transactor(prefix string, size int) *Transactor {
	n.t.Helper()
	tr, err := NewTransactor(TransactorConfig{Broker: n.broker, Coordinator: n.c, IDPrefix: prefix, Size: size,
		Timeout: 10 * time.Second, Logger: testLogger(n.t)})
	if err != nil {
		n.t.Fatal(err)
	}
	return tr
}

// values reads topic-partition from the start as a consumer at the given
// isolation would, once no transaction is open on it (its last stable
// offset at its high watermark).
func (n *gatewayNode) values(topic string, p int32, committed bool) []string {
	n.t.Helper()
	var res server.FetchResult
	harness.WaitFor(n.t, fmt.Sprintf("no open transaction on %s-%d", topic, p), 10*time.Second, func() bool {
		var err error
		res, err = n.broker.Fetch(context.Background(), server.FetchRequest{Topic: topic, Partition: p, MaxBytes: 1 << 20,
			ReadCommitted: committed}, nil)
		if err != nil {
			n.t.Fatal(err)
		}
		return res.LastStableOffset == res.HighWatermark
	})
	data := res.Data
	if committed {
		data = server.DropAborted(data, res.AbortedTxns)
	}
	out := []string{}
	if err := records.Decode(data, 0, 0, func(r records.Record) bool { out = append(out, string(r.Value)); return true }); err != nil {
		n.t.Fatal(err)
	}
	return out
}

func rec(topic string, p int32, value string) server.TopicRecord {
	return server.TopicRecord{Topic: topic, Partition: p, Record: records.Record{Value: []byte(value)}}
}

// A batch over two topics and three partitions commits as one
// transaction: every record at its answered offset, visible to
// read_committed readers. The producers' sequences carry on from one
// transaction to the next (many transactions over few producers).
func TestTransactorCommitsAcrossPartitions(t *testing.T) {
	n := newGatewayNode(t)
	tr := n.transactor("gw", 2)
	ctx := context.Background()
	got, err := tr.Transact(ctx, []server.TopicRecord{rec("orders", 0, "o0"), rec("audit", 0, "a0"), rec("orders", 2, "o2"), rec("orders", 0, "o0b")})
	if err != nil {
		t.Fatal(err)
	}
	off := func(topic string, p int32, o int64) server.TopicOffset {
		return server.TopicOffset{Topic: topic, Partition: p, Offset: o}
	}
	want := []server.TopicOffset{off("orders", 0, 0), off("audit", 0, 0), off("orders", 2, 0), off("orders", 0, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
	for i := range 20 {
		if _, err := tr.Transact(ctx, []server.TopicRecord{rec("orders", 1, fmt.Sprint(i)), rec("orders", 0, fmt.Sprint(i))}); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	if v := n.values("orders", 0, true); len(v) != 22 || v[0] != "o0" || v[1] != "o0b" || v[21] != "19" {
		t.Fatalf("orders-0 read_committed: %v", v)
	}
	if v := n.values("audit", 0, true); !slices.Equal(v, []string{"a0"}) {
		t.Fatalf("audit-0 read_committed: %v", v)
	}
	if v := n.values("orders", 1, true); len(v) != 20 {
		t.Fatalf("orders-1 read_committed: %v", v)
	}
}

// A record one leader refuses (over max.message.bytes) aborts the whole
// transaction: the records appended to the other partitions stay
// invisible to read_committed readers. The producer takes a new epoch and
// the next transaction commits.
func TestTransactorAbortsWhenAPartitionRefuses(t *testing.T) {
	n := newGatewayNode(t)
	tr := n.transactor("gw", 1)
	ctx := context.Background()
	big := string(make([]byte, 4096))
	_, err := tr.Transact(ctx, []server.TopicRecord{rec("orders", 0, "lost"), rec("small", 0, big)})
	if !errors.Is(err, server.ErrTransactionAborted) || !errors.Is(err, server.ErrRecordTooLarge) {
		t.Fatalf("a batch with a record too large: %v", err)
	}
	if v := n.values("orders", 0, true); len(v) != 0 {
		t.Fatalf("orders-0 read_committed after the abort: %v", v)
	}
	if v := n.values("orders", 0, false); !slices.Equal(v, []string{"lost"}) {
		t.Fatalf("orders-0 read_uncommitted after the abort: %v", v)
	}
	if _, err := tr.Transact(ctx, []server.TopicRecord{rec("orders", 0, "kept"), rec("small", 0, "s")}); err != nil {
		t.Fatal(err)
	}
	if v := n.values("orders", 0, true); !slices.Equal(v, []string{"kept"}) {
		t.Fatalf("orders-0 read_committed: %v", v)
	}
}

// openTransaction leaves a transaction of tr's one producer open with
// recs appended, as a process killed between its appends and its commit
// leaves it.
func openTransaction(t *testing.T, tr *Transactor, recs []server.TopicRecord) *txnProducer {
	t.Helper()
	ctx := context.Background()
	p := <-tr.free
	if err := tr.initProducer(ctx, p); err != nil {
		t.Fatal(err)
	}
	parts, err := tr.begin(ctx, p, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.appendAll(ctx, p, parts); err != nil {
		t.Fatal(err)
	}
	return p
}

// A restarted gateway reuses its transactional ids: its first transaction
// fences the epoch the previous process left a transaction open in, which
// is aborted; that producer's late commit is refused.
func TestTransactorFencesTheTransactionOfAPreviousProcess(t *testing.T) {
	n := newGatewayNode(t)
	old := n.transactor("gw", 1)
	zombie := openTransaction(t, old, []server.TopicRecord{rec("orders", 0, "zombie"), rec("audit", 0, "zombie")})

	restarted := n.transactor("gw", 1)
	if _, err := restarted.Transact(context.Background(), []server.TopicRecord{rec("orders", 0, "new")}); err != nil {
		t.Fatal(err)
	}
	if v := n.values("orders", 0, true); !slices.Equal(v, []string{"new"}) {
		t.Fatalf("orders-0 read_committed: %v", v)
	}
	if v := n.values("audit", 0, true); len(v) != 0 {
		t.Fatalf("audit-0 read_committed: %v", v)
	}
	err := old.endTxn(context.Background(), zombie, true)
	var ce *coordinatorError
	if !errors.As(err, &ce) || ce.code != kerr.ProducerFenced.Code {
		t.Fatalf("the fenced producer's commit: %v", err)
	}
}

// A transaction left open past its timeout is aborted by the coordinator;
// the producer's next request finds its epoch fenced, takes a new one and
// commits.
func TestTransactorTimedOutTransactionAborts(t *testing.T) {
	n := newGatewayNode(t)
	tr := n.transactor("gw", 1)
	p := openTransaction(t, tr, []server.TopicRecord{rec("orders", 1, "abandoned")})
	tr.free <- p
	n.clock.advance(10*time.Second + time.Millisecond)
	n.c.Tick()
	n.waitAborted("gw-0")
	if v := n.values("orders", 1, true); len(v) != 0 {
		t.Fatalf("orders-1 read_committed after the timeout: %v", v)
	}
	if _, err := tr.Transact(context.Background(), []server.TopicRecord{rec("orders", 1, "next")}); err != nil {
		t.Fatal(err)
	}
	if v := n.values("orders", 1, true); !slices.Equal(v, []string{"next"}) {
		t.Fatalf("orders-1 read_committed: %v", v)
	}
}

func (n *gatewayNode) waitAborted(id string) {
	n.t.Helper()
	harness.WaitFor(n.t, id+" aborted", 10*time.Second, func() bool {
		tx, code := n.c.Describe(id)
		return code == 0 && tx.State == CompleteAbort
	})
}

// A request that finds every producer busy until its context ends is
// answered without writing.
func TestTransactorBusyPool(t *testing.T) {
	n := newGatewayNode(t)
	tr := n.transactor("gw", 1)
	p := <-tr.free
	defer func() { tr.free <- p }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := tr.Transact(ctx, []server.TopicRecord{rec("orders", 0, "x")}); !errors.Is(err, server.ErrRequestTimedOut) {
		t.Fatalf("busy: %v", err)
	}
}

// BenchmarkTransactorBatch is one POST /kafka batch in process: 10
// records over two topics and four partitions, one transaction (its
// state writes fsynced, as on a single node), from one client.
func BenchmarkTransactorBatch(b *testing.B) {
	broker, err := server.Open(server.Config{DataDir: b.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	for _, name := range []string{"ta", "tb"} {
		if err := broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 2}); err != nil {
			b.Fatal(err)
		}
	}
	c, err := New(broker, Config{Logger: slog.New(slog.DiscardHandler), Markers: &ClusterMarkers{Broker: broker, Local: broker}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	broker.SetTxnVerifier(&Verifier{Coordinator: c})
	tr, err := NewTransactor(TransactorConfig{Broker: broker, Coordinator: c, IDPrefix: "bench", Size: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	recs := make([]server.TopicRecord, 10)
	for i := range recs {
		recs[i] = server.TopicRecord{Topic: []string{"ta", "tb"}[i%2], Partition: int32(i/2) % 2, Record: records.Record{Value: value}}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for i := range recs {
			recs[i].Record.Timestamp = 0
		}
		if _, err := tr.Transact(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
}

// The transactor's AddPartitionsToTxn to a remote coordinator carries
// both shapes: whichever version the client negotiates, the coordinator
// reads the producer and its partitions, and the answer's first error is
// found in either shape.
func TestAddPartitionsRequestBothShapes(t *testing.T) {
	tps := []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}}
	req := addPartitionsRequest("gw-1", 7, 3, tps)
	for _, v := range []int16{3, 4, 5} {
		req.SetVersion(v)
		got := kmsg.NewPtrAddPartitionsToTxnRequest()
		got.SetVersion(v)
		if err := got.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		id, pid, epoch, verifyOnly := got.TransactionalID, got.ProducerID, got.ProducerEpoch, false
		topics := map[string][]int32{}
		if v < 4 {
			for _, rt := range got.Topics {
				topics[rt.Topic] = rt.Partitions
			}
		} else {
			if len(got.Transactions) != 1 {
				t.Fatalf("v%d: %d transactions", v, len(got.Transactions))
			}
			tx := got.Transactions[0]
			id, pid, epoch, verifyOnly = tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly
			for _, rt := range tx.Topics {
				topics[rt.Topic] = rt.Partitions
			}
		}
		if id != "gw-1" || pid != 7 || epoch != 3 || verifyOnly || !slices.Equal(topics["a"], []int32{0, 2}) ||
			!slices.Equal(topics["b"], []int32{1}) || len(topics) != 2 {
			t.Fatalf("v%d read back as %q %d/%d verifyOnly=%v %v", v, id, pid, epoch, verifyOnly, topics)
		}
	}

	v3 := kmsg.NewPtrAddPartitionsToTxnResponse()
	v3.Topics = []kmsg.AddPartitionsToTxnResponseTopic{{Topic: "a", Partitions: []kmsg.AddPartitionsToTxnResponseTopicPartition{
		{Partition: 0, ErrorCode: kerr.OperationNotAttempted.Code}, {Partition: 2, ErrorCode: kerr.TopicAuthorizationFailed.Code}}}}
	if code := addPartitionsAnswer(v3); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("v3 answer: %v", kerr.ErrorForCode(code))
	}
	v4 := kmsg.NewPtrAddPartitionsToTxnResponse()
	v4.Transactions = []kmsg.AddPartitionsToTxnResponseTransaction{{TransactionalID: "gw-1", Topics: []kmsg.AddPartitionsToTxnResponseTransactionTopic{
		{Topic: "b", Partitions: []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{{Partition: 1, ErrorCode: kerr.ProducerFenced.Code}}}}}}
	if code := addPartitionsAnswer(v4); code != kerr.ProducerFenced.Code {
		t.Fatalf("v4 answer: %v", kerr.ErrorForCode(code))
	}
	v4.Transactions[0].Topics[0].Partitions[0].ErrorCode = 0
	if code := addPartitionsAnswer(v4); code != 0 {
		t.Fatalf("v4 success: %v", kerr.ErrorForCode(code))
	}
	if code := addPartitionsAnswer(kmsg.NewPtrAddPartitionsToTxnResponse()); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("an empty answer: %v", kerr.ErrorForCode(code))
	}
	v4.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	if code := addPartitionsAnswer(v4); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("a request-level error: %v", kerr.ErrorForCode(code))
	}
}

// A remote leader's answers map to the core's errors: leadership ones
// are retried (ErrLeaderNotAvailable), a refused record keeps its kind,
// the KIP-890 check's codes are the coordinator's.
func TestLeaderAnswerErrors(t *testing.T) {
	tp := TopicPartition{"orders", 1}
	for _, c := range []struct {
		code  int16
		want  error
		retry bool
	}{
		{kerr.NotLeaderForPartition.Code, server.ErrLeaderNotAvailable, true},
		{kerr.MessageTooLarge.Code, server.ErrRecordTooLarge, false},
		{kerr.NotEnoughReplicas.Code, server.ErrNotEnoughReplicas, false},
		{kerr.InvalidTxnState.Code, server.ErrInvalidTxnState, false},
	} {
		err := leaderAnswerError(tp, 2, c.code)
		if !errors.Is(err, c.want) || retriableAppend(err) != c.retry || !strings.Contains(err.Error(), "orders-1") {
			t.Errorf("%v: %v (retried %v)", kerr.ErrorForCode(c.code), err, retriableAppend(err))
		}
	}
}
