package fetcher_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ferry-mq/ferry/replication"
	"github.com/ferry-mq/ferry/replication/fetcher"
	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/group"
	"github.com/ferry-mq/ferry/server/kafka"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/test/harness"
)

// leader is a real broker (id 1) serving Kafka on loopback.
type leader struct {
	broker *server.Broker
	srv    *kafka.Server
	addr   string
}

func startLeader(t *testing.T, addr string) *leader {
	t.Helper()
	return startLeaderWith(t, addr, nil)
}

// startLeaderWith also lets the test change the listener's config.
func startLeaderWith(t *testing.T, addr string, mutate func(*kafka.Config)) *leader {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: t.TempDir(), BrokerID: 1}, logger)
	if err != nil {
		t.Fatal(err)
	}
	g, err := group.New(b, group.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	kcfg := kafka.Config{Addr: ln.Addr().String(), AdvertisedAddr: ln.Addr().String(), Logger: logger}
	if mutate != nil {
		mutate(&kcfg)
	}
	s, err := kafka.New(b, g, kcfg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	l := &leader{broker: b, srv: s, addr: ln.Addr().String()}
	t.Cleanup(func() { l.stopListener(t); g.Close(); b.Close() })
	return l
}

func (l *leader) stopListener(t *testing.T) {
	if l.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	l.srv = nil
}

func produce(t *testing.T, b *server.Broker, topic string, values ...string) {
	t.Helper()
	var bld records.Builder
	for _, v := range values {
		bld.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
	}
	data, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := produceAcked(context.Background(), b, server.BatchProduce{Topic: topic, Batches: data, Acks: server.AcksLeader}); err != nil {
		t.Fatal(err)
	}
}

func openFollower(t *testing.T, topic string) *replication.Replica {
	t.Helper()
	p, err := replication.Open(replication.Config{Topic: topic, Index: 0, BrokerID: 2,
		Dir: filepath.Join(t.TempDir(), topic+"-0"), Log: storage.Config{RetentionTime: -1, RetentionBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var twoReplicas = replication.Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}

func readAll(t *testing.T, p server.Partition) []byte {
	t.Helper()
	if p.LogEndOffset() == 0 {
		return nil
	}
	rr, err := p.(*replication.Replica).Read(storage.ReadOptions{Offset: 0, MaxBytes: 64 << 20, MinOneBatch: true, MaxOffset: p.LogEndOffset()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rr.Data
}

// A follower fed by a Fetcher holds the leader's batches byte for byte,
// follows its high watermark, keeps copying as the leader grows, and
// resumes after the leader's listener goes away and comes back.
func TestFetcherCopiesTheLeader(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "r", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.broker.SetPartitionRole("r", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	produce(t, l.broker, "r", "a", "b", "c")
	follower := openFollower(t, "r")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	defer f.Close()
	f.Add(follower)
	lp, _ := l.broker.Partition("r", 0)
	caughtUp := func() bool {
		return follower.LogEndOffset() == lp.LogEndOffset() && follower.HighWatermark() == lp.HighWatermark()
	}
	harness.WaitFor(t, "the follower copies 3 records", 10*time.Second, caughtUp)
	produce(t, l.broker, "r", "d")
	harness.WaitFor(t, "the follower copies the 4th record", 10*time.Second, caughtUp)

	addr := l.addr
	l.stopListener(t)
	produce(t, l.broker, "r", "e", "f")
	ln := startListenerAgain(t, l, addr)
	defer ln()
	harness.WaitFor(t, "the follower resumes after the leader's listener returns", 10*time.Second, caughtUp)
	if !bytes.Equal(readAll(t, lp), readAll(t, follower)) {
		t.Fatal("the follower's log differs from the leader's")
	}
}

// startListenerAgain serves the leader's broker on addr again.
func startListenerAgain(t *testing.T, l *leader, addr string) func() {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := group.New(l.broker, group.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	s, err := kafka.New(l.broker, g, kafka.Config{Addr: addr, AdvertisedAddr: addr, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	l.srv = s
	return func() { g.Close() }
}

// A leader that does not list this broker as a replica answers
// NOT_LEADER_OR_FOLLOWER (an older epoch would be FENCED_LEADER_EPOCH):
// the partition backs off while another from the same leader goes on, and
// is copied once the leader lists this broker again (it had not heard the
// controller yet), without being added again.
func TestFetcherRetriesAPartitionTheLeaderRefuses(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	for _, name := range []string{"kept", "moved"} {
		if err := l.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
		if err := l.broker.SetPartitionRole(name, 0, twoReplicas); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.broker.SetPartitionRole("moved", 0, replication.Role{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 3}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	kept, moved := openFollower(t, "kept"), openFollower(t, "moved")
	if err := kept.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	stale := twoReplicas // the follower has not heard of the reassignment yet
	stale.LeaderEpoch = 2
	if err := moved.SetRole(stale); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	defer f.Close()
	f.Add(kept)
	f.Add(moved)
	harness.WaitFor(t, "the moved partition is refused", 10*time.Second, func() bool {
		st, _ := f.Status("moved", 0)
		return errors.Is(st.Err, kerr.NotLeaderForPartition)
	})
	produce(t, l.broker, "kept", "x")
	produce(t, l.broker, "moved", "y")
	harness.WaitFor(t, "the kept partition goes on", 10*time.Second, func() bool { return kept.LogEndOffset() == 1 })
	if moved.LogEndOffset() != 0 {
		t.Fatalf("the refused partition copied %d records", moved.LogEndOffset())
	}
	if err := l.broker.SetPartitionRole("moved", 0, stale); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the refused partition is copied once the leader lists it", 10*time.Second, func() bool { return moved.LogEndOffset() == 1 })
	f.Remove("moved", 0)
	if _, ok := f.Status("moved", 0); ok || f.Len() != 1 {
		t.Fatalf("after Remove: %d partitions", f.Len())
	}
}

// After a leader change the controller tells the brokers in parallel, so
// a follower may ask the new leader before it has heard that it leads: it
// refuses (NOT_LEADER_OR_FOLLOWER). A partition just Added is asked for
// again soon, not after the backoff (an hour here), and is copied as soon
// as the leader learns it leads.
func TestFetcherRetriesSoonANewLeaderThatHasNotHeardYet(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "late", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	replicas := []int32{1, 2, 3}
	if err := l.broker.SetPartitionRole("late", 0, replication.Role{Leader: 3, LeaderEpoch: 1, Replicas: replicas, ISR: replicas}); err != nil {
		t.Fatal(err)
	}
	elected := replication.Role{Leader: 1, LeaderEpoch: 2, Replicas: replicas, ISR: []int32{1, 2}}
	follower := openFollower(t, "late")
	if err := follower.SetRole(elected); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: time.Hour})
	defer f.Close()
	f.Add(follower)
	harness.WaitFor(t, "the leader that has not heard refuses the partition", 10*time.Second, func() bool {
		st, _ := f.Status("late", 0)
		return errors.Is(st.Err, kerr.NotLeaderForPartition)
	})
	if err := l.broker.SetPartitionRole("late", 0, elected); err != nil {
		t.Fatal(err)
	}
	produce(t, l.broker, "late", "x")
	harness.WaitFor(t, "the partition is copied once the leader has heard, well within the backoff", 30*time.Second,
		func() bool { return follower.LogEndOffset() == 1 })
}

// The same when the new leader still leads in the older epoch: the
// follower, already told of the newer one, is answered
// UNKNOWN_LEADER_EPOCH (Kafka's 75) by OffsetForLeaderEpoch, and asks
// again soon. Issue 23: the code was 76 (UNSUPPORTED_COMPRESSION_TYPE to
// the follower), which waited out the whole backoff.
func TestFetcherRetriesSoonALeaderInAnOlderEpoch(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "older", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.broker.SetPartitionRole("older", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	produce(t, l.broker, "older", "a")
	follower := openFollower(t, "older")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: time.Hour})
	defer f.Close()
	f.Add(follower)
	harness.WaitFor(t, "the follower copies epoch 1", 10*time.Second, func() bool { return follower.LogEndOffset() == 1 })
	newer := twoReplicas
	newer.LeaderEpoch = 2
	if err := follower.SetRole(newer); err != nil {
		t.Fatal(err)
	}
	f.Remove("older", 0)
	f.Add(follower) // as the Manager does on a new role: truncate first
	harness.WaitFor(t, "the leader still in epoch 1 answers UNKNOWN_LEADER_EPOCH", 10*time.Second, func() bool {
		st, _ := f.Status("older", 0)
		return errors.Is(st.Err, kerr.UnknownLeaderEpoch)
	})
	if err := l.broker.SetPartitionRole("older", 0, newer); err != nil {
		t.Fatal(err)
	}
	produce(t, l.broker, "older", "b")
	harness.WaitFor(t, "the partition is copied once the leader has heard, well within the backoff", 30*time.Second,
		func() bool { return follower.LogEndOffset() == 2 })
}

// With a follower in the ISR, the leader's high watermark waits for the
// follower's fetches: acks=all is answered once the follower has the
// records, consumers see nothing above the high watermark meanwhile, and
// with the follower stopped an acks=all produce times out (it was
// appended, never acknowledged by the ISR).
func TestAcksAllWaitsForTheFollower(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "all", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.broker.SetPartitionRole("all", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	follower := openFollower(t, "all")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	lp, _ := l.broker.Partition("all", 0)
	batch := func(v string) []byte {
		var bld records.Builder
		bld.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
		data, _ := bld.AppendBatch(nil, records.BatchOptions{})
		return data
	}
	ctx := context.Background()
	// No follower fetches yet: appended, not acknowledged.
	_, err := produceAcked(ctx, l.broker, server.BatchProduce{Topic: "all", Batches: batch("a"), Acks: server.AcksAll, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, server.ErrRequestTimedOut) || lp.LogEndOffset() != 1 || lp.HighWatermark() != 0 {
		t.Fatalf("acks=all without the follower: %v, log end %d, high watermark %d", err, lp.LogEndOffset(), lp.HighWatermark())
	}
	res, err := l.broker.Fetch(ctx, server.FetchRequest{Topic: "all", Offset: 0, MaxBytes: 1 << 20}, nil)
	if err != nil || res.Size() != 0 {
		t.Fatalf("a consumer read %d bytes above the high watermark (%v)", res.Size(), err)
	}

	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	f.Add(follower)
	done := make(chan error, 1)
	go func() {
		_, err := produceAcked(ctx, l.broker, server.BatchProduce{Topic: "all", Batches: batch("b"), Acks: server.AcksAll, Timeout: 10 * time.Second})
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("acks=all with the follower fetching: %v", err)
	}
	if follower.LogEndOffset() < 2 {
		t.Fatalf("acknowledged, but the follower holds %d records", follower.LogEndOffset())
	}
	harness.WaitFor(t, "the leader's high watermark covers both records", 10*time.Second, func() bool { return lp.HighWatermark() == 2 })
	f.Close()
	_, err = produceAcked(ctx, l.broker, server.BatchProduce{Topic: "all", Batches: batch("c"), Acks: server.AcksAll, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, server.ErrRequestTimedOut) {
		t.Fatalf("acks=all after the follower stopped: %v", err)
	}
	if _, err := produceAcked(ctx, l.broker, server.BatchProduce{Topic: "all", Batches: batch("d"), Acks: server.AcksLeader}); err != nil {
		t.Fatalf("acks=1 after the follower stopped: %v", err)
	}
}

// A returning replica with a divergent tail (it led an epoch the others
// never copied) truncates to the leader's epoch boundary before fetching
// (KIP-101/279), and ends with the leader's log byte for byte.
func TestFetcherTruncatesADivergentTail(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "div", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	epoch1 := replication.Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}
	if err := l.broker.SetPartitionRole("div", 0, epoch1); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		produce(t, l.broker, "div", v)
	}
	p2 := openFollower(t, "div")
	if err := p2.SetRole(epoch1); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	defer f.Close()
	f.Add(p2)
	harness.WaitFor(t, "broker 2 copies epoch 1", 10*time.Second, func() bool { return p2.LogEndOffset() == 3 })
	f.Remove("div", 0)

	// Broker 2 leads epoch 2 alone for a moment: two records nobody copies.
	if err := p2.SetRole(replication.Role{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"x", "y"} {
		if _, err := p2.Append(oneRecord(t, v), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Broker 1 leads epoch 3 and writes three records of its own.
	epoch3 := replication.Role{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}}
	if err := l.broker.SetPartitionRole("div", 0, epoch3); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"d", "e", "f"} {
		produce(t, l.broker, "div", v)
	}
	if err := p2.SetRole(epoch3); err != nil {
		t.Fatal(err)
	}
	f.Add(p2)
	lp, _ := l.broker.Partition("div", 0)
	harness.WaitFor(t, "broker 2 truncates and catches up", 10*time.Second, func() bool { return p2.LogEndOffset() == 6 && p2.HighWatermark() == lp.HighWatermark() })
	if !bytes.Equal(readAll(t, lp), readAll(t, p2)) {
		t.Fatal("after truncation the replica's log differs from the leader's")
	}
	if got := p2.LeaderEpochs(); len(got) != 2 || got[0].Epoch != 1 || got[1].Epoch != 3 || got[1].StartOffset != 3 {
		t.Fatalf("epoch history %v, want epoch 1 from 0 and epoch 3 from 3 (epoch 2 cut)", got)
	}
}

func oneRecord(t *testing.T, v string) []byte {
	t.Helper()
	var bld records.Builder
	bld.Add(records.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()})
	data, err := bld.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A Manager moves a partition between leaders: following it from a leader
// at another address (a new leader, or one restarted elsewhere) starts a
// Fetcher there, stops the old one, and the replica ends with the new
// leader's log.
func TestManagerMovesAPartitionToItsNewLeader(t *testing.T) {
	first, second := startLeader(t, "127.0.0.1:0"), startLeader(t, "127.0.0.1:0")
	for _, l := range []*leader{first, second} {
		if err := l.broker.CreateTopic(server.TopicSpec{Name: "m", Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.broker.SetPartitionRole("m", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	produce(t, first.broker, "m", "a")
	follower := openFollower(t, "m")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	m := fetcher.NewManager(fetcher.Config{BrokerID: 2, MaxWait: 50 * time.Millisecond, Backoff: 20 * time.Millisecond})
	defer m.Close()
	m.Follow(follower, 1, first.addr)
	harness.WaitFor(t, "the copy from the first leader", 10*time.Second, func() bool { return follower.LogEndOffset() == 1 })

	epoch2 := replication.Role{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	if err := second.broker.SetPartitionRole("m", 0, epoch2); err != nil {
		t.Fatal(err)
	}
	produce(t, second.broker, "m", "x", "y")
	if err := follower.SetRole(epoch2); err != nil {
		t.Fatal(err)
	}
	m.Follow(follower, 1, second.addr)
	lp, _ := second.broker.Partition("m", 0)
	harness.WaitFor(t, "the replica holds the second leader's log", 10*time.Second, func() bool {
		return bytes.Equal(readAll(t, lp), readAll(t, follower))
	})
	produce(t, first.broker, "m", "late") // the old leader's appends no longer reach it
	produce(t, second.broker, "m", "z")
	harness.WaitFor(t, "the replica follows the second leader", 10*time.Second, func() bool { return follower.LogEndOffset() == 3 })
	if !bytes.Equal(readAll(t, lp), readAll(t, follower)) {
		t.Fatal("the replica took records from the old leader")
	}
	if l, ok := m.Leader("m", 0); !ok || l != 1 {
		t.Fatalf("Leader: %d %v", l, ok)
	}
	m.Unfollow("m", 0)
	if _, ok := m.Leader("m", 0); ok {
		t.Fatal("still followed after Unfollow")
	}
}

// switchThrottle throttles every partition while held, counting the
// bytes recorded against it.
type switchThrottle struct {
	held     atomic.Bool
	recorded atomic.Int64
	asked    atomic.Int64 // Delay calls: fetch rounds that consulted the throttle
}

func (s *switchThrottle) Throttled(string, int32) bool { return true }
func (s *switchThrottle) Delay(time.Time) time.Duration {
	s.asked.Add(1)
	if s.held.Load() {
		return 20 * time.Millisecond
	}
	return 0
}
func (s *switchThrottle) Record(n int, _ time.Time) { s.recorded.Add(int64(n)) }

// A throttled replica that has not caught up is not fetched while the
// follower rate is used up, is fetched (its bytes recorded) once it is
// not, and once caught up it is copied even while the rate is used up
// (Kafka exempts in-sync replicas).
func TestFetcherHoldsBackAThrottledReplicaUntilItCatchesUp(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "r", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.broker.SetPartitionRole("r", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	produce(t, l.broker, "r", "a", "b", "c")
	follower := openFollower(t, "r")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	throttle := &switchThrottle{}
	throttle.held.Store(true)
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: l.addr, MaxWait: 50 * time.Millisecond,
		Backoff: 20 * time.Millisecond, Throttle: throttle})
	defer f.Close()
	f.Add(follower)
	harness.WaitFor(t, "the fetcher consults the throttle in several rounds", 10*time.Second, func() bool {
		return throttle.asked.Load() >= 5
	})
	if got := follower.LogEndOffset(); got != 0 || throttle.recorded.Load() != 0 {
		t.Fatalf("held back by the throttle, the follower copied to offset %d (%d bytes recorded)", got, throttle.recorded.Load())
	}
	throttle.held.Store(false)
	lp, _ := l.broker.Partition("r", 0)
	want := int64(len(readAll(t, lp)))
	// The fetcher appends, then records: both are waited for.
	harness.WaitFor(t, "the follower copies once the throttle allows", 10*time.Second, func() bool {
		return follower.LogEndOffset() == lp.LogEndOffset() && throttle.recorded.Load() >= want
	})
	if got := throttle.recorded.Load(); got != want {
		t.Fatalf("%d bytes recorded against the throttle; the leader's log is %d", got, want)
	}
	throttle.held.Store(true)
	produce(t, l.broker, "r", "d")
	harness.WaitFor(t, "a caught-up follower copies despite the throttle", 10*time.Second, func() bool {
		return follower.LogEndOffset() == lp.LogEndOffset()
	})
}

// stallingProxy forwards to a target; stallExisting stops the connections
// open at that moment (they stay open, their bytes held, as after a
// network partition TCP has not noticed) while new ones pass.
type stallingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*stallable
}

type stallable struct {
	stalled atomic.Bool
	a, b    net.Conn
}

func startStallingProxy(t *testing.T, target string) *stallingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.a.Close()
			c.b.Close()
		}
	})
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				a.Close()
				continue
			}
			c := &stallable{a: a, b: b}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			go c.copy(a, b)
			go c.copy(b, a)
		}
	}()
	return p
}

func (c *stallable) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if c.stalled.Load() {
			// Held, as by a partition: these bytes and any after them are
			// never delivered, and both connections stay open until the
			// test's cleanup closes them.
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (p *stallingProxy) stallExisting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.stalled.Store(true)
	}
}

// Issue 23: after a network partition heals, a fetch sent before it may
// wait seconds for TCP to retransmit its answer (or the whole request
// timeout). A partition given to the Fetcher (a new role from the
// controller) while its request is long overdue cuts that connection and
// fetches on a new one at once, without the backoff (an hour here).
func TestFetcherReconnectsAtOnceWhenANewRoleFindsItStuck(t *testing.T) {
	l := startLeader(t, "127.0.0.1:0")
	if err := l.broker.CreateTopic(server.TopicSpec{Name: "stuck", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.broker.SetPartitionRole("stuck", 0, twoReplicas); err != nil {
		t.Fatal(err)
	}
	proxy := startStallingProxy(t, l.addr)
	follower := openFollower(t, "stuck")
	if err := follower.SetRole(twoReplicas); err != nil {
		t.Fatal(err)
	}
	f := fetcher.Start(fetcher.Config{BrokerID: 2, Leader: 1, Addr: proxy.ln.Addr().String(), MaxWait: 50 * time.Millisecond, Backoff: time.Hour})
	defer f.Close()
	f.Add(follower)
	produce(t, l.broker, "stuck", "a")
	harness.WaitFor(t, "the follower copies through the proxy", 10*time.Second, func() bool { return follower.LogEndOffset() == 1 })
	proxy.stallExisting()
	produce(t, l.broker, "stuck", "b")
	time.Sleep(1500 * time.Millisecond) // not a condition: the stalled fetch must be overdue (MaxWait + 1 s)
	if follower.LogEndOffset() != 1 {
		t.Fatal("the stalled connection delivered")
	}
	newer := twoReplicas
	newer.LeaderEpoch = 2
	if err := l.broker.SetPartitionRole("stuck", 0, newer); err != nil {
		t.Fatal(err)
	}
	if err := follower.SetRole(newer); err != nil {
		t.Fatal(err)
	}
	f.Add(follower)
	took := harness.WaitFor(t, "the follower copies on a new connection, well within the request timeout", 10*time.Second,
		func() bool { return follower.LogEndOffset() == 2 })
	t.Logf("copied %v after the new role", took)
}

// produceAcked appends as the Kafka listener does and waits for req.Acks.
func produceAcked(ctx context.Context, b *server.Broker, req server.BatchProduce) (server.Appended, error) {
	a, err := b.AppendBatch(ctx, req)
	if err != nil {
		return a, err
	}
	return a, b.WaitAcks(ctx, []server.Appended{a}, cmp.Or(req.Timeout, server.DefaultProduceTimeout))[0]
}
