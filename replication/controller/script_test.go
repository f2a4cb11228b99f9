package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// render writes an action as one line of a scenario script.
func render(a Action) string {
	switch a := a.(type) {
	case WritePartitionState:
		return fmt.Sprintf("zk write %v %s if-version %d", a.Partition, renderState(a.State), a.ExpectedZkVersion)
	case ReadPartitionStates:
		return fmt.Sprintf("zk read %v", a.Partitions)
	case SendLeaderAndIsr:
		return fmt.Sprintf("LeaderAndIsr →%d%s", a.Broker, renderInfos(a.Partitions))
	case SendUpdateMetadata:
		ids := make([]int32, len(a.LiveBrokers))
		for i, b := range a.LiveBrokers {
			ids[i] = b.ID
		}
		return fmt.Sprintf("UpdateMetadata →%v live %v%s", a.Brokers, ids, renderInfos(a.Partitions))
	case SendStopReplica:
		return fmt.Sprintf("StopReplica →%d %v delete=%v", a.Broker, a.Partitions, a.Delete)
	case WriteTopicAssignment:
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(a.Partitions)) {
			as := a.Partitions[p]
			parts = append(parts, fmt.Sprintf("%d:%v+%v-%v", p, as.Replicas, as.Adding, as.Removing))
		}
		return fmt.Sprintf("zk topic %s %s", a.Topic, strings.Join(parts, " "))
	case WriteZKReassignments:
		var parts []string
		for _, tp := range sortedTPs(a.Remaining) {
			parts = append(parts, fmt.Sprintf("%v:%v", tp, a.Remaining[tp]))
		}
		return fmt.Sprintf("zk reassign_partitions {%s}", strings.Join(parts, " "))
	case AnswerReassignments:
		var parts []string
		for _, tp := range sortedTPs(a.Results) {
			parts = append(parts, fmt.Sprintf("%v:%v", tp, a.Results[tp]))
		}
		return fmt.Sprintf("Reassignments answer #%d %s err %v", a.ID, strings.Join(parts, " "), a.Err)
	case DeleteTopicZnodes:
		return fmt.Sprintf("zk delete topic %s", a.Topic)
	case AnswerLeaderElection:
		var parts []string
		for _, tp := range sortedTPs(a.Results) {
			parts = append(parts, fmt.Sprintf("%v:%v", tp, a.Results[tp]))
		}
		return fmt.Sprintf("ElectLeaders answer #%d %s err %v", a.ID, strings.Join(parts, " "), a.Err)
	case AnswerControlledShutdown:
		return fmt.Sprintf("ControlledShutdown answer →%d remaining %v err %v", a.Broker, a.Remaining, a.Err)
	}
	return fmt.Sprintf("%T", a)
}

func renderState(s LeaderAndIsr) string {
	return fmt.Sprintf("leader %d epoch %d isr %v", s.Leader, s.LeaderEpoch, s.ISR)
}

func renderInfos(infos []PartitionInfo) string {
	var b strings.Builder
	for _, in := range infos {
		fmt.Fprintf(&b, " | %v %s", in.Partition, renderState(in.State))
		if in.IsNew {
			b.WriteString(" new")
		}
	}
	return b.String()
}

// threeBrokersTwoPartitions elects a controller over brokers 1–3 and
// creates topic t with partitions led by 1 and 2: where most scripts start.
func threeBrokersTwoPartitions() []scriptStep {
	return []scriptStep{
		{ev: Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3]",
		}},
		{ev: TopicCreated{Topic: topic("t", []int32{1, 2, 3}, []int32{2, 3, 1})}, want: []string{
			"zk write t-0 leader 1 epoch 0 isr [1 2 3] if-version -1",
			"zk write t-1 leader 2 epoch 0 isr [2 3 1] if-version -1",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 0 isr [1 2 3]",
			"LeaderAndIsr →1 | t-1 leader 2 epoch 0 isr [2 3 1] new",
			"LeaderAndIsr →2 | t-1 leader 2 epoch 0 isr [2 3 1] new",
			"LeaderAndIsr →3 | t-1 leader 2 epoch 0 isr [2 3 1] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-1 leader 2 epoch 0 isr [2 3 1]",
		}},
	}
}

