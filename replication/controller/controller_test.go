package controller

import (
	"errors"
	"slices"
	"testing"
)

// elected starts a controller at epoch 1 on brokers ids with topic t.
func elected(t *testing.T, ids []int32, assignment ...[]int32) *zkSim {
	s := newSim(t)
	s.run(Elected{Epoch: 1, EpochZkVersion: 10, Snapshot: Snapshot{Brokers: brokers(ids...)}})
	if len(assignment) > 0 {
		s.run(TopicCreated{Topic: topic("t", assignment...)})
	}
	return s
}

func TestCreateTopicRF3(t *testing.T) {
	s := newSim(t)
	s.run(Elected{Epoch: 1, EpochZkVersion: 10, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}})
	acts := s.c.Step(TopicCreated{Topic: topic("t", []int32{2, 3, 1})})
	writes := ofType[WritePartitionState](acts)
	if len(writes) != 1 || len(acts) != 1 {
		t.Fatalf("want one write first, got %#v", acts)
	}
	w := writes[0]
	if w.ExpectedZkVersion != NoZkVersion || w.ControllerEpochZkVersion != 10 || w.State.Leader != 2 ||
		w.State.LeaderEpoch != 0 || !slices.Equal(w.State.ISR, []int32{2, 3, 1}) || w.State.ControllerEpoch != 1 {
		t.Fatalf("creation write %+v", w)
	}
	if got := s.c.PartitionState(tp(0)); got != NewPartition {
		t.Fatalf("before the write: %v", got)
	}
	sent := s.run(s.write(w))
	s.wantState(tp(0), 2, 0, 2, 3, 1)
	if got := s.c.PartitionState(tp(0)); got != OnlinePartition {
		t.Fatalf("after the write: %v", got)
	}
	for _, b := range []int32{1, 2, 3} {
		l, ok := leaderAndIsrTo(sent, b)
		if !ok || len(l.Partitions) != 1 || !l.Partitions[0].IsNew || l.Partitions[0].State.Leader != 2 || l.ControllerEpoch != 1 {
			t.Fatalf("LeaderAndIsr to %d: %+v", b, l)
		}
		if len(l.Leaders) != 1 || l.Leaders[0].Endpoints != "b2:9092" {
			t.Fatalf("LeaderAndIsr to %d names leaders %+v", b, l.Leaders)
		}
	}
	if to, _ := metadataFor(sent, tp(0)); !slices.Equal(to, []int32{1, 2, 3}) {
		t.Fatalf("UpdateMetadata to %v", to)
	}
}

func TestCreateWithDeadReplicaAndNoLiveReplica(t *testing.T) {
	s := elected(t, []int32{1, 2}, []int32{3, 1, 2}, []int32{3, 4})
	s.wantState(tp(0), 1, 0, 1, 2)
	if got := s.c.PartitionState(tp(1)); got != NewPartition {
		t.Fatalf("no live replica: %v", got)
	}
	// Broker 3 registers: the pending creation goes through.
	s.run(BrokersChanged{Live: brokers(1, 2, 3)})
	s.wantState(tp(1), 3, 0, 3)
	s.wantState(tp(0), 1, 0, 1, 2) // untouched: 3 rejoins through the leader
}

func TestLeaderDiesNewLeaderFromIsr(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3, 1})
	sent := s.run(BrokersChanged{Live: brokers(2, 3)})
	s.wantState(tp(0), 2, 1, 2, 3)
	// Broker 1 only followed p1: the controller drops it from the ISR.
	s.wantState(tp(1), 2, 1, 2, 3)
	if got := leaderAndIsrRecipients(sent, tp(0)); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("LeaderAndIsr for p0 to %v", got)
	}
	to, live := metadataFor(sent, tp(0))
	if !slices.Equal(to, []int32{2, 3}) || !slices.Equal(live, []int32{2, 3}) {
		t.Fatalf("UpdateMetadata to %v with live %v", to, live)
	}
	if s.c.ReplicaState(tp(0), 1) != OfflineReplica || s.c.ReplicaState(tp(0), 2) != OnlineReplica {
		t.Fatal("replica states")
	}
}

