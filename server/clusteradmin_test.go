package server

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
)

// fakeController is a controller driver (or a broker reached through the
// peers): it answers elections from answer, or ErrNotController when it
// is not active, counting the requests it got.
type fakeController struct {
	active bool
	// block, when set, holds every request until ctx ends (a frozen
	// controller that keeps its connections open).
	block bool
	// onCall, when set, runs on each request.
	onCall func()
	calls  atomic.Int32
}

func (f *fakeController) ElectLeaders(ctx context.Context, _ controller.ElectionType, parts []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	f.calls.Add(1)
	if f.onCall != nil {
		f.onCall()
	}
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if !f.active {
		return nil, controller.ErrNotController
	}
	out := map[controller.TopicPartition]error{}
	for _, tp := range parts {
		out[tp] = nil
	}
	return out, nil
}

func (f *fakeController) AlterReassignments(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	f.calls.Add(1)
	if !f.active {
		return nil, controller.ErrNotController
	}
	out := map[controller.TopicPartition]error{}
	for tp := range targets {
		out[tp] = controller.ErrNoReassignmentInProgress
	}
	return out, nil
}

func (f *fakeController) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	f.calls.Add(1)
	if !f.active {
		return nil, controller.ErrNotController
	}
	return map[controller.TopicPartition]controller.Assignment{{Topic: "t", Partition: 0}: {Replicas: []int32{1, 2}, Adding: []int32{2}}}, nil
}

// fakePeers are the other brokers, by id; a broker not among them is
// unreachable (ErrControllerNotAvailable, as server/forward answers).
type fakePeers struct {
	mu      sync.Mutex
	brokers map[int32]*fakeController
	sizes   map[int32]map[controller.TopicPartition]int64
}

func (p *fakePeers) Controller(id int32) ControllerAdmin {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.brokers[id]; ok {
		return c
	}
	return unreachable{id}
}

func (p *fakePeers) LogDirSizes(_ context.Context, broker int32, _ []controller.TopicPartition) (map[controller.TopicPartition]int64, error) {
	s, ok := p.sizes[broker]
	if !ok {
		return nil, ErrControllerNotAvailable
	}
	return maps.Clone(s), nil
}

type unreachable struct{ id int32 }

func (u unreachable) ElectLeaders(context.Context, controller.ElectionType, []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	return nil, ErrControllerNotAvailable
}

func (u unreachable) AlterReassignments(context.Context, map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	return nil, ErrControllerNotAvailable
}

func (u unreachable) Reassignments(context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	return nil, ErrControllerNotAvailable
}

// clusterAdmin is broker 1's Admin, whose view names controller as the
// controller, with a local driver and peers.
func clusterAdmin(t *testing.T, controllerID int32, local *fakeController, peers *fakePeers, timeout time.Duration) (*Broker, *Admin) {
	t.Helper()
	b := newTestBroker(t, func(c *Config) { c.BrokerID = 1 })
	setController(t, b, controllerID, 1)
	return b, NewAdmin(b, AdminConfig{Controller: local, Peers: peers, ForwardTimeout: timeout})
}

func setController(t *testing.T, b *Broker, id, epoch int32) {
	t.Helper()
	if err := b.ApplyUpdateMetadata(id, epoch, []ClusterBroker{{ID: 1}, {ID: 2}, {ID: 3}}, nil); err != nil {
		t.Fatal(err)
	}
}

var tp0 = controller.TopicPartition{Topic: "t", Partition: 0}

// On the controller the operations go to its own driver; the peers are
// never asked.
func TestAdminOnTheControllerAsksItsDriver(t *testing.T) {
	local := &fakeController{active: true}
	remote := &fakeController{active: true}
	_, a := clusterAdmin(t, 1, local, &fakePeers{brokers: map[int32]*fakeController{2: remote}}, time.Second)
	res, err := a.ElectLeaders(context.Background(), controller.PreferredElection, []controller.TopicPartition{tp0})
	if err != nil || len(res) != 1 || res[tp0] != nil {
		t.Fatalf("ElectLeaders: %v, %v", res, err)
	}
	if local.calls.Load() != 1 || remote.calls.Load() != 0 {
		t.Fatalf("local asked %d times, remote %d", local.calls.Load(), remote.calls.Load())
	}
}

// Elsewhere they are sent to the controller the view names, and its
// answer is the answer; at this broker only (the Kafka listener's) they
// answer NOT_CONTROLLER instead.
func TestAdminForwardsToTheController(t *testing.T) {
	local := &fakeController{}
	remote := &fakeController{active: true}
	_, a := clusterAdmin(t, 2, local, &fakePeers{brokers: map[int32]*fakeController{2: remote}}, time.Second)
	moving, err := a.Reassignments(context.Background())
	if err != nil || len(moving) != 1 {
		t.Fatalf("Reassignments: %v, %v", moving, err)
	}
	res, err := a.AlterReassignments(context.Background(), map[controller.TopicPartition][]int32{tp0: nil})
	if err != nil || !errors.Is(res[tp0], controller.ErrNoReassignmentInProgress) {
		t.Fatalf("AlterReassignments: %v, %v", res, err)
	}
	if remote.calls.Load() != 2 {
		t.Fatalf("the controller was asked %d times, want 2", remote.calls.Load())
	}
	if _, err := a.AtThisBroker().Reassignments(context.Background()); !errors.Is(err, controller.ErrNotController) {
		t.Fatalf("at this broker: %v, want ErrNotController", err)
	}
	if remote.calls.Load() != 2 {
		t.Fatal("AtThisBroker forwarded")
	}
}