type scriptStep struct {
	ev Event
	// leaderIsr, if set, is written to ZooKeeper by the partitions'
	// leaders before ev (then an IsrChangeNotified with them) is stepped.
	leaderIsr map[TopicPartition][]int32
	want      []string
}

func runScript(t *testing.T, steps []scriptStep) {
	s := newSim(t)
	for i, st := range steps {
		ev := st.ev
		if st.leaderIsr != nil {
			n := IsrChangeNotified{States: map[TopicPartition]LeaderAndIsr{}}
			for p, isr := range st.leaderIsr {
				z := s.znode[p]
				z.ISR, z.ZkVersion = isr, z.ZkVersion+1
				s.znode[p] = z
				n.States[p] = z.clone()
			}
			ev = n
		}
		s.trace = nil
		s.run(ev)
		if got, want := strings.Join(s.trace, "\n"), strings.Join(st.want, "\n"); got != want {
			t.Fatalf("step %d (%T):\ngot:\n%s\nwant:\n%s", i, ev, got, want)
		}
	}
}

// A whole life: creation, leader failure, return as follower, the leader
// re-admitting it, and a controlled shutdown of the new leader.
func TestScriptLeaderFailureReturnAndDrain(t *testing.T) {
	runScript(t, append(threeBrokersTwoPartitions(), []scriptStep{
		{ev: BrokersChanged{Live: brokers(2, 3)}, want: []string{
			"zk write t-0 leader 2 epoch 1 isr [2 3] if-version 0",
			"zk write t-1 leader 2 epoch 1 isr [2 3] if-version 0",
			"UpdateMetadata →[2 3] live [2 3]",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →2 | t-1 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
		}},
		{ev: BrokersChanged{Live: brokers(1, 2, 3)}, want: []string{
			"LeaderAndIsr →1 | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[1] live [1 2 3] | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [1 2 3]",
		}},
		{leaderIsr: map[TopicPartition][]int32{tp(0): {2, 3, 1}, tp(1): {2, 3, 1}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 2 epoch 1 isr [2 3 1] | t-1 leader 2 epoch 1 isr [2 3 1]",
		}},
		{ev: ControlledShutdownRequested{Broker: 2, BrokerEpoch: 102}, want: []string{
			"zk write t-0 leader 1 epoch 2 isr [3 1] if-version 2",
			"zk write t-1 leader 3 epoch 2 isr [3 1] if-version 2",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 2 isr [3 1]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 2 isr [3 1]",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 2 isr [3 1]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 2 isr [3 1]",
			"LeaderAndIsr →1 | t-1 leader 3 epoch 2 isr [3 1]",
			"LeaderAndIsr →2 | t-1 leader 3 epoch 2 isr [3 1]",
			"LeaderAndIsr →3 | t-1 leader 3 epoch 2 isr [3 1]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-1 leader 3 epoch 2 isr [3 1]",
			"ControlledShutdown answer →2 remaining [] err <nil>",
		}},
		// The drained broker dies: nothing to elect, brokers learn it left.
		{ev: BrokersChanged{Live: brokers(1, 3)}, want: []string{
			"UpdateMetadata →[1 3] live [1 3]",
		}},
	}...))
}