func TestAllIsrDeadGoesOfflineThenUnclean(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	s.leaderSetsIsr(tp(0), 1) // followers fell behind
	s.run(BrokersChanged{Live: brokers(2, 3)})
	s.wantState(tp(0), NoLeader, 1, 1)
	if s.c.PartitionState(tp(0)) != OfflinePartition || s.c.OfflinePartitionsCount() != 1 {
		t.Fatal("want one offline partition")
	}
	// Nothing more to do while no ISR member is back.
	if acts := s.c.Step(BrokersChanged{Live: brokers(2, 3)}); len(ofType[WritePartitionState](acts)) != 0 {
		t.Fatalf("settled partition acted: %#v", acts)
	}
	sent := s.run(TopicConfigChanged{Topic: "t", UncleanLeaderElection: true})
	s.wantState(tp(0), 2, 2, 2)
	if got := leaderAndIsrRecipients(sent, tp(0)); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("LeaderAndIsr to %v", got)
	}
}

func TestAllIsrDeadKeepsWholeIsr(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	s.leaderSetsIsr(tp(0), 1, 2)
	s.run(BrokersChanged{Live: brokers(3)})
	s.wantState(tp(0), NoLeader, 1, 1, 2)
	// Either ISR member coming back leads cleanly.
	s.run(BrokersChanged{Live: brokers(2, 3)})
	s.wantState(tp(0), 2, 2, 2)
}

func TestBrokerReturnsAsFollowerAndOfflineRecovers(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1})
	s.run(BrokersChanged{Live: brokers(2, 3)})
	s.wantState(tp(0), 2, 1, 2, 3)
	s.wantState(tp(1), NoLeader, 1, 1)
	sent := s.run(BrokersChanged{Live: brokers(1, 2, 3)})
	// p0: no write, broker 1 learns it follows 2.
	s.wantState(tp(0), 2, 1, 2, 3)
	l, ok := leaderAndIsrTo(sent, 1)
	if !ok {
		t.Fatal("no LeaderAndIsr to the returning broker")
	}
	var sawP0 bool
	for _, info := range l.Partitions {
		if info.Partition == tp(0) {
			sawP0 = info.State.Leader == 2 && !info.IsNew
		}
	}
	if !sawP0 {
		t.Fatalf("returning broker not told it follows 2: %+v", l)
	}
	// p1 had only broker 1 in its ISR: it leads again.
	s.wantState(tp(1), 1, 2, 1)
	var full bool
	for _, um := range ofType[SendUpdateMetadata](sent) {
		if slices.Equal(um.Brokers, []int32{1}) && len(um.Partitions) == 2 {
			full = true
		}
	}
	if !full {
		t.Fatalf("returning broker got no full UpdateMetadata: %#v", ofType[SendUpdateMetadata](sent))
	}
	if s.c.OfflinePartitionsCount() != 0 {
		t.Fatal("offline partitions left")
	}
}

func TestControlledShutdownOfLeaderOfManyPartitions(t *testing.T) {
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	s := elected(t, []int32{1, 2, 3}, assignment...)
	s.run(TopicCreated{Topic: topic("single", []int32{1})})
	acts := s.c.Step(ControlledShutdownRequested{Broker: 1, BrokerEpoch: 101})
	if len(ofType[AnswerControlledShutdown](acts)) != 0 {
		t.Fatal("answered before the writes")
	}
	if n := len(ofType[WritePartitionState](acts)); n != 6 {
		t.Fatalf("%d writes, want 6", n)
	}
	stops := ofType[SendStopReplica](acts)
	if len(stops) != 1 || stops[0].Broker != 1 || len(stops[0].Partitions) != 4 || stops[0].Delete {
		t.Fatalf("StopReplica %+v", stops)
	}
	var sent []Action
	for _, a := range acts {
		if w, ok := a.(WritePartitionState); ok {
			sent = append(sent, s.run(s.write(w))...)
		}
	}
	answers := ofType[AnswerControlledShutdown](sent)
	if len(answers) != 1 || answers[0].Broker != 1 || len(answers[0].Remaining) != 0 || answers[0].Err != nil {
		t.Fatalf("answers %+v", answers)
	}
	s.wantState(tp(0), 2, 1, 2, 3)
	s.wantState(tp(3), 3, 1, 3, 2)
	s.wantState(tp(1), 2, 1, 2, 3)
	for _, p := range []int32{0, 3} {
		if got := leaderAndIsrRecipients(sent, tp(p)); !slices.Contains(got, 1) {
			t.Fatalf("demoted leader 1 not told for p%d: %v", p, got)
		}
	}
	if got := leaderAndIsrRecipients(sent, tp(1)); slices.Contains(got, 1) {
		t.Fatalf("stopped follower 1 told to fetch p1 again: %v", got)
	}
	single := TopicPartition{"single", 0}
	if st, _ := s.c.State(single); st.Leader != 1 {
		t.Fatalf("single-replica partition moved: %+v", st)
	}
}

