package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/test/harness"
)

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(tlogWriter{t}, nil)) }

// markerLog stands for the partition leaders: it records the markers it
// is asked to write and fails them while failing is set.
type markerLog struct {
	mu      sync.Mutex
	written []server.TxnMarker
	failing error
	calls   int
	// tried holds every marker asked for, written or failed.
	tried []server.TxnMarker
	// probes holds every probe asked for (server.TxnMarker.Probe), which
	// writes nothing; probeAnswers are the partitions whose probes are
	// answered an error (server.ErrTxnOpen: the producer's transaction is
	// open there), the others nil.
	probes       []server.TxnMarker
	probeAnswers map[TopicPartition]error
}

func (m *markerLog) WriteTxnMarkers(_ context.Context, ms []server.TxnMarker) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	m.tried = append(m.tried, ms...)
	errs := make([]error, len(ms))
	for i, mk := range ms {
		if m.failing != nil {
			errs[i] = m.failing
			continue
		}
		if mk.Probe {
			m.probes = append(m.probes, mk)
			errs[i] = m.probeAnswers[TopicPartition{mk.Topic, mk.Partition}]
			continue
		}
		m.written = append(m.written, mk)
	}
	return errs
}

func (m *markerLog) snapshot() ([]server.TxnMarker, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]server.TxnMarker(nil), m.written...), m.calls
}

func (m *markerLog) fail(err error) {
	m.mu.Lock()
	m.failing = err
	m.mu.Unlock()
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type node struct {
	t       *testing.T
	dir     string
	broker  *server.Broker
	c       *Coordinator
	markers *markerLog
	clock   *clock
}

// newNode opens a single node's broker on dir and its coordinator.
func newNode(t *testing.T, dir string, markers *markerLog, clk *clock) *node {
	t.Helper()
	b, err := server.Open(server.Config{DataDir: dir, AutoCreateTopics: true}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PartitionCount("orders"); err != nil {
		if err := b.CreateTopic(server.TopicSpec{Name: "orders", Partitions: 3}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(b, Config{Logger: testLogger(t), Markers: markers, ManualTick: true, Now: clk.Now,
		StatePartitions: 4, MarkerRetryBackoff: 5 * time.Millisecond, MaxTimeout: time.Hour})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	n := &node{t: t, dir: dir, broker: b, c: c, markers: markers, clock: clk}
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	if n.c == nil {
		return
	}
	n.c.Close()
	n.broker.Close()
	n.c = nil
}

func (n *node) waitState(id string, want State) Txn {
	n.t.Helper()
	var got Txn
	harness.WaitFor(n.t, "transaction "+id+" reaches "+want.String(), 10*time.Second, func() bool {
		var code int16
		got, code = n.c.Describe(id)
		return code == 0 && got.State == want
	})
	return got
}

func must(t *testing.T, what string, code int16) {
	t.Helper()
	if code != 0 {
		t.Fatalf("%s: %v", what, kerr.ErrorForCode(code))
	}
}

func TestCoordinatorCommitWritesMarkersThenCompletes(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, epoch, code := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "init", code)
	if epoch != 0 || pid < 1 {
		t.Fatalf("first init: %d/%d", pid, epoch)
	}
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 2}, {"orders", 0}}))
	if code := n.c.AddPartitions(ctx, "tx", pid, epoch+1, []TopicPartition{{"orders", 1}}); code != kerr.ProducerFenced.Code {
		t.Fatalf("add with a wrong epoch: %v", kerr.ErrorForCode(code))
	}
	if code := n.c.AddPartitions(ctx, "other", pid, epoch, nil); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("add to an unknown id: %v", kerr.ErrorForCode(code))
	}
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	n.waitState("tx", CompleteCommit)
	got, _ := ml.snapshot()
	if len(got) != 2 {
		t.Fatalf("markers %+v", got)
	}
	for i, want := range []int32{0, 2} {
		m := got[i]
		if m.Topic != "orders" || m.Partition != want || !m.Commit || m.ProducerID != pid || m.ProducerEpoch != epoch || m.CoordinatorEpoch < 0 {
			t.Fatalf("marker %d: %+v", i, m)
		}
	}
	must(t, "commit answered again", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	if code := n.c.EndTxn(ctx, "tx", pid, epoch, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %v", kerr.ErrorForCode(code))
	}
	// Flink's resumeTransaction: a new producer instance that never sent
	// InitProducerId commits with the stored id and epoch.
	must(t, "next txn", n.c.AddPartitions(ctx, "tx", pid, epoch, []TopicPartition{{"orders", 1}}))
	must(t, "resumed commit", n.c.EndTxn(ctx, "tx", pid, epoch, true))
	n.waitState("tx", CompleteCommit)
}