// Unclean election, step by step: the only ISR member dies, the partition
// goes offline with leader -1, and enabling unclean election hands it to a
// live out-of-ISR replica alone in the ISR.
func TestScriptOfflineThenUnclean(t *testing.T) {
	runScript(t, []scriptStep{
		{ev: Elected{Epoch: 3, EpochZkVersion: 9, Snapshot: Snapshot{
			Brokers: brokers(1, 2),
			Topics:  []Topic{topic("t", []int32{1, 2})},
			States:  map[TopicPartition]LeaderAndIsr{},
		}}, want: []string{
			"zk write t-0 leader 1 epoch 0 isr [1 2] if-version -1",
			"UpdateMetadata →[1 2] live [1 2]",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 0 isr [1 2] new",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 0 isr [1 2] new",
			"UpdateMetadata →[1 2] live [1 2] | t-0 leader 1 epoch 0 isr [1 2]",
		}},
		{leaderIsr: map[TopicPartition][]int32{tp(0): {1}}, want: []string{
			"UpdateMetadata →[1 2] live [1 2] | t-0 leader 1 epoch 0 isr [1]",
		}},
		{ev: BrokersChanged{Live: brokers(2)}, want: []string{
			"zk write t-0 leader -1 epoch 1 isr [1] if-version 1",
			"UpdateMetadata →[2] live [2]",
			"LeaderAndIsr →2 | t-0 leader -1 epoch 1 isr [1]",
			"UpdateMetadata →[2] live [2] | t-0 leader -1 epoch 1 isr [1]",
		}},
		{ev: TopicConfigChanged{Topic: "t", UncleanLeaderElection: true}, want: []string{
			"zk write t-0 leader 2 epoch 2 isr [2] if-version 2",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 2 isr [2]",
			"UpdateMetadata →[2] live [2] | t-0 leader 2 epoch 2 isr [2]",
		}},
	})
}

// Topic deletion: the topic leaves the brokers' metadata at once, each
// live replica is deleted, a dead broker's replica holds the deletion
// until it returns and deletes it too, then the znodes go; no election
// happens for the topic meanwhile, and a failover resumes the deletion.
func TestScriptTopicDeletion(t *testing.T) {
	gone := func(p int32) TopicPartition { return TopicPartition{"gone", p} }
	runScript(t, []scriptStep{
		{ev: Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3]",
		}},
		{ev: TopicCreated{Topic: topic("gone", []int32{1, 2}, []int32{2, 3})}, want: []string{
			"zk write gone-0 leader 1 epoch 0 isr [1 2] if-version -1",
			"zk write gone-1 leader 2 epoch 0 isr [2 3] if-version -1",
			"LeaderAndIsr →1 | gone-0 leader 1 epoch 0 isr [1 2] new",
			"LeaderAndIsr →2 | gone-0 leader 1 epoch 0 isr [1 2] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | gone-0 leader 1 epoch 0 isr [1 2]",
			"LeaderAndIsr →2 | gone-1 leader 2 epoch 0 isr [2 3] new",
			"LeaderAndIsr →3 | gone-1 leader 2 epoch 0 isr [2 3] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | gone-1 leader 2 epoch 0 isr [2 3]",
		}},
		{ev: BrokersChanged{Live: brokers(1, 2)}, want: []string{
			"zk write gone-1 leader 2 epoch 1 isr [2] if-version 0",
			"UpdateMetadata →[1 2] live [1 2]",
			"LeaderAndIsr →2 | gone-1 leader 2 epoch 1 isr [2]",
			"UpdateMetadata →[1 2] live [1 2] | gone-1 leader 2 epoch 1 isr [2]",
		}},
		// Marked (twice in the list: once is enough); an unknown topic's mark is cleared.
		{ev: TopicDeletionsRequested{Topics: []string{"gone", "never", "gone"}}, want: []string{
			"zk delete topic never",
			"UpdateMetadata →[1 2] live [1 2] | gone-0 leader -2 epoch 0 isr [1 2] | gone-1 leader -2 epoch 1 isr [2]",
			"StopReplica →1 [gone-0] delete=true",
			"StopReplica →2 [gone-0 gone-1] delete=true",
		}},
		// The leader of gone-1 dies: no election for a topic being deleted.
		{ev: BrokersChanged{Live: brokers(1)}, want: []string{
			"UpdateMetadata →[1] live [1]",
		}},
		{ev: ReplicasDeleted{ControllerEpoch: 1, Broker: 1, Partitions: []TopicPartition{gone(0)}}, want: nil},
		// A new controller resumes the deletion it finds marked.
		{ev: Elected{Epoch: 2, EpochZkVersion: 2, Snapshot: Snapshot{
			Brokers:  brokers(1, 2),
			Topics:   []Topic{topic("gone", []int32{1, 2}, []int32{2, 3})},
			States:   map[TopicPartition]LeaderAndIsr{gone(0): {Leader: 1, ISR: []int32{1, 2}, ZkVersion: 0}, gone(1): {Leader: 2, LeaderEpoch: 1, ISR: []int32{2}, ZkVersion: 1}},
			Deleting: []string{"gone"},
		}}, want: []string{
			"UpdateMetadata →[1 2] live [1 2] | gone-0 leader -2 epoch 0 isr [1 2] | gone-1 leader -2 epoch 1 isr [2]",
			"StopReplica →1 [gone-0] delete=true",
			"StopReplica →2 [gone-0 gone-1] delete=true",
		}},
		{ev: ReplicasDeleted{ControllerEpoch: 2, Broker: 1, Partitions: []TopicPartition{gone(0)}}, want: nil},
		{ev: ReplicasDeleted{ControllerEpoch: 1, Broker: 2, Partitions: []TopicPartition{gone(0), gone(1)}}, want: nil}, // an old term's answer
		{ev: ReplicasDeleted{ControllerEpoch: 2, Broker: 2, Partitions: []TopicPartition{gone(0), gone(1)}}, want: nil},
		// Broker 3 held gone-1 and was dead: its return deletes it, then the znodes go.
		{ev: BrokersChanged{Live: brokers(1, 2, 3)}, want: []string{
			"UpdateMetadata →[3] live [1 2 3] | gone-0 leader -2 epoch 0 isr [1 2] | gone-1 leader -2 epoch 1 isr [2]",
			"UpdateMetadata →[1 2] live [1 2 3]",
			"StopReplica →3 [gone-1] delete=true",
		}},
		{ev: ReplicasDeleted{ControllerEpoch: 2, Broker: 3, Partitions: []TopicPartition{gone(1)}}, want: []string{
			"zk delete topic gone",
		}},
		// Gone from the controller: a later broker change sends nothing of it.
		{ev: BrokersChanged{Live: brokers(1, 3)}, want: []string{
			"UpdateMetadata →[1 3] live [1 3]",
		}},
	})
}

