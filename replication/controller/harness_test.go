package controller

import (
	"fmt"
	"slices"
	"testing"
)

// zkSim is a test driver: it plays ZooKeeper's part for the state znodes
// (versioned, conditional writes) and records what went to brokers.
type zkSim struct {
	t     testing.TB
	c     *Controller
	znode map[TopicPartition]LeaderAndIsr
	// sent collects broker-directed actions and answers of every step.
	sent []Action
	// trace renders every action of every step, ZooKeeper's included.
	trace []string
	// hook runs before each write is applied; tests use it to race the
	// controller (a leader changing the ISR first).
	hook func(w WritePartitionState)
}

func newSim(t testing.TB) *zkSim {
	return &zkSim{t: t, c: New(), znode: map[TopicPartition]LeaderAndIsr{}}
}

// run steps ev and then performs every ZooKeeper action, feeding the
// outcomes back, until none is left. It returns the broker-directed
// actions of all those steps.
func (s *zkSim) run(ev Event) []Action {
	s.sent = nil
	queue := []Event{ev}
	for i := 0; len(queue) > 0; i++ {
		if i > 10000 {
			s.t.Fatal("controller does not settle")
		}
		ev, queue = queue[0], queue[1:]
		for _, a := range s.c.Step(ev) {
			queue = append(queue, s.perform(a)...)
		}
	}
	return s.sent
}

func (s *zkSim) perform(a Action) []Event {
	s.trace = append(s.trace, render(a))
	switch a := a.(type) {
	case WritePartitionState:
		if s.hook != nil {
			s.hook(a)
		}
		return []Event{s.write(a)}
	case ReadPartitionStates:
		return []Event{s.read(a)}
	case WriteTopicAssignment:
		return []Event{AssignmentWritten{ControllerEpoch: a.ControllerEpoch, Topic: a.Topic}}
	default:
		s.sent = append(s.sent, a)
		return nil
	}
}

func (s *zkSim) write(w WritePartitionState) Event {
	cur, exists := s.znode[w.Partition]
	ok := (w.ExpectedZkVersion == NoZkVersion && !exists) || (exists && cur.ZkVersion == w.ExpectedZkVersion)
	if !ok {
		return StateWriteConflict{ControllerEpoch: w.ControllerEpoch, Partition: w.Partition}
	}
	st := w.State.clone()
	st.ZkVersion = 0
	if exists {
		st.ZkVersion = cur.ZkVersion + 1
	}
	s.znode[w.Partition] = st
	return StateWritten{ControllerEpoch: w.ControllerEpoch, Partition: w.Partition, ZkVersion: st.ZkVersion}
}

func (s *zkSim) read(r ReadPartitionStates) Event {
	ev := PartitionStatesRead{ControllerEpoch: r.ControllerEpoch, States: map[TopicPartition]LeaderAndIsr{}}
	for _, tp := range r.Partitions {
		if st, ok := s.znode[tp]; ok {
			ev.States[tp] = st.clone()
		} else {
			ev.Missing = append(ev.Missing, tp)
		}
	}
	return ev
}

// leaderSetsIsr plays a partition leader writing its ISR (keeping the
// leader epoch) and the notification that follows.
func (s *zkSim) leaderSetsIsr(tp TopicPartition, isr ...int32) []Action {
	st := s.znode[tp]
	st.ISR = isr
	st.ZkVersion++
	s.znode[tp] = st
	return s.run(IsrChangeNotified{States: map[TopicPartition]LeaderAndIsr{tp: st.clone()}})
}

func (s *zkSim) state(tp TopicPartition) LeaderAndIsr {
	s.t.Helper()
	st, ok := s.c.State(tp)
	if !ok {
		s.t.Fatalf("%v has no state", tp)
	}
	if z := s.znode[tp]; z.ZkVersion != st.ZkVersion || z.Leader != st.Leader || !slices.Equal(z.ISR, st.ISR) {
		s.t.Fatalf("%v: controller has %+v, ZooKeeper %+v", tp, st, z)
	}
	return st
}

func (s *zkSim) wantState(tp TopicPartition, leader, epoch int32, isr ...int32) {
	s.t.Helper()
	st := s.state(tp)
	if st.Leader != leader || st.LeaderEpoch != epoch || !slices.Equal(st.ISR, isr) {
		s.t.Fatalf("%v: got leader %d epoch %d isr %v, want leader %d epoch %d isr %v",
			tp, st.Leader, st.LeaderEpoch, st.ISR, leader, epoch, isr)
	}
}

func brokers(ids ...int32) []Broker {
	out := make([]Broker, len(ids))
	for i, id := range ids {
		out[i] = Broker{ID: id, Epoch: int64(100 + id), Endpoints: fmt.Sprintf("b%d:9092", id)}
	}
	return out
}

func tp(p int32) TopicPartition { return TopicPartition{"t", p} }

func topic(name string, assignment ...[]int32) Topic {
	t := Topic{Name: name, Partitions: map[int32]Assignment{}}
	for i, r := range assignment {
		t.Partitions[int32(i)] = Assignment{Replicas: r}
	}
	return t
}

func leaderAndIsrTo(actions []Action, broker int32) (SendLeaderAndIsr, bool) {
	for _, a := range actions {
		if l, ok := a.(SendLeaderAndIsr); ok && l.Broker == broker {
			return l, true
		}
	}
	return SendLeaderAndIsr{}, false
}

func leaderAndIsrRecipients(actions []Action, p TopicPartition) []int32 {
	var out []int32
	for _, a := range actions {
		if l, ok := a.(SendLeaderAndIsr); ok {
			for _, info := range l.Partitions {
				if info.Partition == p {
					out = append(out, l.Broker)
				}
			}
		}
	}
	return out
}

func ofType[T Action](actions []Action) []T {
	var out []T
	for _, a := range actions {
		if x, ok := a.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// metadataFor lists the brokers told about p by UpdateMetadata, and the
// live-broker list of the last such request.
func metadataFor(actions []Action, p TopicPartition) (to []int32, live []int32) {
	for _, um := range ofType[SendUpdateMetadata](actions) {
		for _, info := range um.Partitions {
			if info.Partition == p {
				to = append(to, um.Brokers...)
				live = live[:0]
				for _, b := range um.LiveBrokers {
					live = append(live, b.ID)
				}
			}
		}
	}
	slices.Sort(to)
	return to, live
}