func TestCoordinatorRefusesBadInit(t *testing.T) {
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	for _, c := range []struct {
		id      string
		timeout int32
		code    int16
	}{
		{"", 1000, kerr.InvalidRequest.Code},
		{"tx", 0, kerr.InvalidTransactionTimeout.Code},
		{"tx", int32(time.Hour/time.Millisecond) + 1, kerr.InvalidTransactionTimeout.Code},
	} {
		if _, _, code := n.c.InitProducerID(ctx, c.id, c.timeout, ProducerIDAndEpoch{ID: -1}); code != c.code {
			t.Errorf("init %q timeout %d: %v, want %v", c.id, c.timeout, kerr.ErrorForCode(code), kerr.ErrorForCode(c.code))
		}
	}
	if _, code := n.c.Describe("tx"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("a refused init left the id behind: %v", kerr.ErrorForCode(code))
	}
}

// A second producer with the same id aborts the first one's transaction
// under a bumped epoch; the first is fenced from then on.
func TestCoordinatorFencesZombie(t *testing.T) {
	ml := &markerLog{}
	n := newNode(t, t.TempDir(), ml, &clock{now: time.UnixMilli(1_700_000_000_000)})
	ctx := context.Background()
	pid, e0, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e0, []TopicPartition{{"orders", 0}}))
	var pid2 int64
	var e2 int16
	harness.WaitFor(t, "the new producer's init succeeds", 10*time.Second, func() bool {
		var code int16
		pid2, e2, code = n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
		if code != 0 && code != kerr.ConcurrentTransactions.Code {
			t.Fatalf("init: %v", kerr.ErrorForCode(code))
		}
		return code == 0
	})
	if pid2 != pid || e2 != e0+2 {
		t.Fatalf("new producer %d/%d, old %d/%d", pid2, e2, pid, e0)
	}
	got, _ := ml.snapshot()
	if len(got) != 1 || got[0].Commit || got[0].ProducerEpoch != e0+1 {
		t.Fatalf("the fencing abort's markers: %+v", got)
	}
	if code := n.c.EndTxn(ctx, "tx", pid, e0, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("the zombie's commit: %v", kerr.ErrorForCode(code))
	}
}

func TestCoordinatorAbortsTimedOutTransactions(t *testing.T) {
	ml := &markerLog{}
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	n := newNode(t, t.TempDir(), ml, clk)
	ctx := context.Background()
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 1000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}))
	clk.advance(time.Second)
	n.c.Tick()
	if tx, _ := n.c.Describe("tx"); tx.State != Ongoing {
		t.Fatalf("aborted at exactly its timeout: %v", tx.State)
	}
	clk.advance(time.Millisecond)
	n.c.Tick()
	tx := n.waitState("tx", CompleteAbort)
	if tx.ProducerEpoch != e+1 {
		t.Fatalf("the timeout abort did not fence: epoch %d", tx.ProducerEpoch)
	}
	if code := n.c.EndTxn(ctx, "tx", pid, e, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("the late commit: %v", kerr.ErrorForCode(code))
	}
}

