package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/zkserver"
)

// Two candidates: one wins epoch 1; when its session expires (its network
// to ZooKeeper cut past the session timeout) the other takes over with
// epoch 2, and the first, back on the network, does not act.
func TestElectionAndFailover(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	log := testLogger(t)
	observer := openZK(t, srv.Addr()+root, 10*time.Second, log, nil)
	const session = 1500 * time.Millisecond
	proxies := map[int32]*zkserver.Proxy{}
	drivers := map[int32]*Controller{}
	for _, id := range []int32{1, 2} {
		proxies[id] = zkserver.NewProxy(t, srv.Addr())
		events := make(chan zookeeper.SessionEvent, 16)
		zk := openZK(t, proxies[id].Addr()+root, session, log, events)
		drivers[id], _ = startDriver(t, id, zk, events, log)
	}
	var first int32
	harness.WaitFor(t, "a controller", 10*time.Second, func() bool {
		for id, d := range drivers {
			if d.Status().Active {
				first = id
				return true
			}
		}
		return false
	})
	if epoch, _, err := observer.ControllerEpoch(); err != nil || epoch != 1 {
		t.Fatalf("/controller_epoch = %d (%v), want 1", epoch, err)
	}
	other := 3 - first
	if drivers[other].Status().Active {
		t.Fatal("both candidates act as controller")
	}

	proxies[first].Cut()
	took := harness.WaitFor(t, "the other candidate to take over", 20*time.Second, func() bool {
		return drivers[other].Status().Active && drivers[other].Status().Epoch == 2
	})
	t.Logf("failover: session cut to new controller active in %v (session timeout %v)", took, session)
	if epoch, _, err := observer.ControllerEpoch(); err != nil || epoch != 2 {
		t.Fatalf("/controller_epoch = %d (%v), want 2", epoch, err)
	}
	if id, err := observer.Controller(); err != nil || id != other {
		t.Fatalf("/controller = %d (%v), want %d", id, err, other)
	}
	proxies[first].Restore()
	harness.WaitFor(t, "the deposed controller to resign", 20*time.Second, func() bool { return !drivers[first].Status().Active })
}

// cluster is two brokers registered in ZooKeeper and a controller (id 3,
// a candidate that holds no partitions) driving them.
type cluster struct {
	connect string
	log     *slog.Logger
	zk      *zookeeper.Client // an observer's session
	brokers map[int32]*testBroker
	ctl     *Controller
	stop    context.CancelFunc
}

func newCluster(t *testing.T) *cluster {
	srv := zks.Require(t)
	root := testChroot(t)
	log := testLogger(t)
	cl := &cluster{connect: srv.Addr() + root, log: log, zk: openZK(t, srv.Addr()+root, 10*time.Second, log, nil), brokers: map[int32]*testBroker{}}
	for _, id := range []int32{1, 2} {
		cl.brokers[id] = startBroker(t, id, cl.connect, log)
	}
	cl.ctl = cl.startController(t, 3)
	harness.WaitFor(t, "the controller", 10*time.Second, func() bool { return cl.ctl.Status().Active })
	return cl
}

// startController runs a candidate with its own session.
func (cl *cluster) startController(t *testing.T, id int32) *Controller {
	events := make(chan zookeeper.SessionEvent, 16)
	c, stop := startDriver(t, id, openZK(t, cl.connect, 10*time.Second, cl.log, events), events, cl.log)
	cl.stop = stop
	return c
}

// stopController ends the running candidate's Run and waits until it
// gave /controller up.
func (cl *cluster) stopController(t *testing.T) {
	cl.stop()
	harness.WaitFor(t, "the controller to resign", 10*time.Second, func() bool {
		_, err := cl.zk.Controller()
		return !cl.ctl.Status().Active && errors.Is(err, zookeeper.ErrNotFound)
	})
}

func (cl *cluster) waitState(t *testing.T, topic string, want func(zookeeper.PartitionState) bool) zookeeper.PartitionState {
	t.Helper()
	var st zookeeper.PartitionState
	harness.WaitFor(t, "the partition state znode", 10*time.Second, func() bool {
		var err error
		st, err = cl.zk.PartitionState(topic, 0)
		return err == nil && want(st)
	})
	return st
}

