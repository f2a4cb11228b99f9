package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// A leader cut from ZooKeeper keeps serving while a follower fetches,
// fences itself (produce, acks=all's check and consumer reads answer
// NOT_LEADER_OR_FOLLOWER) once it has heard neither ZooKeeper nor a
// follower for the session timeout, is lifted by one follower fetch or a
// reconnect of the same session (after an expiry: the controller's next
// LeaderAndIsr), and never fences a partition whose ISR is the leader
// alone.
func TestLeaderFencesItselfWhenCutOff(t *testing.T) {
	const timeout = 6 * time.Second
	clock := time.Unix(1_700_000_000, 0)
	guard := NewSessionGuard(timeout)
	open := func(topic string) *Replica {
		p, _ := newTestPartition(t, func(c *Config) {
			c.Topic = topic
			c.Session = guard
			c.Now = func() time.Time { return clock }
		})
		return p
	}
	rf3, rf1, alone := open("rf3"), open("rf1"), open("alone")
	if err := rf3.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := rf1.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	// Its followers out of the ISR: no clean election could replace it.
	if err := alone.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	leading := func(p *Replica) error {
		_, err := p.Append(plainBatch(t, "x"), storage.AppendOptions{})
		if err2 := p.CheckEnoughReplicas(); (err == nil) != (err2 == nil) || (err == nil) != (p.CheckLeading() == nil) || (err == nil) == p.Fenced() {
			t.Fatalf("%s: Append %v, CheckEnoughReplicas %v, CheckLeading %v, Fenced %v disagree", p.Topic(), err, err2, p.CheckLeading(), p.Fenced())
		}
		return err
	}
	step := func(what string, d time.Duration, wantFenced bool) {
		t.Helper()
		clock = clock.Add(d)
		err := leading(rf3)
		if wantFenced != (err != nil) || err != nil && !errors.Is(err, ErrNotLeader) {
			t.Fatalf("%s: rf3 append: %v, want fenced %v", what, err, wantFenced)
		}
		for _, p := range []*Replica{rf1, alone} {
			if err := leading(p); err != nil {
				t.Fatalf("%s: %s, its ISR the leader alone, was fenced: %v", what, p.Topic(), err)
			}
		}
	}
	step("connected", 10*time.Second, false)
	guard.Disconnected(clock.Add(-2 * time.Second)) // noticed 2 s after the last read
	step("cut for 3 s", time.Second, false)
	step("cut for 6 s: ZooKeeper may not have expired the session yet (its tick)", 3*time.Second, false)
	step("cut for 8 s, followers silent since the leadership began", 2*time.Second, true)
	if err := rf3.FollowerFetched(2, 1, rf3.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	step("a follower fetched: ZooKeeper is down for everyone", 0, false)
	step("the follower went on fetching", 5*time.Second, false)
	step("then nobody fetched for a session timeout", time.Second, true)
	guard.Connected()
	step("the same session reconnected", time.Second, false)

	guard.Disconnected(clock)
	guard.Expired() // heard on reconnecting: the session is gone
	guard.Connected()
	step("a new session replaced the expired one: the role is not confirmed yet", time.Second, true)
	if err := rf3.SetRole(Role{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	step("the controller gave the role again after the new registration", 0, false)
}