func TestCoordinatorRemovesExpiredIDs(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	n := newNode(t, dir, &markerLog{}, clk)
	ctx := context.Background()
	n.c.InitProducerID(ctx, "idle", 1000, ProducerIDAndEpoch{ID: -1})
	pid, e, _ := n.c.InitProducerID(ctx, "busy", 1000, ProducerIDAndEpoch{ID: -1})
	clk.advance(7*24*time.Hour - time.Millisecond)
	must(t, "add", n.c.AddPartitions(ctx, "busy", pid, e, []TopicPartition{{"orders", 0}}))
	clk.advance(time.Millisecond)
	n.c.RemoveExpired()
	if _, code := n.c.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("idle id after expiry: %v", kerr.ErrorForCode(code))
	}
	if _, code := n.c.Describe("busy"); code != 0 {
		t.Fatalf("an id with an open transaction expired: %v", kerr.ErrorForCode(code))
	}
	n.stop()
	n = newNode(t, dir, &markerLog{}, clk)
	if _, code := n.c.Describe("idle"); code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("the tombstone did not survive a restart: %v", kerr.ErrorForCode(code))
	}
	if tx, code := n.c.Describe("busy"); code != 0 || tx.State != Ongoing {
		t.Fatalf("busy after restart: %+v %v", tx, kerr.ErrorForCode(code))
	}
}

// The coordinator stops after writing PrepareCommit, before any marker
// lands: the node started again on the same data dir resends the markers
// and completes the commit.
func TestCoordinatorRestartCompletesPreparedCommit(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	dir := t.TempDir()
	down := &markerLog{failing: errors.New("leader unreachable")}
	n := newNode(t, dir, down, clk)
	ctx := context.Background()
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 1}}))
	must(t, "commit", n.c.EndTxn(ctx, "tx", pid, e, true))
	harness.WaitFor(t, "a marker was tried", 10*time.Second, func() bool { _, calls := down.snapshot(); return calls > 0 })
	if code := n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the commit is pending: %v", kerr.ErrorForCode(code))
	}
	n.stop() // mid-transaction: PrepareCommit in the log, no marker written

	up := &markerLog{}
	n = newNode(t, dir, up, clk)
	tx := n.waitState("tx", CompleteCommit)
	got, _ := up.snapshot()
	if len(got) != 1 || !got[0].Commit || got[0].Partition != 1 || got[0].ProducerID != pid || tx.ProducerID != pid {
		t.Fatalf("markers after the restart: %+v", got)
	}
	must(t, "a new transaction after the restart", n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"orders", 0}}))
}