// (b) a topic written to ZooKeeper gets its state znode and both brokers
// their roles; (d) an ISR change notification is read and deleted; (c) the
// leader leaving /brokers/ids moves leadership to the other broker.
func TestControllerDrivesBrokers(t *testing.T) {
	cl := newCluster(t)
	b1, b2 := cl.brokers[1], cl.brokers[2]
	for _, b := range []*testBroker{b1, b2} {
		b.createLocalTopic(t, "rep", 1)
	}
	if err := cl.zk.CreateTopic(zookeeper.TopicAssignment{Name: "rep", Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}

	st := cl.waitState(t, "rep", func(zookeeper.PartitionState) bool { return true })
	if st.Leader != 1 || st.LeaderEpoch != 0 || !slices.Equal(st.ISR, []int32{1, 2}) || st.ControllerEpoch != 1 {
		t.Fatalf("state znode %+v, want leader 1, epoch 0, ISR [1 2], controller epoch 1", st)
	}
	harness.WaitFor(t, "broker 2 to follow broker 1", 10*time.Second, func() bool {
		leader, ok := b2.core.FollowingFrom("rep", 0)
		return ok && leader == 1
	})
	if code, off := b1.produce(t, "rep", -1, "a"); code != 0 || off != 0 {
		t.Fatalf("acks=all to the leader: error %d, offset %d", code, off)
	}
	if p, _ := b2.core.Partition("rep", 0); p.LogEndOffset() != 1 {
		t.Fatalf("acknowledged, but the follower has %d records", p.LogEndOffset())
	}
	if code, _ := b2.produce(t, "rep", 1, "x"); code == 0 {
		t.Fatal("the follower took a produce")
	}

	t.Run("isr change notification", func(t *testing.T) {
		sent := cl.ctl.metrics.count("UpdateMetadata", -1)
		shrunk := st
		shrunk.ISR = []int32{1}
		v, err := b1.zk.UpdateISR("rep", 0, shrunk)
		if err != nil {
			t.Fatal(err)
		}
		grown := shrunk
		grown.ISR, grown.Version = []int32{1, 2}, v
		if err := b1.zk.NotifyISRChange([]zookeeper.TopicPartition{{Topic: "rep", Partition: 0}}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, "the notification to be handled", 10*time.Second, func() bool {
			pending, err := cl.zk.ISRChanges()
			return err == nil && len(pending) == 0 && cl.ctl.metrics.count("UpdateMetadata", -1) > sent
		})
		// The leader expands the ISR again; the controller learns of it too.
		if _, err := b1.zk.UpdateISR("rep", 0, grown); err != nil {
			t.Fatal(err)
		}
		if err := b1.zk.NotifyISRChange([]zookeeper.TopicPartition{{Topic: "rep", Partition: 0}}); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, "the second notification to be handled", 10*time.Second, func() bool {
			pending, err := cl.zk.ISRChanges()
			return err == nil && len(pending) == 0
		})
	})

	t.Run("leader leaves", func(t *testing.T) {
		told := cl.ctl.metrics.count("LeaderAndIsr", 2)
		gone := time.Now()
		if err := b1.zk.Deregister(); err != nil {
			t.Fatal(err)
		}
		st := cl.waitState(t, "rep", func(st zookeeper.PartitionState) bool { return st.Leader == 2 })
		written := time.Since(gone)
		harness.WaitFor(t, "LeaderAndIsr to broker 2", 10*time.Second, func() bool { return cl.ctl.metrics.count("LeaderAndIsr", 2) > told })
		delivered := time.Since(gone)
		if st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{2}) {
			t.Fatalf("after broker 1 left: %+v, want leader 2, epoch 1, ISR [2]", st)
		}
		var code int16
		took := harness.WaitFor(t, "broker 2 to take produce", 10*time.Second, func() bool {
			code, _ = b2.produce(t, "rep", -1, "b")
			return code == 0
		})
		t.Logf("failover after Deregister: state znode seen %v, LeaderAndIsr delivered %v, first acks=all produce answered %v (produce polling %v)",
			written, delivered, time.Since(gone), took)
		if p, _ := b2.core.Partition("rep", 0); p.LeaderEpoch() != 1 {
			t.Fatalf("broker 2 leads in epoch %d, want 1", p.LeaderEpoch())
		}
	})
}