func TestControlledShutdownReportsWhatItCannotMove(t *testing.T) {
	s := elected(t, []int32{1, 2}, []int32{1, 2})
	s.leaderSetsIsr(tp(0), 1)
	sent := s.run(ControlledShutdownRequested{Broker: 1, BrokerEpoch: -1})
	answers := ofType[AnswerControlledShutdown](sent)
	if len(answers) != 1 || !slices.Equal(answers[0].Remaining, []TopicPartition{tp(0)}) {
		t.Fatalf("answers %+v", answers)
	}
	s.wantState(tp(0), 1, 0, 1)
	// Once broker 2 is back in the ISR, a retry moves it.
	s.leaderSetsIsr(tp(0), 1, 2)
	answers = ofType[AnswerControlledShutdown](s.run(ControlledShutdownRequested{Broker: 1, BrokerEpoch: 101}))
	s.wantState(tp(0), 2, 1, 2)
	if len(answers) != 1 || len(answers[0].Remaining) != 0 {
		t.Fatalf("retry answers %+v", answers)
	}
}

func TestControlledShutdownErrors(t *testing.T) {
	c := New()
	acts := c.Step(ControlledShutdownRequested{Broker: 1})
	if a := ofType[AnswerControlledShutdown](acts); len(a) != 1 || !errors.Is(a[0].Err, ErrNotController) {
		t.Fatalf("inactive: %#v", acts)
	}
	s := elected(t, []int32{1, 2}, []int32{1, 2})
	if a := ofType[AnswerControlledShutdown](s.run(ControlledShutdownRequested{Broker: 9})); len(a) != 1 || !errors.Is(a[0].Err, ErrBrokerNotAvailable) {
		t.Fatalf("unknown broker: %#v", a)
	}
	if a := ofType[AnswerControlledShutdown](s.run(ControlledShutdownRequested{Broker: 1, BrokerEpoch: 5})); len(a) != 1 || !errors.Is(a[0].Err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: %#v", a)
	}
	if s.c.ShuttingDown(1) {
		t.Fatal("a refused request marked the broker shutting down")
	}
}

func TestWriteConflictRereadsAndDecidesAgain(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	// While the controller elects 2, leader 1 (not yet aware it is
	// declared dead) drops 2 from the ISR.
	s.hook = func(w WritePartitionState) {
		s.hook = nil
		st := s.znode[w.Partition]
		st.ISR, st.ZkVersion = []int32{1, 3}, st.ZkVersion+1
		s.znode[w.Partition] = st
	}
	s.run(BrokersChanged{Live: brokers(2, 3)})
	s.wantState(tp(0), 3, 1, 3)
	if s.znode[tp(0)].ZkVersion != 2 {
		t.Fatalf("zk version %d, want 2 (leader's write, then the controller's)", s.znode[tp(0)].ZkVersion)
	}
}

func TestCreationConflictAdoptsExistingState(t *testing.T) {
	s := elected(t, []int32{1, 2, 3})
	s.znode[tp(0)] = LeaderAndIsr{Leader: 3, LeaderEpoch: 4, ISR: []int32{3, 1}, ControllerEpoch: 1, ZkVersion: 6}
	s.run(TopicCreated{Topic: topic("t", []int32{1, 2, 3})})
	s.wantState(tp(0), 3, 4, 3, 1)
}