// A controller that answers NOT_CONTROLLER (it lost the election) is left
// for the one the view names next.
func TestAdminFollowsAMovingController(t *testing.T) {
	old, next := &fakeController{}, &fakeController{active: true}
	b, a := clusterAdmin(t, 2, &fakeController{}, &fakePeers{brokers: map[int32]*fakeController{2: old, 3: next}}, 5*time.Second)
	old.onCall = func() { setController(t, b, 3, 2) } // broker 3 won meanwhile
	res, err := a.ElectLeaders(context.Background(), controller.PreferredElection, []controller.TopicPartition{tp0})
	if err != nil || len(res) != 1 {
		t.Fatalf("ElectLeaders: %v, %v", res, err)
	}
	if next.calls.Load() != 1 {
		t.Fatalf("the new controller was asked %d times", next.calls.Load())
	}
}

// A controller that holds the request (frozen) or cannot be reached is
// given up after the forward timeout, with ErrControllerNotAvailable.
func TestAdminGivesUpOnASilentController(t *testing.T) {
	for name, peers := range map[string]*fakePeers{
		"frozen":      {brokers: map[int32]*fakeController{2: {block: true}}},
		"unreachable": {},
	} {
		t.Run(name, func(t *testing.T) {
			_, a := clusterAdmin(t, 2, &fakeController{}, peers, 300*time.Millisecond)
			start := time.Now()
			_, err := a.ElectLeaders(context.Background(), controller.PreferredElection, nil)
			if !errors.Is(err, ErrControllerNotAvailable) {
				t.Fatalf("ElectLeaders: %v, want ErrControllerNotAvailable", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("gave up after %v, want about 300ms", took)
			}
		})
	}
}

// A caller that stops waiting gets its own context's error, not a
// controller's absence.
func TestAdminCallerCancels(t *testing.T) {
	_, a := clusterAdmin(t, 2, &fakeController{}, &fakePeers{brokers: map[int32]*fakeController{2: {block: true}}}, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Reassignments(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reassignments: %v, want the caller's deadline", err)
	}
}

// A single node answers itself: its one replica leads every partition and
// is the only assignment there is.
func TestAdminOnASingleNode(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	a := NewAdmin(b, AdminConfig{})
	res, err := a.ElectLeaders(context.Background(), controller.PreferredElection, nil)
	if err != nil || len(res) != 2 || !errors.Is(res[tp0], controller.ErrElectionNotNeeded) {
		t.Fatalf("ElectLeaders: %v, %v", res, err)
	}
	if _, err := a.ElectLeaders(context.Background(), 7, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("election type 7: %v", err)
	}
	gone := controller.TopicPartition{Topic: "t", Partition: 9}
	alt, err := a.AlterReassignments(context.Background(), map[controller.TopicPartition][]int32{tp0: {5}, gone: {0}})
	if err != nil || !errors.Is(alt[tp0], controller.ErrInvalidReplicaAssignment) || !errors.Is(alt[gone], controller.ErrUnknownPartition) {
		t.Fatalf("AlterReassignments: %v, %v", alt, err)
	}
	plan, err := a.PlanReassignment([]string{"t"}, []int32{0})
	if err != nil || len(plan.Current) != 2 || len(plan.Proposed) != 2 {
		t.Fatalf("PlanReassignment: %+v, %v", plan, err)
	}
	if _, err := a.PlanReassignment([]string{"t"}, []int32{4}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("a plan on broker 4: %v", err)
	}
}

// A move's progress counts what the adding replica holds of the leader's
// log; a broker that does not answer leaves its moves out.
func TestAdminReassignmentProgress(t *testing.T) {
	tp1 := controller.TopicPartition{Topic: "t", Partition: 1}
	peers := &fakePeers{sizes: map[int32]map[controller.TopicPartition]int64{
		2: {tp0: 1000, tp1: 50},
		3: {tp0: 400},
	}}
	b, a := clusterAdmin(t, 2, &fakeController{}, peers, time.Second)
	if err := b.ApplyUpdateMetadata(2, 1, []ClusterBroker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}, map[TopicPartition]PartitionView{
		{Topic: "t", Partition: 0}: {Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2}},
		{Topic: "t", Partition: 1}: {Leader: 2, Replicas: []int32{2, 4}, ISR: []int32{2}},
	}); err != nil {
		t.Fatal(err)
	}
	got := a.ReassignmentProgress(context.Background(), map[controller.TopicPartition]controller.Assignment{
		tp0: {Replicas: []int32{2, 3}, Adding: []int32{3}},
		tp1: {Replicas: []int32{2, 4}, Adding: []int32{4}}, // broker 4 does not answer
	})
	if len(got) != 1 || got[tp0] != (MoveProgress{BytesCopied: 400, BytesToCopy: 1000}) {
		t.Fatalf("progress %v", got)
	}
}