// A cluster's broker coordinates only the ids of the __transaction_state
// partitions it leads, once loaded; it drops them on losing leadership.
func TestCoordinatorFollowsLeadership(t *testing.T) {
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1, AwaitRoles: true,
		AdvertisedKafkaAddr: "broker1.example:9092"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(server.TopicSpec{Name: StateTopic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := New(b, Config{Logger: testLogger(t), Markers: &markerLog{}, ManualTick: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	setRole := func(leader, epoch int32) {
		t.Helper()
		role := server.PartitionRole{Topic: StateTopic, Partition: 0,
			Role: replication.Role{Leader: leader, LeaderEpoch: epoch, ISR: []int32{1}, Replicas: []int32{1, 2}}}
		errs, err := b.ApplyLeaderAndIsr(1, []server.PartitionRole{role},
			[]server.BrokerAddress{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: 1}})
		if err != nil || errs[0] != nil {
			t.Fatalf("LeaderAndIsr leader %d epoch %d: %v %v", leader, epoch, err, errs)
		}
	}
	if _, _, code := c.InitProducerID(ctx, "tx", 1000, ProducerIDAndEpoch{ID: -1}); code != kerr.NotCoordinator.Code {
		t.Fatalf("init before any role: %v", kerr.ErrorForCode(code))
	}
	setRole(1, 1)
	harness.WaitFor(t, "the coordinator serves", 10*time.Second, func() bool { return c.Coordinates("tx") == 0 })
	pid, e, code := c.InitProducerID(ctx, "tx", 1000, ProducerIDAndEpoch{ID: -1})
	must(t, "init as leader", code)
	setRole(2, 2)
	if code := c.AddPartitions(ctx, "tx", pid, e, nil); code != kerr.NotCoordinator.Code {
		t.Fatalf("add after losing leadership: %v", kerr.ErrorForCode(code))
	}
	setRole(1, 3)
	harness.WaitFor(t, "the coordinator serves again", 10*time.Second, func() bool { return c.Coordinates("tx") == 0 })
	if tx, code := c.Describe("tx"); code != 0 || tx.ProducerID != pid || tx.ProducerEpoch != e {
		t.Fatalf("reloaded %+v %v", tx, kerr.ErrorForCode(code))
	}
}

func TestListFilters(t *testing.T) {
	clk := &clock{now: time.UnixMilli(1_700_000_000_000)}
	n := newNode(t, t.TempDir(), &markerLog{}, clk)
	ctx := context.Background()
	pa, ea, _ := n.c.InitProducerID(ctx, "a", 60000, ProducerIDAndEpoch{ID: -1})
	pb, _, _ := n.c.InitProducerID(ctx, "b", 60000, ProducerIDAndEpoch{ID: -1})
	must(t, "add", n.c.AddPartitions(ctx, "a", pa, ea, []TopicPartition{{"orders", 0}}))
	clk.advance(5 * time.Second)
	ids := func(f ListFilter) []string {
		var out []string
		for _, t := range n.c.List(f) {
			out = append(out, t.ID)
		}
		return out
	}
	for _, c := range []struct {
		f    ListFilter
		want string
	}{
		{ListFilter{}, "[a b]"},
		{ListFilter{States: []State{Ongoing}}, "[a]"},
		{ListFilter{ProducerIDs: []int64{pb}}, "[b]"},
		{ListFilter{MinDuration: 5 * time.Second}, "[a]"},
		{ListFilter{MinDuration: 6 * time.Second}, "[]"},
	} {
		if got := fmtIDs(ids(c.f)); got != c.want {
			t.Errorf("%+v: %s, want %s", c.f, got, c.want)
		}
	}
}

func fmtIDs(ids []string) string {
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += " "
		}
		s += id
	}
	return s + "]"
}

// Requests racing on one id are serialised: each either lands or is told
// CONCURRENT_TRANSACTIONS (and retries), and no add is lost.
func TestCoordinatorConcurrentAdds(t *testing.T) {
	n := newNode(t, t.TempDir(), &markerLog{}, &clock{now: time.UnixMilli(1_700_000_000_000)})
	if err := n.broker.CreateTopic(server.TopicSpec{Name: "wide", Partitions: 16}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pid, e, _ := n.c.InitProducerID(ctx, "tx", 60000, ProducerIDAndEpoch{ID: -1})
	var wg sync.WaitGroup
	var mu sync.Mutex
	concurrent := 0
	for p := range int32(16) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				code := n.c.AddPartitions(ctx, "tx", pid, e, []TopicPartition{{"wide", p}})
				if code == 0 {
					return
				}
				if code != kerr.ConcurrentTransactions.Code {
					t.Errorf("add %d: %v", p, kerr.ErrorForCode(code))
					return
				}
				mu.Lock()
				concurrent++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	tx, _ := n.c.Describe("tx")
	if len(tx.Partitions) != 16 {
		t.Fatalf("%d partitions after 16 adds (%d CONCURRENT_TRANSACTIONS answers)", len(tx.Partitions), concurrent)
	}
	n.stop()
	n = newNode(t, n.dir, &markerLog{}, n.clock)
	if tx, _ := n.c.Describe("tx"); len(tx.Partitions) != 16 || tx.State != Ongoing {
		t.Fatalf("after a restart: %+v", tx)
	}
}