// Preferred and unclean elections on request, and the imbalance check:
// after a failover the first replica gets its leadership back once it is
// in the ISR; an election that is not needed or not possible says why.
func TestScriptLeaderElections(t *testing.T) {
	runScript(t, append(threeBrokersTwoPartitions(), []scriptStep{
		{ev: BrokersChanged{Live: brokers(2, 3)}, want: []string{
			"zk write t-0 leader 2 epoch 1 isr [2 3] if-version 0",
			"zk write t-1 leader 2 epoch 1 isr [2 3] if-version 0",
			"UpdateMetadata →[2 3] live [2 3]",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →2 | t-1 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
		}},
		{ev: LeaderImbalanceCheck{MaxImbalancePercent: 10}, want: nil}, // broker 1 is dead
		{ev: BrokersChanged{Live: brokers(1, 2, 3)}, want: []string{
			"LeaderAndIsr →1 | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[1] live [1 2 3] | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [1 2 3]",
		}},
		// Broker 1 is not in t-0's ISR yet: its preferred election must wait.
		{ev: LeaderElectionRequested{ID: 1, Type: PreferredElection, Partitions: []TopicPartition{tp(0), tp(1), {Topic: "nope", Partition: 0}}}, want: []string{
			"ElectLeaders answer #1 nope-0:unknown topic or partition t-0:the preferred leader is not available t-1:election not needed err <nil>",
		}},
		{ev: LeaderImbalanceCheck{MaxImbalancePercent: 10}, want: nil}, // 1 is not in sync: nothing to do
		{leaderIsr: map[TopicPartition][]int32{tp(0): {2, 3, 1}, tp(1): {2, 3, 1}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 2 epoch 1 isr [2 3 1] | t-1 leader 2 epoch 1 isr [2 3 1]",
		}},
		{ev: LeaderElectionRequested{ID: 2, Type: PreferredElection, Partitions: []TopicPartition{tp(0)}}, want: []string{
			"zk write t-0 leader 1 epoch 2 isr [2 3 1] if-version 2",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 2 isr [2 3 1]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 2 isr [2 3 1]",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 2 isr [2 3 1]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 2 isr [2 3 1]",
			"ElectLeaders answer #2 t-0:<nil> err <nil>",
		}},
		// An unclean election is not needed where a live leader is.
		{ev: LeaderElectionRequested{ID: 3, Type: UncleanElection, Partitions: []TopicPartition{tp(1)}}, want: []string{
			"ElectLeaders answer #3 t-1:election not needed err <nil>",
		}},
		// Broker 1 fails again and returns in sync; the imbalance check (1 of
		// its 1 preferred partitions not led: 100% > 10%) gives t-0 back.
		{ev: BrokersChanged{Live: brokers(2, 3)}, want: []string{
			"zk write t-0 leader 2 epoch 3 isr [2 3] if-version 3",
			"zk write t-1 leader 2 epoch 2 isr [2 3] if-version 2",
			"UpdateMetadata →[2 3] live [2 3]",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 3 isr [2 3]",
			"LeaderAndIsr →3 | t-0 leader 2 epoch 3 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-0 leader 2 epoch 3 isr [2 3]",
			"LeaderAndIsr →2 | t-1 leader 2 epoch 2 isr [2 3]",
			"LeaderAndIsr →3 | t-1 leader 2 epoch 2 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-1 leader 2 epoch 2 isr [2 3]",
		}},
		{ev: BrokersChanged{Live: brokers(1, 2, 3)}, want: []string{
			"LeaderAndIsr →1 | t-0 leader 2 epoch 3 isr [2 3] | t-1 leader 2 epoch 2 isr [2 3]",
			"UpdateMetadata →[1] live [1 2 3] | t-0 leader 2 epoch 3 isr [2 3] | t-1 leader 2 epoch 2 isr [2 3]",
			"UpdateMetadata →[2 3] live [1 2 3]",
		}},
		{leaderIsr: map[TopicPartition][]int32{tp(0): {2, 3, 1}, tp(1): {2, 3, 1}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 2 epoch 3 isr [2 3 1] | t-1 leader 2 epoch 2 isr [2 3 1]",
		}},
		{ev: LeaderImbalanceCheck{MaxImbalancePercent: 10}, want: []string{
			"zk write t-0 leader 1 epoch 4 isr [2 3 1] if-version 5",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 4 isr [2 3 1]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 4 isr [2 3 1]",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 4 isr [2 3 1]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 4 isr [2 3 1]",
		}},
		{ev: LeaderImbalanceCheck{MaxImbalancePercent: 10}, want: nil}, // balanced
	}...))
}