func TestFailoverResumesFromSnapshot(t *testing.T) {
	s := newSim(t)
	snap := Snapshot{
		Brokers: brokers(2, 3),
		Topics:  []Topic{topic("t", []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2})},
		States: map[TopicPartition]LeaderAndIsr{
			tp(0): {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, ControllerEpoch: 6, ZkVersion: 7},
			tp(1): {Leader: 2, LeaderEpoch: 2, ISR: []int32{2, 3}, ControllerEpoch: 6, ZkVersion: 3},
		},
	}
	for p, st := range snap.States {
		s.znode[p] = st
	}
	sent := s.run(Elected{Epoch: 7, EpochZkVersion: 20, Snapshot: snap})
	s.wantState(tp(0), 2, 5, 2) // dead leader replaced
	s.wantState(tp(1), 2, 2, 2, 3)
	s.wantState(tp(2), 3, 0, 3, 2) // creation the old controller left undone
	if st := s.state(tp(0)); st.ControllerEpoch != 7 {
		t.Fatalf("controller epoch in state %d", st.ControllerEpoch)
	}
	for _, a := range sent {
		if l, ok := a.(SendLeaderAndIsr); ok && l.ControllerEpoch != 7 {
			t.Fatalf("request with epoch %d", l.ControllerEpoch)
		}
	}
	if got := leaderAndIsrRecipients(sent, tp(1)); !slices.Equal(got, []int32{2, 3}) {
		t.Fatalf("untouched partition not resent to its replicas: %v", got)
	}
	for _, um := range ofType[SendUpdateMetadata](sent) {
		// every partition that has a state znode (p2 is told once created)
		if slices.Equal(um.Brokers, []int32{2, 3}) && len(um.Partitions) == 2 {
			return
		}
	}
	t.Fatalf("no full UpdateMetadata to all brokers: %#v", ofType[SendUpdateMetadata](sent))
}

func TestStaleControllerEpoch(t *testing.T) {
	c := New()
	c.Step(Elected{Epoch: 5, EpochZkVersion: 50, Snapshot: Snapshot{Brokers: brokers(1, 2)}})
	acts := c.Step(TopicCreated{Topic: topic("t", []int32{1, 2})})
	if w := ofType[WritePartitionState](acts); len(w) != 1 || w[0].ControllerEpoch != 5 || w[0].ControllerEpochZkVersion != 50 {
		t.Fatalf("write %#v", acts)
	}
	if acts := c.Step(Elected{Epoch: 4, Snapshot: Snapshot{}}); len(acts) != 0 || c.Epoch() != 5 || len(c.LiveBrokers()) != 2 {
		t.Fatalf("older Elected took effect: %#v", acts)
	}
	if acts := c.Step(StateWritten{ControllerEpoch: 4, Partition: tp(0), ZkVersion: 0}); len(acts) != 0 || !c.Pending(tp(0)) {
		t.Fatal("result of another epoch accepted")
	}
	// A newer election supersedes: pending work is redone under epoch 6.
	acts = c.Step(Elected{Epoch: 6, EpochZkVersion: 61, Snapshot: Snapshot{
		Brokers: brokers(1, 2), Topics: []Topic{topic("t", []int32{1, 2})}}})
	w := ofType[WritePartitionState](acts)
	if len(w) != 1 || w[0].ControllerEpoch != 6 || w[0].ControllerEpochZkVersion != 61 || w[0].State.ControllerEpoch != 6 {
		t.Fatalf("after epoch 6: %#v", acts)
	}
	if acts := c.Step(StateWritten{ControllerEpoch: 5, Partition: tp(0), ZkVersion: 0}); len(acts) != 0 {
		t.Fatalf("epoch-5 result accepted: %#v", acts)
	}
	acts = c.Step(StateWritten{ControllerEpoch: 6, Partition: tp(0), ZkVersion: 0})
	for _, a := range acts {
		if l, ok := a.(SendLeaderAndIsr); ok && l.ControllerEpoch != 6 {
			t.Fatalf("epoch %d on LeaderAndIsr", l.ControllerEpoch)
		}
	}
	c.Step(Resigned{})
	if c.Active() || len(c.Step(BrokersChanged{Live: brokers(1)})) != 0 {
		t.Fatal("resigned controller acts")
	}
}

func TestRestartedLeaderIsReelected(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1})
	live := brokers(1, 2, 3)
	live[0].Epoch = 999 // broker 1 re-registered: it restarted
	sent := s.run(BrokersChanged{Live: live})
	s.wantState(tp(0), 2, 1, 2, 3)
	// Alone in its ISR, p1 goes offline and then back to broker 1, with a
	// new leader epoch the restarted broker learns.
	s.wantState(tp(1), 1, 2, 1)
	l, ok := leaderAndIsrTo(sent, 1)
	if !ok || l.BrokerEpoch != 999 {
		t.Fatalf("restarted broker not told its roles: %+v", l)
	}
}