// (e) a controller whose election was superseded, and that has not
// noticed (its /controller watch is withheld here, which a real one
// would only lag), tries its first write, finds the epoch fence failed,
// and stops: no state znode, no request sent.
func TestStaleControllerStopsActing(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	log := testLogger(t)
	zkA := openZK(t, srv.Addr()+root, 10*time.Second, log, nil)
	zkB := openZK(t, srv.Addr()+root, 10*time.Second, log, nil)
	stale, err := zkA.TryElect(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := zkA.Resign(stale); err != nil {
		t.Fatal(err)
	}
	if _, err := zkB.TryElect(2, 2); err != nil {
		t.Fatal(err)
	}
	err = zkB.Register(zookeeper.BrokerInfo{ID: 1, JMXPort: -1, Timestamp: 1,
		Endpoints: []zookeeper.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1, SecurityProtocol: "PLAINTEXT"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := zkB.CreateTopic(zookeeper.TopicAssignment{Name: "t", Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}

	a, err := New(Config{BrokerID: 1, ZK: zkA, Logger: log, RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.lead(ctx, stale, nil, nil)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the stale controller kept acting")
	}
	if a.Status().Active {
		t.Fatal("still active after the fence failed")
	}
	if _, err := zkB.PartitionState("t", 0); !errors.Is(err, zookeeper.ErrNotFound) {
		t.Fatalf("the stale controller wrote the state znode: %v", err)
	}
	if n := a.metrics.count("LeaderAndIsr", -1); n != 0 {
		t.Fatalf("the stale controller delivered %d LeaderAndIsr", n)
	}
	if _, err := a.ControlledShutdown(ctxShort(t), 1, -1); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, controller.ErrNotController) {
		t.Fatalf("ControlledShutdown on a driver that is not running: %v", err)
	}
}

func ctxShort(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// createReplicated creates topic on both brokers' cores and in ZooKeeper
// with one partition on [1, 2], and waits for broker 2 to follow broker 1.
func (cl *cluster) createReplicated(t *testing.T, topic string) {
	t.Helper()
	for _, b := range cl.brokers {
		b.createLocalTopic(t, topic, 1)
	}
	if err := cl.zk.CreateTopic(zookeeper.TopicAssignment{Name: topic, Partitions: map[int32][]int32{0: {1, 2}}}, nil); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "broker 2 to follow broker 1", 10*time.Second, func() bool {
		leader, ok := cl.brokers[2].core.FollowingFrom(topic, 0)
		return ok && leader == 1
	})
}

// Controlled shutdown of the leader moves leadership to the other ISR
// member before the call returns with nothing left to move.
func TestControlledShutdownMovesLeadership(t *testing.T) {
	cl := newCluster(t)
	cl.createReplicated(t, "cs")
	if code, _ := cl.brokers[1].produce(t, "cs", -1, "a"); code != 0 {
		t.Fatalf("acks=all before the shutdown: error %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	remaining, err := cl.ctl.ControlledShutdown(ctx, 1, -1)
	answered := time.Since(start)
	if err != nil || len(remaining) != 0 {
		t.Fatalf("ControlledShutdown = %v, %v; want nothing remaining", remaining, err)
	}
	st, err := cl.zk.PartitionState("cs", 0)
	if err != nil || st.Leader != 2 || st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{2}) {
		t.Fatalf("after the drain: %+v %v; want leader 2, epoch 1, ISR [2]", st, err)
	}
	harness.WaitFor(t, "broker 2 to take produce", 10*time.Second, func() bool {
		code, _ := cl.brokers[2].produce(t, "cs", -1, "b")
		return code == 0
	})
	t.Logf("controlled shutdown: answered in %v, first acks=all produce on the new leader %v after the ask", answered, time.Since(start))
	if _, err := cl.ctl.ControlledShutdown(ctx, 7, -1); !errors.Is(err, controller.ErrBrokerNotAvailable) {
		t.Fatalf("an unregistered broker's ask: %v, want ErrBrokerNotAvailable", err)
	}
}

// The leader's session expires (its network to ZooKeeper cut): the
// controller elects the other ISR member, which then takes acks=all
// produce. Measures session loss → LeaderAndIsr delivered → produce.
func TestLeaderSessionLossFailover(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	log := testLogger(t)
	const session = 1500 * time.Millisecond
	proxy := zkserver.NewProxy(t, srv.Addr())
	cl := &cluster{zk: openZK(t, srv.Addr()+root, 10*time.Second, log, nil), brokers: map[int32]*testBroker{
		1: startBrokerSession(t, 1, proxy.Addr()+root, session, log),
		2: startBroker(t, 2, srv.Addr()+root, log),
	}}
	events := make(chan zookeeper.SessionEvent, 16)
	cl.ctl, _ = startDriver(t, 3, openZK(t, srv.Addr()+root, 10*time.Second, log, events), events, log)
	cl.createReplicated(t, "exp")
	told := cl.ctl.metrics.count("LeaderAndIsr", 2)
	cut := time.Now()
	proxy.Cut()
	harness.WaitFor(t, "LeaderAndIsr to broker 2", 20*time.Second, func() bool { return cl.ctl.metrics.count("LeaderAndIsr", 2) > told })
	delivered := time.Since(cut)
	harness.WaitFor(t, "broker 2 to take produce", 10*time.Second, func() bool {
		code, _ := cl.brokers[2].produce(t, "exp", -1, "b")
		return code == 0
	})
	t.Logf("failover after session loss (timeout %v): LeaderAndIsr delivered %v, first acks=all produce %v", session, delivered, time.Since(cut))
	st, err := cl.zk.PartitionState("exp", 0)
	if err != nil || st.Leader != 2 || st.LeaderEpoch != 1 {
		t.Fatalf("state %+v %v", st, err)
	}
}

// A leader whose listener closes while its session lives (what a kill -9
// looks like until the session expires, 10 s here) is fenced on the
// refused connections: broker 2 leads, in a new leader epoch, while broker
// 1 is still registered.
func TestClosedListenerFencesTheLeader(t *testing.T) {
	cl := newCluster(t)
	cl.createReplicated(t, "gone")
	if code, _ := cl.brokers[1].produce(t, "gone", -1, "a"); code != 0 {
		t.Fatalf("acks=all before: error %d", code)
	}
	reg, err := cl.zk.Broker(1)
	if err != nil {
		t.Fatal(err)
	}
	// Refusals from a broker registered under 5 s ago count only once a
	// probe saw it accepting (a starting broker registers, then listens).
	harness.WaitFor(t, "a probe to see broker 1 accepting", 5*time.Second, func() bool { return cl.ctl.seenUp.seen(1, reg.Timestamp) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closed := time.Now()
	cl.brokers[1].srv.Shutdown(ctx)
	harness.WaitFor(t, "broker 2 to lead, before broker 1's session (10 s) could expire", 5*time.Second, func() bool {
		st, err := cl.zk.PartitionState("gone", 0)
		return err == nil && st.Leader == 2
	})
	t.Logf("leadership moved %v after the listener closed", time.Since(closed).Round(time.Millisecond))
	if _, err := cl.zk.Broker(1); err != nil {
		t.Fatalf("broker 1's registration: %v (the move must come before its session expires)", err)
	}
	st, err := cl.zk.PartitionState("gone", 0)
	if err != nil || st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{2}) {
		t.Fatalf("state %+v %v, want leader 2, epoch 1, ISR [2]", st, err)
	}
	harness.WaitFor(t, "broker 2 to take acks=all produce", 10*time.Second, func() bool {
		code, _ := cl.brokers[2].produce(t, "gone", -1, "b")
		return code == 0
	})
}

// A new controller resumes what the old one left: a topic created while
// no controller ran gets its state znode (in the new epoch), and every
// broker hears the new controller epoch.
func TestNewControllerResumes(t *testing.T) {
	cl := newCluster(t)
	cl.createReplicated(t, "before")
	stopped := time.Now()
	cl.stopController(t)
	for _, b := range cl.brokers {
		b.createLocalTopic(t, "during", 1)
	}
	if err := cl.zk.CreateTopic(zookeeper.TopicAssignment{Name: "during", Partitions: map[int32][]int32{0: {2, 1}}}, nil); err != nil {
		t.Fatal(err)
	}
	next := cl.startController(t, 4)
	harness.WaitFor(t, "the new controller", 10*time.Second, func() bool { return next.Status().Active && next.Status().Epoch == 2 })
	st := cl.waitState(t, "during", func(zookeeper.PartitionState) bool { return true })
	if st.Leader != 2 || st.ControllerEpoch != 2 || !slices.Equal(st.ISR, []int32{2, 1}) {
		t.Fatalf("state of the topic created between controllers: %+v", st)
	}
	harness.WaitFor(t, "broker 1 to follow broker 2 on the new topic", 10*time.Second, func() bool {
		leader, ok := cl.brokers[1].core.FollowingFrom("during", 0)
		return ok && leader == 2
	})
	t.Logf("controller handover: old one stopped to the new one's first LeaderAndIsr handled in %v", time.Since(stopped))
	if code, _ := cl.brokers[1].produce(t, "before", -1, "x"); code != 0 {
		t.Fatalf("produce on the old topic after the handover: error %d", code)
	}
}

// A topic of many partitions (brokers are fakes that answer every
// request) gets all its state znodes, and a broker's death moves every
// leader; the test reports how long each took.
func TestManyPartitions(t *testing.T) {
	srv := zks.Require(t)
	root := testChroot(t)
	log := testLogger(t)
	zk := openZK(t, srv.Addr()+root, 10*time.Second, log, nil)
	regs := map[int32]*zookeeper.Client{}
	for _, id := range []int32{1, 2} {
		f := newFakeBroker(t, 0, nil)
		regs[id] = openZK(t, srv.Addr()+root, 10*time.Second, log, nil)
		b := f.broker(id)
		if err := regs[id].Register(zookeeper.BrokerInfo{ID: id, JMXPort: -1, Timestamp: 1, Endpoints: b.Endpoints.([]zookeeper.Endpoint)}); err != nil {
			t.Fatal(err)
		}
	}
	events := make(chan zookeeper.SessionEvent, 16)
	ctl, _ := startDriver(t, 3, openZK(t, srv.Addr()+root, 10*time.Second, log, events), events, log)
	harness.WaitFor(t, "the controller", 10*time.Second, func() bool { return ctl.Status().Active })
	const n = 500
	parts := map[int32][]int32{}
	for p := range int32(n) {
		parts[p] = []int32{1 + p%2, 2 - p%2}
	}
	if err := zk.CreateTopic(zookeeper.TopicAssignment{Name: "many", Partitions: parts}, nil); err != nil {
		t.Fatal(err)
	}
	allStates := func(want func(zookeeper.PartitionState) bool) func() bool {
		return func() bool {
			states, err := zk.PartitionStates("many")
			if err != nil || len(states) != n {
				return false
			}
			for _, st := range states {
				if !want(st) {
					return false
				}
			}
			return true
		}
	}
	created := harness.WaitFor(t, "every state znode", 60*time.Second, func() bool { return ctl.stateWrites.Load() == n })
	if !allStates(func(zookeeper.PartitionState) bool { return true })() {
		t.Fatal("the writes are counted but the state znodes are not all there")
	}
	if err := regs[1].Deregister(); err != nil {
		t.Fatal(err)
	}
	moved := harness.WaitFor(t, "every leader on broker 2", 60*time.Second, func() bool { return ctl.stateWrites.Load() == 2*n })
	if !allStates(func(st zookeeper.PartitionState) bool { return st.Leader == 2 && slices.Equal(st.ISR, []int32{2}) })() {
		t.Fatal("not every partition is led by broker 2 alone")
	}
	t.Logf("%d partitions: state znodes created in %v; broker 1 gone to every state rewritten in %v", n, created, moved)
}

// ZooKeeper restarting (within the session timeout) does not end the
// controller's term: afterwards it still acts, in the same epoch.
func TestControllerSurvivesZooKeeperRestart(t *testing.T) {
	srv := zkserver.Start(t)
	log := testLogger(t)
	connect := srv.Addr() + testChroot(t)
	zk := openZK(t, connect, 10*time.Second, log, nil)
	f := newFakeBroker(t, 0, nil)
	reg := openZK(t, connect, 10*time.Second, log, nil)
	if err := reg.Register(zookeeper.BrokerInfo{ID: 1, JMXPort: -1, Timestamp: 1, Endpoints: f.broker(1).Endpoints.([]zookeeper.Endpoint)}); err != nil {
		t.Fatal(err)
	}
	events := make(chan zookeeper.SessionEvent, 16)
	ctl, _ := startDriver(t, 3, openZK(t, connect, 10*time.Second, log, events), events, log)
	harness.WaitFor(t, "the controller", 10*time.Second, func() bool { return ctl.Status().Active })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := zk.CreateTopic(zookeeper.TopicAssignment{Name: "after", Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	var st zookeeper.PartitionState
	harness.WaitFor(t, "the state znode of a topic created after the restart", 45*time.Second, func() bool {
		var err error
		st, err = zk.PartitionState("after", 0)
		return err == nil
	})
	if s := ctl.Status(); !s.Active || s.Epoch != 1 || s.Terms != 1 || st.ControllerEpoch != 1 || st.Leader != 1 {
		t.Fatalf("after the restart: status %+v, state %+v", s, st)
	}
}