// A reassignment from {1,2} to {3,4} through /admin/reassign_partitions:
// the full set is written first, the epoch bump tells all four, nothing is
// dropped until both targets are in the ISR; then the leader moves to the
// target, the old replicas are deleted and the znodes hold the target.
func TestScriptReassignment(t *testing.T) {
	runScript(t, []scriptStep{
		{ev: Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3, 4)}}, want: []string{
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4]",
		}},
		{ev: TopicCreated{Topic: topic("t", []int32{1, 2})}, want: []string{
			"zk write t-0 leader 1 epoch 0 isr [1 2] if-version -1",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 0 isr [1 2] new",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 0 isr [1 2] new",
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4] | t-0 leader 1 epoch 0 isr [1 2]",
		}},
		{ev: ReassignmentsRequested{FromZK: true, Partitions: map[TopicPartition][]int32{tp(0): {3, 4}}}, want: []string{
			"zk topic t 0:[3 4 1 2]+[3 4]-[1 2]",
			"zk write t-0 leader 1 epoch 1 isr [1 2] if-version 0",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 1 isr [1 2]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 1 isr [1 2]",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 1 isr [1 2]",
			"LeaderAndIsr →4 | t-0 leader 1 epoch 1 isr [1 2]",
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4] | t-0 leader 1 epoch 1 isr [1 2]",
		}},
		{leaderIsr: map[TopicPartition][]int32{tp(0): {1, 2, 3}}, want: []string{
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4] | t-0 leader 1 epoch 1 isr [1 2 3]",
		}},
		// Both in sync: the leader moves to the target and the ISR is cut
		// to it; once that is written the old replicas are deleted and the
		// znodes hold the target alone.
		{leaderIsr: map[TopicPartition][]int32{tp(0): {1, 2, 3, 4}}, want: []string{
			"zk write t-0 leader 3 epoch 2 isr [3 4] if-version 3",
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4] | t-0 leader 1 epoch 1 isr [1 2 3 4]",
			"zk topic t 0:[3 4]+[]-[]",
			"LeaderAndIsr →3 | t-0 leader 3 epoch 2 isr [3 4]",
			"LeaderAndIsr →4 | t-0 leader 3 epoch 2 isr [3 4]",
			"UpdateMetadata →[1 2 3 4] live [1 2 3 4] | t-0 leader 3 epoch 2 isr [3 4]",
			"StopReplica →1 [t-0] delete=true",
			"StopReplica →2 [t-0] delete=true",
			"zk reassign_partitions {}",
		}},
	})
}

