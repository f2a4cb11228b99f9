package zookeeper

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

var zks zkserver.Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

var chrootSeq atomic.Int64

// testChroot is a fresh chroot per test, so tests share one server.
func testChroot(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/ferry-test/%s-%d-%d", name, os.Getpid(), chrootSeq.Add(1))
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func open(t *testing.T, connect string, timeout time.Duration) *Client {
	t.Helper()
	c, err := Open(connect, timeout, testLogger(t))
	// A loaded machine (CI, brokers of other tests) can keep the shared
	// server from answering within one session timeout: try again.
	for attempt := 1; attempt < 3 && errors.Is(err, ErrConnectionLoss); attempt++ {
		t.Logf("open %s: %v; trying again", connect, err)
		c, err = Open(connect, timeout, testLogger(t))
	}
	if err != nil {
		t.Fatalf("open %s: %v", connect, err)
	}
	t.Cleanup(func() { c.Close() })
	go func() { // tests that care read Events themselves through their own client
		for range c.Events() {
		}
	}()
	return c
}

// openWithEvents opens a client whose events the test reads.
func openWithEvents(t *testing.T, connect string, timeout time.Duration) *Client {
	t.Helper()
	c, err := Open(connect, timeout, testLogger(t))
	if err != nil {
		t.Fatalf("open %s: %v", connect, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// raw reads a znode's bytes with a plain client, as zkCli.sh would.
func raw(t *testing.T, addr, path string) []byte {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data
}

func broker(id int32, port int) BrokerInfo {
	return BrokerInfo{ID: id, JMXPort: -1, Timestamp: 1625336133848,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: port, SecurityProtocol: "PLAINTEXT"}}}
}

func nextSnapshot[T any](t *testing.T, w *Watch[T], ok func(T) bool) T {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case v := <-w.C:
			if ok(v) {
				return v
			}
		case <-deadline:
			t.Fatal("watch: no matching snapshot within 10s")
		}
	}
}