func TestIsrChangeNotifiedSpreadsMetadata(t *testing.T) {
	s := elected(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	sent := s.leaderSetsIsr(tp(0), 1, 3)
	if to, _ := metadataFor(sent, tp(0)); !slices.Equal(to, []int32{1, 2, 3}) {
		t.Fatalf("UpdateMetadata to %v", to)
	}
	if len(leaderAndIsrRecipients(sent, tp(0))) != 0 {
		t.Fatal("a leader's ISR change needs no LeaderAndIsr")
	}
	s.wantState(tp(0), 1, 0, 1, 3)
	// A stale notification (older version) is ignored.
	old := s.znode[tp(0)]
	old.ISR, old.ZkVersion = []int32{1}, 0
	if acts := s.c.Step(IsrChangeNotified{States: map[TopicPartition]LeaderAndIsr{tp(0): old}}); len(acts) != 0 {
		t.Fatalf("stale notification acted: %#v", acts)
	}
}

func TestPartitionsAdded(t *testing.T) {
	s := elected(t, []int32{1, 2}, []int32{1, 2})
	s.run(PartitionsAdded{Topic: "t", Partitions: map[int32]Assignment{1: {Replicas: []int32{2, 1}}}})
	s.wantState(tp(1), 2, 0, 2, 1)
	s.wantState(tp(0), 1, 0, 1, 2)
}

func TestElectionAlgorithms(t *testing.T) {
	live := func(ids ...int32) func(int32) bool {
		return func(id int32) bool { return slices.Contains(ids, id) }
	}
	if l, isr, ok := OfflinePartitionLeader([]int32{1, 2, 3}, []int32{3, 2}, live(2, 3), false); !ok || l != 2 || !slices.Equal(isr, []int32{3, 2}) {
		t.Fatalf("clean: %d %v", l, isr)
	}
	if _, _, ok := OfflinePartitionLeader([]int32{1, 2, 3}, []int32{1}, live(2, 3), false); ok {
		t.Fatal("unclean election without unclean enabled")
	}
	if l, isr, ok := OfflinePartitionLeader([]int32{1, 2, 3}, []int32{1}, live(3), true); !ok || l != 3 || !slices.Equal(isr, []int32{3}) {
		t.Fatalf("unclean: %d %v", l, isr)
	}
	if l, ok := PreferredReplicaLeader([]int32{1, 2}, []int32{2, 1}, live(1, 2)); !ok || l != 1 {
		t.Fatal("preferred")
	}
	if _, ok := PreferredReplicaLeader([]int32{1, 2}, []int32{2}, live(1, 2)); ok {
		t.Fatal("preferred out of ISR")
	}
	if l, isr, ok := ControlledShutdownLeader([]int32{1, 2, 3}, []int32{1, 2, 3}, live(2, 3)); !ok || l != 2 || !slices.Equal(isr, []int32{2, 3}) {
		t.Fatalf("controlled shutdown: %d %v", l, isr)
	}
	if l, ok := ReassignmentLeader([]int32{4, 3}, []int32{1, 3}, live(3, 4)); !ok || l != 3 {
		t.Fatal("reassignment")
	}
}

func TestWaitingShutdownAnsweredWhenCutShort(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   Event
		want error
	}{
		{"resigned", Resigned{}, ErrNotController},
		{"superseded", Elected{Epoch: 2, Snapshot: Snapshot{Brokers: brokers(1, 2)}}, ErrNotController},
		{"broker gone", BrokersChanged{Live: brokers(2)}, ErrBrokerNotAvailable},
		{"broker restarted", BrokersChanged{Live: []Broker{{ID: 1, Epoch: 7}, brokers(2)[0]}}, ErrStaleBrokerEpoch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := elected(t, []int32{1, 2}, []int32{1, 2})
			// The drain's write is out when the event comes.
			acts := s.c.Step(ControlledShutdownRequested{Broker: 1, BrokerEpoch: 101})
			if len(ofType[WritePartitionState](acts)) != 1 || len(ofType[AnswerControlledShutdown](acts)) != 0 {
				t.Fatalf("drain: %#v", acts)
			}
			a := ofType[AnswerControlledShutdown](s.c.Step(tc.ev))
			if len(a) != 1 || a[0].Broker != 1 || !errors.Is(a[0].Err, tc.want) {
				t.Fatalf("answers %+v, want one with %v", a, tc.want)
			}
			if s.c.ShuttingDown(1) {
				t.Fatal("still shutting down")
			}
		})
	}
}