// Through the API: a move to {2,3} is started and answered at once, then
// cancelled while copying: the original replicas take it back without
// waiting for the ISR and the added replica is deleted; a second cancel,
// a target on a dead broker and an unknown partition are refused.
func TestScriptReassignmentCancelled(t *testing.T) {
	runScript(t, []scriptStep{
		{ev: Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3]",
		}},
		{ev: TopicCreated{Topic: topic("t", []int32{1, 2})}, want: []string{
			"zk write t-0 leader 1 epoch 0 isr [1 2] if-version -1",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 0 isr [1 2] new",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 0 isr [1 2] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 0 isr [1 2]",
		}},
		{ev: ReassignmentsRequested{ID: 7, Partitions: map[TopicPartition][]int32{tp(0): {2, 3}, {Topic: "x", Partition: 0}: {1}}}, want: []string{
			"zk topic t 0:[2 3 1]+[3]-[1]",
			"Reassignments answer #7 t-0:<nil> x-0:unknown topic or partition err <nil>",
			"zk write t-0 leader 1 epoch 1 isr [1 2] if-version 0",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 1 isr [1 2]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 1 isr [1 2]",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 1 isr [1 2]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 1 isr [1 2]",
		}},
		{ev: ReassignmentsRequested{ID: 8, Partitions: map[TopicPartition][]int32{tp(0): nil}}, want: []string{
			"zk topic t 0:[1 2]+[]-[]",
			"StopReplica →3 [t-0] delete=true",
			"Reassignments answer #8 t-0:<nil> err <nil>",
			"zk write t-0 leader 1 epoch 2 isr [1 2] if-version 1",
			"zk topic t 0:[1 2]+[]-[]",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 2 isr [1 2]",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 2 isr [1 2]",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 2 isr [1 2]",
		}},
		{ev: ReassignmentsRequested{ID: 9, Partitions: map[TopicPartition][]int32{tp(0): nil}}, want: []string{
			"Reassignments answer #9 t-0:no reassignment in progress err <nil>",
		}},
		{ev: BrokersChanged{Live: brokers(1, 2)}, want: []string{
			"UpdateMetadata →[1 2] live [1 2]",
		}},
		{ev: ReassignmentsRequested{ID: 10, Partitions: map[TopicPartition][]int32{tp(0): {1, 3}}}, want: []string{
			"Reassignments answer #10 t-0:invalid replica assignment: broker 3 of the target is not live err <nil>",
		}},
	})
}