func TestZnodesOnTheServerAreKafkaShaped(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	if err := c.Register(broker(1, 9092)); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "/brokers/ids/1", raw(t, srv.Addr(), root+"/brokers/ids/1"), kafkaBroker)
	id, err := c.GetOrCreateClusterID(sampleUUID.String())
	if err != nil || id != sampleUUID.String() {
		t.Fatal(id, err)
	}
	sameJSON(t, "/cluster/id", raw(t, srv.Addr(), root+"/cluster/id"), kafkaClusterID)
	e, err := c.TryElect(1, 1625336134171)
	if err != nil || e.Epoch != 1 {
		t.Fatalf("elect: %+v %v", e, err)
	}
	sameJSON(t, "/controller", raw(t, srv.Addr(), root+"/controller"), kafkaController)
	sameJSON(t, "/controller_epoch", raw(t, srv.Addr(), root+"/controller_epoch"), "1")
	ta := TopicAssignment{Name: "orders", ID: sampleUUID, Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}}
	if err := c.CreateTopic(ta, map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "/brokers/topics/orders", raw(t, srv.Addr(), root+"/brokers/topics/orders"), kafkaTopic)
	sameJSON(t, "/config/topics/orders", raw(t, srv.Addr(), root+"/config/topics/orders"), kafkaConfig)
	st := PartitionState{Leader: 1, ISR: []int32{1, 2, 3}, ControllerEpoch: 1}
	if err := c.CreatePartitionStates("orders", map[int32]PartitionState{0: st, 1: st, 2: st}, e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "state", raw(t, srv.Addr(), root+"/brokers/topics/orders/partitions/0/state"), kafkaState)
	if err := c.NotifyISRChange([]TopicPartition{{"orders", 0}, {"orders", 2}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "isr change", raw(t, srv.Addr(), root+"/isr_change_notification/isr_change_0000000000"), kafkaISRChange)
	if err := c.CreateReassignment([]Reassignment{{TopicPartition{"orders", 0}, []int32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "reassign", raw(t, srv.Addr(), root+"/admin/reassign_partitions"), kafkaReassign)
	if err := c.SetTopicConfig("orders", map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "config change", raw(t, srv.Addr(), root+"/config/changes/config_change_0000000000"), `{"version":2,"entity_path":"topics/orders"}`)
	for _, p := range topLevelPaths {
		if data := raw(t, srv.Addr(), root+p); data != nil && p != "/config/topics" && p != "/brokers/ids" && p != "/brokers/topics" {
			t.Errorf("%s holds %q, Kafka leaves it null", p, data)
		}
	}
	if err := c.MarkTopicForDeletion("orders"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.TopicsMarkedForDeletion(); err != nil || !reflect.DeepEqual(got, []string{"orders"}) {
		t.Fatalf("deletions: %v %v", got, err)
	}
}

func TestRegisterIsListedAndWatched(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c1 := open(t, srv.Addr()+root, 5*time.Second)
	c2 := open(t, srv.Addr()+root, 5*time.Second)
	w := c1.WatchBrokers()
	defer w.Stop()
	nextSnapshot(t, w, func(bs []BrokerInfo) bool { return len(bs) == 0 })
	if err := c1.Register(broker(1, 9092)); err != nil {
		t.Fatal(err)
	}
	if err := c2.Register(broker(2, 9093)); err != nil {
		t.Fatal(err)
	}
	got := nextSnapshot(t, w, func(bs []BrokerInfo) bool { return len(bs) == 2 })
	if got[0].ID != 1 || got[1].ID != 2 || got[1].Endpoints[0].Port != 9093 {
		t.Fatalf("watched %+v", got)
	}
	list, err := c2.Brokers()
	if err != nil || len(list) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	c2.Close()
	nextSnapshot(t, w, func(bs []BrokerInfo) bool { return len(bs) == 1 && bs[0].ID == 1 })
}

func TestRegisterSameIDWhileAliveFails(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c1 := open(t, srv.Addr()+root, 5*time.Second)
	c2 := open(t, srv.Addr()+root, 5*time.Second)
	if err := c1.Register(broker(7, 9092)); err != nil {
		t.Fatal(err)
	}
	if err := c1.Register(broker(7, 9092)); err != nil {
		t.Fatalf("re-register from the owning session: %v", err)
	}
	err := c2.Register(broker(7, 9093))
	if !errors.Is(err, ErrBrokerIDTaken) {
		t.Fatalf("second register = %v, want ErrBrokerIDTaken", err)
	}
	c1.Close()
	if err := c2.Register(broker(7, 9093)); err != nil {
		t.Fatalf("after the first session ended: %v", err)
	}
}

func TestSessionExpiryReRegisters(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	proxy := zkserver.NewProxy(t, srv.Addr())
	const timeout = 1500 * time.Millisecond
	c := openWithEvents(t, proxy.Addr()+root, timeout)
	observer := open(t, srv.Addr()+root, 5*time.Second)
	if err := c.Register(broker(3, 9092)); err != nil {
		t.Fatal(err)
	}
	w := c.WatchBrokers()
	defer w.Stop()
	nextSnapshot(t, w, func(bs []BrokerInfo) bool { return len(bs) == 1 })
	first := c.SessionID()
	proxy.Cut()
	harness.WaitFor(t, "the ephemeral registration to go", 20*time.Second, func() bool {
		_, err := observer.Broker(3)
		return errors.Is(err, ErrNotFound)
	})
	proxy.Restore()
	var states []SessionState
	deadline := time.After(20 * time.Second)
	for len(states) == 0 || states[len(states)-1] != NewSession {
		select {
		case ev := <-c.Events():
			states = append(states, ev.State)
			if ev.State == NewSession && ev.Err != nil {
				t.Fatalf("re-registration: %v", ev.Err)
			}
		case <-deadline:
			t.Fatalf("no NewSession; got %v", states)
		}
	}
	if !reflect.DeepEqual(states, []SessionState{Disconnected, Expired, NewSession}) {
		t.Errorf("events %v", states)
	}
	if c.SessionID() == first {
		t.Fatal("same session id after expiry")
	}
	b, err := observer.Broker(3)
	if err != nil || b.Endpoints[0].Port != 9092 {
		t.Fatalf("re-registered: %+v %v", b, err)
	}
	// The watch set before the expiry was set again in the new session.
	if err := observer.Register(broker(9, 9099)); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, w, func(bs []BrokerInfo) bool { return len(bs) == 2 && bs[1].ID == 9 })
}

// TestControllerElectionAndFencing: controller 1 loses its session (its
// proxy is cut) while it still believes it leads; broker 2 takes over
// with epoch 2, and controller 1's writes with its old epoch version are
// fenced.
func TestControllerElectionAndFencing(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	proxy := zkserver.NewProxy(t, srv.Addr())
	c1 := open(t, proxy.Addr()+root, 1500*time.Millisecond)
	c2 := open(t, srv.Addr()+root, 5*time.Second)
	w := c2.WatchController()
	defer w.Stop()
	nextSnapshot(t, w, func(s ControllerState) bool { return !s.Present })

	e1, err := c1.TryElect(1, 1)
	if err != nil || e1.Epoch != 1 {
		t.Fatalf("c1 elect: %+v %v", e1, err)
	}
	if _, err := c2.TryElect(2, 2); !errors.Is(err, ErrNotElected) {
		t.Fatalf("c2 elect while c1 leads = %v", err)
	}
	nextSnapshot(t, w, func(s ControllerState) bool { return s.Present && s.ID == 1 })
	if err := c1.CreateTopic(TopicAssignment{Name: "t", Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	st := PartitionState{Leader: 1, ISR: []int32{1, 2}, ControllerEpoch: e1.Epoch}
	if err := c1.CreatePartitionStates("t", map[int32]PartitionState{0: st}, e1.EpochVersion); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	nextSnapshot(t, w, func(s ControllerState) bool { return !s.Present })
	e2, err := c2.TryElect(2, 3)
	if err != nil || e2.Epoch != 2 {
		t.Fatalf("c2 elect: %+v %v", e2, err)
	}
	proxy.Restore()
	cur, err := c1.PartitionState("t", 0) // waits for c1's new session
	if err != nil {
		t.Fatal(err)
	}
	cur.ISR = []int32{1}
	if _, err := c1.UpdatePartitionState("t", 0, cur, e1.EpochVersion); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed controller's write = %v, want ErrControllerMoved", err)
	}
	if _, err := c1.TryElect(1, 4); !errors.Is(err, ErrNotElected) {
		t.Fatalf("deposed controller re-elect = %v", err)
	}
	cur.Leader, cur.ISR, cur.ControllerEpoch = 2, []int32{2}, e2.Epoch
	v, err := c2.UpdatePartitionState("t", 0, cur, e2.EpochVersion)
	if err != nil || v != cur.Version+1 {
		t.Fatalf("new controller's write: %d %v", v, err)
	}
	if err := c1.Resign(e1); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("deposed resign = %v", err)
	}
	if err := c2.Resign(e2); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, w, func(s ControllerState) bool { return !s.Present })
	if e3, err := c1.TryElect(1, 5); err != nil || e3.Epoch != 3 {
		t.Fatalf("third election: %+v %v", e3, err)
	}
}

// DeposeController deletes /controller only while it names the broker
// given; the deposed controller's writes are then fenced by its
// successor's epoch.
func TestDeposeController(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c1 := open(t, srv.Addr()+root, 5*time.Second)
	c2 := open(t, srv.Addr()+root, 5*time.Second)
	if ok, err := c2.DeposeController(1); ok || err != nil {
		t.Fatalf("deposing without a controller = %v, %v", ok, err)
	}
	e1, err := c1.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c2.DeposeController(3); ok || err != nil {
		t.Fatalf("deposing another broker = %v, %v", ok, err)
	}
	if id, err := c2.Controller(); err != nil || id != 1 {
		t.Fatalf("controller = %d, %v", id, err)
	}
	if ok, err := c2.DeposeController(1); !ok || err != nil {
		t.Fatalf("deposing the controller = %v, %v", ok, err)
	}
	if _, err := c2.Controller(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("controller after deposing = %v", err)
	}
	if ok, err := c2.DeposeController(1); ok || err != nil {
		t.Fatalf("deposing twice = %v, %v", ok, err)
	}
	e2, err := c2.TryElect(2, 2)
	if err != nil || e2.Epoch != e1.Epoch+1 {
		t.Fatalf("election after deposing: %+v %v", e2, err)
	}
	if ok, err := c1.DeposeController(1); ok || err != nil {
		t.Fatalf("deposing a broker no longer controller = %v, %v", ok, err)
	}
	if err := c1.Resign(e1); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("the deposed controller's fenced delete = %v, want ErrControllerMoved", err)
	}
}

