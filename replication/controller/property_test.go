package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-mq/ferry/replication/assign"
)

// chaos drives a controller with random events against a simulated
// ZooKeeper whose results come back late and out of order, with leaders
// changing ISRs concurrently and controllers failing over.
type chaos struct {
	t       *testing.T
	r       *rand.Rand
	c       *Controller
	epoch   int32
	epochZk int32
	ids     []int32 // every broker id that exists
	live    map[int32]int64
	stopped map[int32]bool // asked for controlled shutdown
	// fenced: registered brokers the controller was told are gone
	// (BrokerFenced), by the registration's epoch.
	fenced  map[int32]int64
	topics  map[string]Topic
	unclean map[string]bool
	znode   map[TopicPartition]LeaderAndIsr
	// pending holds ZooKeeper work and notifications not yet delivered.
	pending   []func() []Event
	nextEpoch int64
	lastEpoch map[TopicPartition]int32
	lastLead  map[TopicPartition]int32
	log       []string
	// asked: brokers with a ControlledShutdown request not yet answered.
	asked map[int32]bool
}

func newChaos(t *testing.T, seed uint64) *chaos {
	h := &chaos{
		t: t, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		live: map[int32]int64{}, stopped: map[int32]bool{}, fenced: map[int32]int64{}, topics: map[string]Topic{},
		unclean: map[string]bool{}, znode: map[TopicPartition]LeaderAndIsr{},
		lastEpoch: map[TopicPartition]int32{}, lastLead: map[TopicPartition]int32{},
		nextEpoch: 1000, asked: map[int32]bool{},
	}
	for id := int32(1); id <= 5; id++ {
		h.ids = append(h.ids, id)
		h.live[id] = h.newEpoch()
	}
	h.failover()
	return h
}

func (h *chaos) newEpoch() int64 { h.nextEpoch++; return h.nextEpoch }

func (h *chaos) liveBrokers() []Broker {
	var out []Broker
	for _, id := range h.ids {
		if e, ok := h.live[id]; ok {
			out = append(out, Broker{ID: id, Epoch: e})
		}
	}
	return out
}

func (h *chaos) step(ev Event) {
	h.log = append(h.log, fmt.Sprintf("%T%+v", ev, ev))
	for _, a := range h.c.Step(ev) {
		h.queue(a)
	}
	h.check()
}

func (h *chaos) queue(a Action) {
	switch a := a.(type) {
	case WritePartitionState:
		h.pending = append(h.pending, func() []Event { return h.write(a) })
	case ReadPartitionStates:
		h.pending = append(h.pending, func() []Event { return []Event{h.read(a)} })
	case SendLeaderAndIsr, SendUpdateMetadata, SendStopReplica:
		h.checkRequestEpoch(a)
	case AnswerControlledShutdown:
		h.checkAnswer(a)
	}
}

// checkAnswer: an answer names exactly the partitions of more than one
// replica that the broker still leads.
func (h *chaos) checkAnswer(a AnswerControlledShutdown) {
	if !h.asked[a.Broker] {
		h.fail("unasked answer %+v", a)
	}
	delete(h.asked, a.Broker)
	if a.Err != nil {
		return
	}
	for tp, st := range h.znode {
		replicas := h.topics[tp.Topic].Partitions[tp.Partition].Replicas
		leads := st.Leader == a.Broker && len(replicas) > 1
		if leads != slices.Contains(a.Remaining, tp) {
			h.fail("answer %+v: %v is %+v", a, tp, st)
		}
	}
}

func (h *chaos) checkRequestEpoch(a Action) {
	var e int32
	switch a := a.(type) {
	case SendLeaderAndIsr:
		e = a.ControllerEpoch
	case SendUpdateMetadata:
		e = a.ControllerEpoch
	case SendStopReplica:
		e = a.ControllerEpoch
	}
	if e != h.epoch {
		h.fail("request with controller epoch %d, current %d", e, h.epoch)
	}
}

func (h *chaos) write(w WritePartitionState) []Event {
	if w.ControllerEpochZkVersion != h.epochZk {
		return nil // fenced: a deposed controller's write fails, and it has resigned
	}
	cur, exists := h.znode[w.Partition]
	if (w.ExpectedZkVersion == NoZkVersion) == exists || (exists && cur.ZkVersion != w.ExpectedZkVersion) {
		return []Event{StateWriteConflict{ControllerEpoch: w.ControllerEpoch, Partition: w.Partition}}
	}
	st := w.State.clone()
	st.ZkVersion = 0
	if exists {
		st.ZkVersion = cur.ZkVersion + 1
	}
	h.put(w.Partition, st)
	return []Event{StateWritten{ControllerEpoch: w.ControllerEpoch, Partition: w.Partition, ZkVersion: st.ZkVersion}}
}

func (h *chaos) read(r ReadPartitionStates) Event {
	ev := PartitionStatesRead{ControllerEpoch: r.ControllerEpoch, States: map[TopicPartition]LeaderAndIsr{}}
	for _, tp := range r.Partitions {
		if st, ok := h.znode[tp]; ok {
			ev.States[tp] = st.clone()
		} else {
			ev.Missing = append(ev.Missing, tp)
		}
	}
	return ev
}