// Fencing on evidence: the leader's listener refuses connections while
// its registration stands; the controller moves its leadership (epoch + 1)
// and drops it from the ISRs as for a broker gone from /brokers/ids.
// Evidence about an older registration, or a broker not live, is ignored.
// Later changes of /brokers/ids keep it fenced while that registration
// lasts; its listener answering again starts it as a returning broker.
func TestScriptFencedLeaderAndItsReturn(t *testing.T) {
	runScript(t, append(threeBrokersTwoPartitions(), []scriptStep{
		{ev: BrokerFenced{Broker: 1, Epoch: 99}, want: nil}, // an earlier registration
		{ev: BrokerFenced{Broker: 1, Epoch: 101}, want: []string{
			"zk write t-0 leader 2 epoch 1 isr [2 3] if-version 0",
			"zk write t-1 leader 2 epoch 1 isr [2 3] if-version 0",
			"UpdateMetadata →[2 3] live [2 3]",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →2 | t-1 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
		}},
		{ev: BrokerFenced{Broker: 1, Epoch: 101}, want: nil}, // fenced already
		// Another broker's registration changes: 1 stays fenced.
		{ev: BrokersChanged{Live: append(brokers(1, 2, 3), Broker{ID: 4, Epoch: 104})}, want: []string{
			"UpdateMetadata →[4] live [2 3 4] | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3 4]",
		}},
		{ev: BrokerUnfenced{Broker: 1, Epoch: 101}, want: []string{
			"LeaderAndIsr →1 | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[1] live [1 2 3 4] | t-0 leader 2 epoch 1 isr [2 3] | t-1 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3 4] live [1 2 3 4]",
		}},
	}...))
}

// A fenced broker that restarts registers with a new epoch: BrokersChanged
// unfences it and it starts as any returning broker; one whose session
// expires leaves without another election.
func TestScriptFencedBrokerRestartsOrExpires(t *testing.T) {
	restarted := brokers(1, 2, 3)
	restarted[0].Epoch = 201
	runScript(t, []scriptStep{
		{ev: Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}}, want: []string{
			"UpdateMetadata →[1 2 3] live [1 2 3]",
		}},
		{ev: TopicCreated{Topic: topic("t", []int32{1, 2, 3})}, want: []string{
			"zk write t-0 leader 1 epoch 0 isr [1 2 3] if-version -1",
			"LeaderAndIsr →1 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"LeaderAndIsr →2 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"LeaderAndIsr →3 | t-0 leader 1 epoch 0 isr [1 2 3] new",
			"UpdateMetadata →[1 2 3] live [1 2 3] | t-0 leader 1 epoch 0 isr [1 2 3]",
		}},
		{ev: BrokerFenced{Broker: 1, Epoch: 101}, want: []string{
			"zk write t-0 leader 2 epoch 1 isr [2 3] if-version 0",
			"UpdateMetadata →[2 3] live [2 3]",
			"LeaderAndIsr →2 | t-0 leader 2 epoch 1 isr [2 3]",
			"LeaderAndIsr →3 | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [2 3] | t-0 leader 2 epoch 1 isr [2 3]",
		}},
		{ev: BrokersChanged{Live: restarted}, want: []string{
			"LeaderAndIsr →1 | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[1] live [1 2 3] | t-0 leader 2 epoch 1 isr [2 3]",
			"UpdateMetadata →[2 3] live [1 2 3]",
		}},
		{ev: BrokerFenced{Broker: 1, Epoch: 201}, want: []string{
			"UpdateMetadata →[2 3] live [2 3]",
		}},
		{ev: BrokersChanged{Live: brokers(2, 3)}, want: []string{
			"UpdateMetadata →[2 3] live [2 3]",
		}},
		{ev: BrokerUnfenced{Broker: 1, Epoch: 201}, want: nil}, // its registration is gone
	})
}
