package fence

import (
	"testing"
	"time"
)

const timeout = 6 * time.Second

var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

// A scripted day of one broker's session and one partition it leads with
// two followers: each step is an event, then the question at that time.
func TestLeaderFencedScript(t *testing.T) {
	roleExpiries := 0 // the session's expiries when the controller last gave the role
	type step struct {
		what      string
		event     func(s *Session)
		now       time.Duration
		lastHeard time.Duration // last follower fetch (or the leadership's start)
		fenced    bool
	}
	steps := []step{
		{"connected, followers quiet", nil, 20 * time.Second, 0, false},
		{"cut: the last read was at 30 s, noticed at 34 s", func(s *Session) { s.Disconnected(at(30 * time.Second)) }, 34 * time.Second, 29 * time.Second, false},
		{"a second reconnect attempt fails: the cut still counts from 30 s", func(s *Session) { s.Disconnected(at(35 * time.Second)) }, 35900 * time.Millisecond, 29 * time.Second, false},
		{"a session timeout after the last read, followers silent", nil, 36 * time.Second, 29 * time.Second, true},
		{"a follower fetches: it knows of no other leader", nil, 37 * time.Second, 36500 * time.Millisecond, false},
		{"the followers fall silent again for a timeout", nil, 43 * time.Second, 36500 * time.Millisecond, true},
		{"the same session reconnects", func(s *Session) { s.Connected() }, 44 * time.Second, 36500 * time.Millisecond, false},
		{"cut again and ZooKeeper says expired: lost at once", func(s *Session) { s.Disconnected(at(50 * time.Second)); s.Expired() }, 51 * time.Second, 44 * time.Second, true},
		{"a new session: still fenced until the controller gives the role again", func(s *Session) { s.Connected() }, 52 * time.Second, 44 * time.Second, true},
		{"the controller's LeaderAndIsr: the role is current again", func(s *Session) { roleExpiries = s.Expiries() }, 53 * time.Second, 44 * time.Second, false},
	}
	s := &Session{Timeout: timeout}
	for _, st := range steps {
		if st.event != nil {
			st.event(s)
		}
		now := at(st.now)
		if got := LeaderFenced(s.LostFor(roleExpiries, now), true, at(st.lastHeard), now, timeout); got != st.fenced {
			t.Fatalf("%s: fenced %v, want %v (session lost %v, cut for %v)", st.what, got, st.fenced, s.Lost(now), s.CutFor(now))
		}
	}
}

// The cases the rule must never fence.
func TestLeaderFencedNever(t *testing.T) {
	lost := &Session{Timeout: timeout}
	lost.Disconnected(t0)
	now := at(time.Minute)
	if !lost.Lost(now) {
		t.Fatal("a session cut for a minute is not lost")
	}
	graced := &Session{Timeout: timeout, Grace: ExpiryRounding}
	graced.Disconnected(t0)
	if graced.Lost(at(timeout)) || !graced.Lost(at(timeout+ExpiryRounding)) {
		t.Error("the grace does not count: lost at the timeout, or not a tick after")
	}
	if LeaderFenced(lost.Lost(now), false, t0, now, timeout) {
		t.Error("a partition without another in-sync replica (RF 1, or its followers out of the ISR) was fenced: nobody else could lead it")
	}
	if LeaderFenced(lost.Lost(now), true, now.Add(-time.Second), now, timeout) {
		t.Error("ZooKeeper down cluster-wide, followers fetching: fenced")
	}
	single := &Session{} // a single node: no session, no timeout
	single.Disconnected(t0)
	single.Expired()
	if single.Lost(now) {
		t.Error("a broker without a ZooKeeper session timeout counts as lost")
	}
	var connected Session
	connected.Timeout = timeout
	if connected.Lost(now) || connected.CutFor(now) != 0 {
		t.Error("a connected session counts as lost")
	}
}