// put writes a znode and checks the epoch invariant on ZooKeeper's truth.
func (h *chaos) put(tp TopicPartition, st LeaderAndIsr) {
	if last, ok := h.lastEpoch[tp]; ok {
		if st.LeaderEpoch < last {
			h.fail("%v leader epoch went back from %d to %d", tp, last, st.LeaderEpoch)
		}
		if st.Leader != h.lastLead[tp] && st.LeaderEpoch == last {
			h.fail("%v leader changed %d → %d without a new epoch", tp, h.lastLead[tp], st.Leader)
		}
	}
	h.lastEpoch[tp], h.lastLead[tp] = st.LeaderEpoch, st.Leader
	h.znode[tp] = st
}

func (h *chaos) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf(format+"\nlast events:\n%s", append(args, tail(h.log, 15))...)
}

func tail(log []string, n int) string {
	out := ""
	for _, l := range log[max(0, len(log)-n):] {
		out += "  " + l + "\n"
	}
	return out
}

// check asserts the invariants on ZooKeeper's state.
func (h *chaos) check() {
	for tp, st := range h.znode {
		replicas := h.topics[tp.Topic].Partitions[tp.Partition].Replicas
		if len(st.ISR) == 0 {
			h.fail("%v: empty ISR %+v", tp, st)
		}
		if st.Leader == NoLeader {
			continue
		}
		if !slices.Contains(st.ISR, st.Leader) || !slices.Contains(replicas, st.Leader) {
			h.fail("%v: leader %d not in ISR %v or replicas %v", tp, st.Leader, st.ISR, replicas)
		}
		for i, id := range st.ISR {
			if !slices.Contains(replicas, id) || slices.Contains(st.ISR[i+1:], id) {
				h.fail("%v: ISR %v not a set of replicas %v", tp, st.ISR, replicas)
			}
		}
	}
}

func (h *chaos) failover() {
	h.epoch++
	h.epochZk++
	snap := Snapshot{Brokers: h.liveBrokers(), States: map[TopicPartition]LeaderAndIsr{}}
	for _, t := range h.topics {
		t.UncleanLeaderElection = h.unclean[t.Name]
		snap.Topics = append(snap.Topics, t)
	}
	for tp, st := range h.znode {
		snap.States[tp] = st.clone()
	}
	h.stopped = map[int32]bool{} // a new controller knows of no shutdown
	h.fenced = map[int32]int64{} // nor of fences: its driver probes anew
	if h.c == nil {
		h.c = New()
	}
	if h.r.IntN(2) == 0 {
		h.step(Resigned{}) // the new controller is another broker
		h.c = New()
	}
	h.step(Elected{Epoch: h.epoch, EpochZkVersion: h.epochZk, Snapshot: snap})
}

func (h *chaos) randomEvent() {
	switch n := h.r.IntN(100); {
	case n < 35:
		h.deliver()
	case n < 45:
		h.kill()
	case n < 55:
		h.start()
	case n < 58:
		h.bounce()
	case n < 70:
		h.leaderChangesIsr()
	case n < 75:
		h.controlledShutdown()
	case n < 82:
		h.createTopic()
	case n < 85:
		t := fmt.Sprintf("t%d", h.r.IntN(len(h.topics)+1))
		if _, ok := h.topics[t]; ok {
			h.unclean[t] = !h.unclean[t]
			h.step(TopicConfigChanged{Topic: t, UncleanLeaderElection: h.unclean[t]})
		}
	case n < 87:
		h.failover()
	case n < 90:
		h.fence()
	case n < 92:
		h.unfence()
	default:
		h.deliver()
	}
}

func (h *chaos) deliver() {
	if len(h.pending) == 0 {
		return
	}
	i := h.r.IntN(len(h.pending))
	f := h.pending[i]
	h.pending = slices.Delete(h.pending, i, i+1)
	for _, ev := range f() {
		h.step(ev)
	}
}

func (h *chaos) kill() {
	if len(h.live) <= 1 {
		return
	}
	id := h.ids[h.r.IntN(len(h.ids))]
	delete(h.live, id)
	delete(h.stopped, id)
	delete(h.fenced, id)
	h.step(BrokersChanged{Live: h.liveBrokers()})
}

// fence plays the driver finding a registered broker's listener refusing
// connections; unfence, a fenced broker's listener answering again.
func (h *chaos) fence() {
	id := h.ids[h.r.IntN(len(h.ids))]
	e, ok := h.live[id]
	if !ok || len(h.live)-len(h.fenced) <= 1 {
		return
	}
	h.fenced[id] = e
	delete(h.stopped, id)
	h.step(BrokerFenced{Broker: id, Epoch: e})
}

func (h *chaos) unfence() {
	id := h.ids[h.r.IntN(len(h.ids))]
	e, ok := h.fenced[id]
	if !ok {
		return
	}
	delete(h.fenced, id)
	h.step(BrokerUnfenced{Broker: id, Epoch: e})
}

