package group

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
)

// fakeClock is the coordinator's injected clock: it moves only when a test
// advances it, and Tick applies whatever became due.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

type testEnv struct {
	t      *testing.T
	dir    string
	broker *server.Broker
	c      *Coordinator
	clock  *fakeClock
	cfg    Config
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestEnv opens a broker on a temp dir and a coordinator on a fake
// clock with no background loop; the initial delay is 3 s of fake time.
// __consumer_offsets gets 3 partitions, not the default 50: enough to
// spread groups over several, without creating 50 logs per test.
func newTestEnv(t *testing.T, mutate ...func(*Config)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir(), clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}}
	e.cfg = Config{Logger: testLogger(t), Now: e.clock.Now, ManualTick: true,
		InitialRebalanceDelay: 3 * time.Second, MinSessionTimeout: time.Millisecond, OffsetsTopicPartitions: 3}
	for _, m := range mutate {
		m(&e.cfg)
	}
	e.open()
	t.Cleanup(e.close)
	return e
}

func (e *testEnv) open() {
	e.t.Helper()
	b, err := server.Open(server.Config{DataDir: e.dir, AutoCreateTopics: true, AdvertisedKafkaAddr: "broker.example:19092"}, testLogger(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := New(b, e.cfg)
	if err != nil {
		b.Close()
		e.t.Fatal(err)
	}
	e.broker, e.c = b, c
}

func (e *testEnv) close() {
	if e.c != nil {
		e.c.Close()
		e.broker.Close()
		e.c, e.broker = nil, nil
	}
}

func (e *testEnv) createTopic(name string, partitions int32) {
	e.t.Helper()
	if err := e.broker.CreateTopic(server.TopicSpec{Name: name, Partitions: partitions}); err != nil {
		e.t.Fatal(err)
	}
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
	return m.AppendTo(nil)
}

func joinReq(version int16, group, memberID string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group, r.MemberID = group, memberID
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 20000
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMeta("t")
	r.Protocols = append(r.Protocols, p)
	return r
}

// joinAsync sends a JoinGroup that may block; the answer arrives on the channel.
func (e *testEnv) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- e.c.HandleJoinGroup(context.Background(), req) }()
	return ch
}

func (e *testEnv) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- e.c.HandleSyncGroup(context.Background(), req) }()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer to %s", what)
		panic("unreachable")
	}
}

func notYet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s answered early: %+v", what, v)
	case <-time.After(20 * time.Millisecond):
	}
}

// waitFor polls the group until cond holds (joins register asynchronously).
func (e *testEnv) waitFor(group string, cond func(g *group) bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if g := e.c.lockGroup(group, false); g != nil {
			ok := cond(g)
			g.mu.Unlock()
			if ok {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	e.t.Fatalf("group %s never reached the expected condition", group)
}

func joinedCount(n int) func(*group) bool {
	return func(g *group) bool {
		c := 0
		for _, m := range g.members {
			if m.joinWait != nil {
				c++
			}
		}
		return c == n
	}
}

// joinNew does the v4+ two-step first join and returns the member id the
// coordinator handed out and the pending join.
func (e *testEnv) joinNew(version int16, group string) (string, <-chan *kmsg.JoinGroupResponse) {
	e.t.Helper()
	first := e.c.HandleJoinGroup(context.Background(), joinReq(version, group, ""))
	if version < 4 {
		e.t.Fatal("joinNew is for v4+")
	}
	if first.ErrorCode != errMemberIDRequired || first.MemberID == "" {
		e.t.Fatalf("first join: code %d member %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	w := e.joinAsync(joinReq(version, group, first.MemberID))
	e.waitFor(group, memberPresent(first.MemberID))
	return first.MemberID, w
}

func syncReq(version int16, group, memberID string, gen int32, assign map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group, r.MemberID, r.Generation = version, group, memberID, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func (e *testEnv) heartbeat(version int16, group, memberID string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.Generation = version, group, memberID, gen
	return e.c.HandleHeartbeat(context.Background(), r).ErrorCode
}

func (e *testEnv) state(group string) string {
	d, ok := e.c.Describe(group)
	if !ok {
		return "Dead"
	}
	return d.State
}

// stableGroup forms a group of n members (JoinGroup v9, SyncGroup v5)
// during the initial rebalance delay and returns their ids in join order,
// the leader and the generation. Member i is assigned partition i of "t".
func (e *testEnv) stableGroup(group string, n int) (ids []string, leader string, gen int32) {
	e.t.Helper()
	var waits []<-chan *kmsg.JoinGroupResponse
	for i := 0; i < n; i++ {
		id, w := e.joinNew(9, group)
		ids = append(ids, id)
		waits = append(waits, w)
	}
	e.waitFor(group, joinedCount(n))
	for _, w := range waits {
		notYet(e.t, w, "join during the initial delay")
		break
	}
	e.clock.Advance(e.cfg.InitialRebalanceDelay)
	e.c.Tick()
	for i, w := range waits {
		resp := recv(e.t, w, "join")
		if resp.ErrorCode != 0 || resp.MemberID != ids[i] {
			e.t.Fatalf("join %d: code %d member %q", i, resp.ErrorCode, resp.MemberID)
		}
		leader, gen = resp.LeaderID, resp.Generation
		if resp.LeaderID == resp.MemberID && len(resp.Members) != n {
			e.t.Fatalf("leader got %d members, want %d", len(resp.Members), n)
		}
	}
	e.syncAll(group, ids, leader, gen)
	return ids, leader, gen
}

func assignmentFor(partitions ...int32) []byte {
	a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: partitions}}}
	return a.AppendTo(nil)
}

// syncAll syncs every member; the leader assigns partition i to ids[i].
func (e *testEnv) syncAll(group string, ids []string, leader string, gen int32) {
	e.t.Helper()
	assign := map[string][]byte{}
	for i, id := range ids {
		assign[id] = assignmentFor(int32(i))
	}
	var waits []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids {
		if id != leader {
			waits = append(waits, e.syncAsync(syncReq(5, group, id, gen, nil)))
		}
	}
	waits = append(waits, e.syncAsync(syncReq(5, group, leader, gen, assign)))
	for _, w := range waits {
		if resp := recv(e.t, w, "sync"); resp.ErrorCode != 0 {
			e.t.Fatalf("sync: code %d", resp.ErrorCode)
		}
	}
	if st := e.state(group); st != "Stable" {
		e.t.Fatalf("state %s after sync, want Stable", st)
	}
}

func memberPresent(id string) func(*group) bool {
	return func(g *group) bool { return g.members[id] != nil }
}