func TestOpenWithoutServerFails(t *testing.T) {
	start := time.Now()
	_, err := Open("127.0.0.1:1/x", 500*time.Millisecond, testLogger(t))
	if !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("open = %v", err)
	}
	t.Logf("gave up after %v", time.Since(start))
	for _, bad := range []string{"", "/x", "h:1/a//b", "h:1/a/../b"} {
		if _, _, err := ParseConnect(bad); err == nil {
			t.Errorf("ParseConnect(%q) accepted", bad)
		}
	}
	servers, chroot, err := ParseConnect("a:1,b:2/kafka/prod/")
	if err != nil || !reflect.DeepEqual(servers, []string{"a:1", "b:2"}) || chroot != "/kafka/prod" {
		t.Fatalf("%v %q %v", servers, chroot, err)
	}
}

func TestStalePartitionStateVersion(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	e, err := c.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := PartitionState{Leader: 1, ISR: []int32{1, 2, 3}, ControllerEpoch: e.Epoch}
	if err := c.CreatePartitionStates("t", map[int32]PartitionState{0: st}, e.EpochVersion); !errors.Is(err, ErrNotFound) {
		t.Fatalf("states before the topic = %v", err)
	}
	if err := c.CreateTopic(TopicAssignment{Name: "t", Partitions: map[int32][]int32{0: {1, 2, 3}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitionStates("t", map[int32]PartitionState{0: st}, e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	read, err := c.PartitionState("t", 0)
	if err != nil || read.Version != 0 {
		t.Fatalf("%+v %v", read, err)
	}
	// The leader shrinks the ISR (version 0 → 1)…
	shrunk := read
	shrunk.ISR = []int32{1, 2}
	if v, err := c.UpdateISR("t", 0, shrunk); err != nil || v != 1 {
		t.Fatalf("isr write: %d %v", v, err)
	}
	// …and replaying that same write is recognised as already applied.
	if v, err := c.UpdateISR("t", 0, shrunk); err != nil || v != 1 {
		t.Fatalf("replayed isr write: %d %v", v, err)
	}
	// A writer still at version 0 with other content loses.
	other := read
	other.ISR = []int32{1}
	if _, err := c.UpdateISR("t", 0, other); !errors.Is(err, ErrStalePartitionState) {
		t.Fatalf("stale isr write = %v", err)
	}
	other.Leader = 2
	if _, err := c.UpdatePartitionState("t", 0, other, e.EpochVersion); !errors.Is(err, ErrStalePartitionState) {
		t.Fatalf("stale controller write = %v", err)
	}
}

func TestISRChangeNotificationsRoundTrip(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	leader := open(t, srv.Addr()+root, 5*time.Second)
	controller := open(t, srv.Addr()+root, 5*time.Second)
	e, err := controller.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := controller.WatchISRChanges()
	defer w.Stop()
	nextSnapshot(t, w, func(n []string) bool { return len(n) == 0 })
	for i := int32(0); i < 3; i++ {
		if err := leader.NotifyISRChange([]TopicPartition{{"t", i}}); err != nil {
			t.Fatal(err)
		}
	}
	nextSnapshot(t, w, func(n []string) bool { return len(n) == 3 })
	changes, err := controller.ISRChanges()
	if err != nil || len(changes) != 3 {
		t.Fatalf("%v %v", changes, err)
	}
	var names []string
	for i, ch := range changes {
		if ch.Err != nil || !reflect.DeepEqual(ch.Partitions, []TopicPartition{{"t", int32(i)}}) {
			t.Fatalf("change %d: %+v", i, ch)
		}
		names = append(names, ch.Name)
	}
	if err := controller.DeleteISRChanges(names, e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, w, func(n []string) bool { return len(n) == 0 })
	if err := controller.DeleteISRChanges(names, e.EpochVersion+1); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("fenced delete = %v", err)
	}
}

func TestTopicsCreateExistsConfigAndWatch(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	w := c.WatchTopics()
	defer w.Stop()
	nextSnapshot(t, w, func(n []string) bool { return len(n) == 0 })
	ta := TopicAssignment{Name: "a", ID: sampleUUID, Partitions: map[int32][]int32{0: {1}, 1: {2}}}
	if err := c.CreateTopic(ta, map[string]string{"retention.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic(ta, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create = %v", err)
	}
	nextSnapshot(t, w, func(n []string) bool { return reflect.DeepEqual(n, []string{"a"}) })
	got, err := c.Topic("a")
	if err != nil || got.ID != sampleUUID || len(got.Partitions) != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	if err := c.SetTopicConfig("a", map[string]string{"retention.ms": "9"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := c.TopicConfig("a"); err != nil || cfg["retention.ms"] != "9" {
		t.Fatalf("%v %v", cfg, err)
	}
	if _, err := c.Topic("../x"); err == nil {
		t.Fatal("a bad topic name was accepted")
	}
	if _, err := c.Topic("missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing = %v", err)
	}
}

func TestChrootsAreIsolated(t *testing.T) {
	srv := zks.Require(t)
	a := open(t, srv.Addr()+testChroot(t), 5*time.Second)
	b := open(t, srv.Addr()+testChroot(t), 5*time.Second)
	if err := a.Register(broker(1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Register(broker(1, 2)); err != nil {
		t.Fatalf("same id in another chroot: %v", err)
	}
	if err := a.CreateTopic(TopicAssignment{Name: "only-a", Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	ea, err := a.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.TryElect(1, 1)
	if err != nil || ea.Epoch != 1 || eb.Epoch != 1 {
		t.Fatalf("elections: %+v %+v %v", ea, eb, err)
	}
	if topics, _ := b.Topics(); len(topics) != 0 {
		t.Fatalf("b sees %v", topics)
	}
	if bs, _ := b.Brokers(); len(bs) != 1 || bs[0].Endpoints[0].Port != 2 {
		t.Fatalf("b sees brokers %+v", bs)
	}
}

func TestZooKeeperRestartKeepsSession(t *testing.T) {
	srv := zkserver.Start(t)
	root := "/restart"
	c := openWithEvents(t, srv.Addr()+root, 10*time.Second)
	if err := c.Register(broker(4, 9092)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryElect(4, 1); err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()
	start := time.Now()
	srv.Restart()
	t.Logf("zookeeper restarted in %v", time.Since(start))
	deadline := time.After(45 * time.Second)
	for reconnected := false; !reconnected; {
		select {
		case ev := <-c.Events():
			if ev.State == Expired || ev.State == NewSession {
				t.Fatalf("session lost across a short restart: %v", ev.State)
			}
			reconnected = ev.State == Reconnected
		case <-deadline:
			t.Fatal("no reconnect within 45s")
		}
	}
	if c.SessionID() != session {
		t.Fatal("new session")
	}
	if _, err := c.Broker(4); err != nil {
		t.Fatalf("registration after restart: %v", err)
	}
	if id, err := c.Controller(); err != nil || id != 4 {
		t.Fatalf("controller after restart: %d %v", id, err)
	}
}

func TestAdminZnodesAndTopicDeletion(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	c := open(t, srv.Addr()+root, 5*time.Second)
	e, err := c.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	ta := TopicAssignment{Name: "gone", ID: sampleUUID, Partitions: map[int32][]int32{0: {1, 2}, 1: {2, 1}}}
	if err := c.CreateTopic(ta, map[string]string{"retention.ms": "1"}); err != nil {
		t.Fatal(err)
	}
	tw, err := c.WatchTopic("gone")
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Stop()
	nextSnapshot(t, tw, func(s TopicSnapshot) bool { return s.Present && len(s.Assignment.Partitions) == 2 })
	st := PartitionState{Leader: 1, ISR: []int32{1, 2}, ControllerEpoch: 1}
	if err := c.CreatePartitionStates("gone", map[int32]PartitionState{0: st, 1: st}, e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	if states, err := c.PartitionStates("gone"); err != nil || len(states) != 2 || states[1].Leader != 1 {
		t.Fatalf("states %v %v", states, err)
	}

	rw := c.WatchReassignments()
	defer rw.Stop()
	nextSnapshot(t, rw, func(rs []Reassignment) bool { return rs == nil })
	rs := []Reassignment{{TopicPartition{"gone", 0}, []int32{2, 3}}, {TopicPartition{"gone", 1}, []int32{3, 2}}}
	if err := c.CreateReassignment(rs); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateReassignment(rs); !errors.Is(err, ErrReassignmentInProgress) {
		t.Fatalf("second reassignment = %v", err)
	}
	nextSnapshot(t, rw, func(got []Reassignment) bool { return reflect.DeepEqual(got, rs) })
	if err := c.SetReassignments(rs[1:], e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, rw, func(got []Reassignment) bool { return reflect.DeepEqual(got, rs[1:]) })
	if err := c.DeleteReassignments(e.EpochVersion + 1); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("fenced delete = %v", err)
	}
	if err := c.DeleteReassignments(e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, rw, func(got []Reassignment) bool { return got == nil })

	dw := c.WatchTopicDeletions()
	defer dw.Stop()
	nextSnapshot(t, dw, func(n []string) bool { return len(n) == 0 })
	if err := c.MarkTopicForDeletion("gone"); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkTopicForDeletion("gone"); err != nil {
		t.Fatalf("marking twice: %v", err)
	}
	nextSnapshot(t, dw, func(n []string) bool { return reflect.DeepEqual(n, []string{"gone"}) })
	if err := c.DeleteTopicZnodes("gone", e.EpochVersion+1); !errors.Is(err, ErrControllerMoved) {
		t.Fatalf("fenced topic delete = %v", err)
	}
	if err := c.DeleteTopicZnodes("gone", e.EpochVersion); err != nil {
		t.Fatal(err)
	}
	nextSnapshot(t, tw, func(s TopicSnapshot) bool { return !s.Present })
	nextSnapshot(t, dw, func(n []string) bool { return len(n) == 0 })
	if _, err := c.TopicConfig("gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("config after delete = %v", err)
	}
	if topics, _ := c.Topics(); len(topics) != 0 {
		t.Fatalf("topics after delete %v", topics)
	}
}

// LastContact follows the server's answers to the session's pings (every
// third of the timeout), so when a silent partition (nothing closes the
// connection) is noticed, two thirds of the timeout later, it still says
// when the server was last heard: where ZooKeeper counts the session's
// timeout from (replication/fence).
func TestLastContactIsTheLastRead(t *testing.T) {
	srv := zks.Require(t)
	proxy := zkserver.NewProxy(t, srv.Addr())
	const timeout = 3 * time.Second
	c := openWithEvents(t, proxy.Addr()+testChroot(t), timeout)
	opened := c.LastContact()
	if time.Since(opened) > time.Second {
		t.Fatalf("last contact %v ago, just after Open", time.Since(opened))
	}
	harness.WaitFor(t, "a ping's answer moves the last contact", 5*time.Second, func() bool { return c.LastContact().After(opened) })
	paused := time.Now()
	proxy.Pause()
	defer proxy.Resume()
	for ev := range c.Events() {
		if ev.State != Disconnected {
			continue
		}
		last := c.LastContact()
		if last.After(paused) || time.Since(last) < timeout/3 {
			t.Fatalf("noticed the silence %v after the last contact, which was %v before the pause", time.Since(last), paused.Sub(last))
		}
		t.Logf("noticed the silence %v after the last contact (%v after the pause)", time.Since(last).Round(time.Millisecond), time.Since(paused).Round(time.Millisecond))
		return
	}
}