func (h *chaos) start() {
	id := h.ids[h.r.IntN(len(h.ids))]
	if _, ok := h.live[id]; ok {
		return
	}
	h.live[id] = h.newEpoch()
	h.step(BrokersChanged{Live: h.liveBrokers()})
}

func (h *chaos) bounce() {
	id := h.ids[h.r.IntN(len(h.ids))]
	if _, ok := h.live[id]; !ok {
		return
	}
	h.live[id] = h.newEpoch()
	delete(h.stopped, id)
	delete(h.fenced, id)
	h.step(BrokersChanged{Live: h.liveBrokers()})
}

// leaderChangesIsr plays a live leader shrinking or expanding its ISR at
// the znode's current version, with the notification delivered later.
func (h *chaos) leaderChangesIsr() {
	tps := sortedTPs(h.znode)
	if len(tps) == 0 {
		return
	}
	tp := tps[h.r.IntN(len(tps))]
	st := h.znode[tp].clone()
	if _, ok := h.live[st.Leader]; !ok || st.Leader == NoLeader {
		return
	}
	replicas := h.topics[tp.Topic].Partitions[tp.Partition].Replicas
	r := replicas[h.r.IntN(len(replicas))]
	_, rLive := h.live[r]
	switch {
	case r == st.Leader:
		return
	case slices.Contains(st.ISR, r):
		st.ISR = slices.DeleteFunc(st.ISR, func(id int32) bool { return id == r })
	case rLive && !h.stopped[r]:
		st.ISR = append(st.ISR, r)
	default:
		return
	}
	st.ZkVersion++
	h.put(tp, st)
	h.pending = append(h.pending, func() []Event {
		cur, ok := h.znode[tp]
		if !ok {
			return nil
		}
		return []Event{IsrChangeNotified{States: map[TopicPartition]LeaderAndIsr{tp: cur.clone()}}}
	})
}

func (h *chaos) controlledShutdown() {
	id := h.ids[h.r.IntN(len(h.ids))]
	if e, ok := h.live[id]; ok {
		h.stopped[id] = true
		h.asked[id] = true
		h.step(ControlledShutdownRequested{Broker: id, BrokerEpoch: e})
	}
}

func (h *chaos) createTopic() {
	name := fmt.Sprintf("t%d", len(h.topics))
	var bs []assign.Broker
	for _, id := range h.ids {
		bs = append(bs, assign.Broker{ID: id})
	}
	lists, err := assign.Assign(bs, 1+h.r.IntN(4), 1+h.r.IntN(3), assign.Options{Rand: h.r})
	if err != nil {
		h.t.Fatal(err)
	}
	topic := Topic{Name: name, Partitions: map[int32]Assignment{}, UncleanLeaderElection: h.r.IntN(4) == 0}
	for i, l := range lists {
		topic.Partitions[int32(i)] = Assignment{Replicas: l}
	}
	h.topics[name] = topic
	h.unclean[name] = topic.UncleanLeaderElection
	h.step(TopicCreated{Topic: topic})
}

// settle delivers everything left and checks that the controller did all
// it could: no partition led by a dead broker, none without a leader while
// one of its ISR members (or, unclean, replicas) could lead.
func (h *chaos) settle() {
	for i := 0; len(h.pending) > 0; i++ {
		if i > 100000 {
			h.fail("does not settle")
		}
		h.deliver()
	}
	if len(h.asked) > 0 {
		h.fail("controlled shutdowns never answered: %v", h.asked)
	}
	for id, n := range h.c.busy {
		if n != 0 {
			h.fail("broker %d counted busy %d with nothing out", id, n)
		}
	}
	live := func(id int32) bool { _, ok := h.live[id]; _, fenced := h.fenced[id]; return ok && !fenced }
	eligible := func(id int32) bool { return live(id) && !h.stopped[id] }
	for tp, st := range h.znode {
		replicas := h.topics[tp.Topic].Partitions[tp.Partition].Replicas
		if h.c.Pending(tp) {
			h.fail("%v still pending", tp)
		}
		if st.Leader != NoLeader {
			if !live(st.Leader) {
				h.fail("%v led by dead or fenced broker %d", tp, st.Leader)
			}
			continue
		}
		if slices.ContainsFunc(st.ISR, eligible) || (h.unclean[tp.Topic] && slices.ContainsFunc(replicas, eligible)) {
			h.fail("%v has no leader but could: %+v, live %v", tp, st, h.live)
		}
	}
	for name, t := range h.topics {
		for p, a := range t.Partitions {
			tp := TopicPartition{name, p}
			if _, ok := h.znode[tp]; !ok && slices.ContainsFunc(a.Replicas, eligible) {
				h.fail("%v never created though replicas %v can host it", tp, a.Replicas)
			}
		}
	}
}

func TestRandomEventSequencesKeepInvariants(t *testing.T) {
	for seed := uint64(1); seed <= chaosSeeds; seed++ {
		h := newChaos(t, seed)
		for i := 0; i < 300; i++ {
			h.randomEvent()
		}
		h.settle()
	}
}

// chaosSeeds is raised by hand for a longer hunt.
var chaosSeeds uint64 = 300
