package isr

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/replication/epoch"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const lag = 10 * time.Second

// script drives a Leader (broker 1) through a timeline, with a znode that
// takes conditional writes like ZooKeeper.
type script struct {
	t   *testing.T
	l   *Leader
	now time.Time
	zk  State
}

func newScript(t *testing.T, replicas, isr []int32, leo, hw int64, minISR int) *script {
	t.Helper()
	st := State{Leader: 1, LeaderEpoch: 5, ISR: isr, ControllerEpoch: 2, Version: 7}
	l, err := NewLeader(1, replicas, st, leo, hw, Config{ReplicaLagTimeMax: lag, MinInsyncReplicas: minISR}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return &script{t: t, l: l, now: t0, zk: st}
}

func (s *script) after(d time.Duration) { s.now = s.now.Add(d) }

// fetch is a follower reading from offset with the leader's current end.
func (s *script) fetch(replica int32, offset int64) Update {
	s.t.Helper()
	u, err := s.l.FollowerFetched(Fetch{Replica: replica, CurrentLeaderEpoch: s.l.Epoch(), FetchOffset: offset, LeaderLEO: s.l.LogEndOffset()}, s.now)
	if err != nil {
		s.t.Fatalf("fetch by %d at %d: %v", replica, offset, err)
	}
	return u
}

func (s *script) append(n int64) Update { return s.l.Appended(s.l.LogEndOffset()+n, s.now) }

// write applies p to the znode if its version still matches, and reports
// the outcome to the leader.
func (s *script) write(p *Proposal) (committed bool) {
	s.t.Helper()
	if p == nil {
		s.t.Fatal("no proposal to write")
	}
	if p.State.Version != s.zk.Version {
		s.l.Conflict(p)
		return false
	}
	s.zk = p.State
	s.zk.ISR = slices.Clone(p.State.ISR)
	s.zk.Version++
	s.l.Committed(p, s.zk.Version, s.now)
	return true
}

func (s *script) wantISR(want ...int32) {
	s.t.Helper()
	if got := s.l.ISR(); !slices.Equal(got, want) {
		s.t.Fatalf("ISR %v, want %v", got, want)
	}
}

func (s *script) wantHW(want int64) {
	s.t.Helper()
	if got := s.l.HighWatermark(); got != want {
		s.t.Fatalf("high watermark %d, want %d", got, want)
	}
}

// Three replicas; follower 3 stops fetching. It leaves the ISR once it has
// not caught up for more than replica.lag.time.max, not a moment before,
// and rejoins when it catches up again.
func TestShrinkAfterLagTimeThenExpand(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 1)
	s.append(10)
	s.fetch(2, 10)
	s.fetch(3, 10)
	s.wantHW(10)

	caughtUp := s.now // 3 read the log end now, and never again
	s.after(time.Second)
	s.append(5)
	for s.now.Before(caughtUp.Add(lag)) {
		s.after(time.Second)
		s.fetch(2, s.l.LogEndOffset())
		if u := s.l.Tick(s.now); u.Proposal != nil {
			t.Fatalf("shrink proposed %v after the lag time", s.now.Sub(caughtUp))
		}
	}
	s.after(time.Millisecond)
	u := s.l.Tick(s.now)
	if u.Proposal == nil || u.Proposal.Change != Shrink || !slices.Equal(u.Proposal.Replicas, []int32{3}) {
		t.Fatalf("proposal %+v, want shrink of [3]", u.Proposal)
	}
	if want := (State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, ControllerEpoch: 2, Version: 7}); !equalState(u.Proposal.State, want) {
		t.Fatalf("proposed state %+v, want %+v", u.Proposal.State, want)
	}
	s.wantHW(10) // 3 still holds it until the shrink is committed
	s.write(u.Proposal)
	s.wantISR(1, 2)
	s.wantHW(15)

	s.after(time.Second)
	if u := s.fetch(3, 12); u.Proposal != nil {
		t.Fatal("a follower below the high watermark joined")
	}
	u = s.fetch(3, 15)
	if u.Proposal == nil || u.Proposal.Change != Expand || !slices.Equal(u.Proposal.State.ISR, []int32{1, 2, 3}) || u.Proposal.State.Version != 8 {
		t.Fatalf("proposal %+v, want expand to [1 2 3] at version 8", u.Proposal)
	}
	s.write(u.Proposal)
	s.wantISR(1, 2, 3)
	if m := s.l.Metrics(); m.ISRShrinks != 1 || m.ISRExpands != 1 || m.UnderReplicated {
		t.Fatalf("metrics %+v", m)
	}
}

func equalState(a, b State) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && slices.Equal(a.ISR, b.ISR) &&
		a.ControllerEpoch == b.ControllerEpoch && a.Version == b.Version
}

// A follower that reads, each time, up to where the log ended at its
// previous fetch is slow but not lagging: it is caught up as of that
// previous fetch (Kafka's Replica.updateFetchState) and stays in the ISR.
func TestSlowFollowerReadingPreviousEndStaysInSync(t *testing.T) {
	s := newScript(t, []int32{1, 2}, []int32{1, 2}, 0, 0, 1)
	prevEnd := int64(0)
	for range 30 {
		s.after(time.Second)
		s.append(100)
		end := s.l.LogEndOffset()
		s.fetch(2, prevEnd) // never at the log end, always at the previous one
		prevEnd = end
		if u := s.l.Tick(s.now); u.Proposal != nil {
			t.Fatalf("slow follower shrunk at %v", s.now.Sub(t0))
		}
	}
	// Falling further behind (below the previous fetch's end) is lagging:
	// the follower was last caught up as of its second-to-last fetch.
	caughtUp := s.l.Metrics().Followers[0].LastCaughtUp
	if want := s.now.Add(-time.Second); !caughtUp.Equal(want) {
		t.Fatalf("last caught up %v, want %v", caughtUp, want)
	}
	stuck := prevEnd - 100
	for range 20 {
		s.after(time.Second)
		s.append(100)
		s.fetch(2, stuck)
		if u := s.l.Tick(s.now); u.Proposal != nil {
			if s.now.Sub(caughtUp) <= lag {
				t.Fatalf("shrunk %v after last caught up", s.now.Sub(caughtUp))
			}
			return
		}
		if s.now.Sub(caughtUp) > lag {
			t.Fatalf("not shrunk %v after last caught up", s.now.Sub(caughtUp))
		}
	}
	t.Fatal("a lagging follower was never shrunk")
}

// A follower at the leader's log end is in sync however long ago it
// fetched: there was nothing to fetch.
func TestIdleFollowerAtLogEndStaysInSync(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 1)
	s.append(3)
	s.fetch(2, 3)
	s.fetch(3, 3)
	s.after(time.Hour)
	if u := s.l.Tick(s.now); u.Proposal != nil {
		t.Fatalf("idle followers shrunk: %+v", u.Proposal)
	}
}

// The high watermark is the slowest ISR member's log end.
func TestHighWatermarkFollowsSlowestISRMember(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 1)
	s.append(10)
	s.wantHW(0)
	if u := s.fetch(2, 10); u.HighWatermarkAdvanced {
		t.Fatal("advanced before 3 fetched")
	}
	if u := s.fetch(3, 4); !u.HighWatermarkAdvanced {
		t.Fatal("did not advance")
	}
	s.wantHW(4)
	s.fetch(3, 7)
	s.wantHW(7)
	s.fetch(2, 10)
	s.wantHW(7)
	s.fetch(3, 10)
	s.wantHW(10)
	// A follower fetching lower again (it truncated) never moves it back.
	s.fetch(3, 9)
	s.wantHW(10)
}

// A new leader does not know its followers' log ends: the high watermark
// waits for every ISR follower's first fetch; with an ISR of the leader
// alone it is the log end at once.
func TestNewLeaderWaitsForFollowersFirstFetch(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 20, 12, 1)
	s.wantHW(12)
	s.fetch(2, 20)
	s.wantHW(12)
	s.fetch(3, 20)
	s.wantHW(20)

	alone := newScript(t, []int32{1, 2, 3}, []int32{1}, 20, 12, 1)
	alone.wantHW(20)
	if alone.l.EpochStartOffset() != 20 {
		t.Fatalf("epoch starts at %d", alone.l.EpochStartOffset())
	}
}

// A follower joins only from the epoch's start on: below it, its log may
// hold a former leader's tail (Kafka's isFollowerAtHighwatermark).
func TestExpandNeedsEpochStart(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 3}, 100, 50, 1)
	if u := s.fetch(2, 60); u.Proposal != nil {
		t.Fatal("joined below the epoch start")
	}
	if u := s.fetch(2, 100); u.Proposal == nil || u.Proposal.Change != Expand {
		t.Fatalf("did not join at the epoch start: %+v", u.Proposal)
	}
}

// While a shrink is in flight the leaving follower still holds the high
// watermark; the ISR counts for acks only once committed.
func TestPendingShrinkHoldsHighWatermark(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 2)
	s.append(10)
	s.fetch(2, 10)
	s.fetch(3, 10)
	s.append(10)
	s.fetch(2, 20)
	s.after(lag + time.Second)
	s.fetch(2, 20)
	p := s.l.Tick(s.now).Proposal
	if p == nil {
		t.Fatal("no shrink")
	}
	s.append(1)
	s.fetch(2, 21)
	s.wantHW(10)
	if got := s.l.MaximalISR(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("maximal ISR %v during a shrink", got)
	}
	if u := s.l.Tick(s.now); u.Proposal != nil {
		t.Fatal("a second change while one is in flight")
	}
	s.write(p)
	s.wantHW(21)
}

// While an expand is in flight the joining follower already holds the
// high watermark (the "maximal" ISR of KIP-497), though it does not yet
// count for min.insync.replicas before the append.
func TestPendingExpandCountsJoiningFollower(t *testing.T) {
	s := newScript(t, []int32{1, 2}, []int32{1}, 10, 10, 2)
	p := s.fetch(2, 10).Proposal
	if p == nil || p.Change != Expand {
		t.Fatalf("proposal %+v", p)
	}
	if err := s.l.CheckEnoughReplicas(); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("pending member counted before commit: %v", err)
	}
	s.append(5)
	s.wantHW(10)
	s.fetch(2, 13)
	s.wantHW(13)
	s.write(p)
	if err := s.l.CheckEnoughReplicas(); err != nil {
		t.Fatal(err)
	}
}

// Kafka 2.8: a follower outside the ISR that caught up within the lag time
// holds the high watermark so that it can reach it and join; once it has
// not caught up for the lag time, the high watermark moves on.
func TestCaughtUpFollowerOutsideISRHoldsHighWatermark(t *testing.T) {
	s := newScript(t, []int32{1, 2}, []int32{1}, 10, 10, 1)
	p := s.fetch(2, 10).Proposal
	s.l.Conflict(p) // it stays outside the ISR
	s.append(5)
	s.wantHW(10)
	s.after(lag)
	s.l.Tick(s.now)
	s.wantHW(10)
	s.after(time.Millisecond)
	if u := s.l.Tick(s.now); !u.HighWatermarkAdvanced {
		t.Fatal("tick did not release the high watermark")
	}
	s.wantHW(15)
}

// A write that loses on the znode version leaves the ISR as committed and
// proposes nothing more until the state is re-read; the re-read state is
// then adopted and the next proposal carries its version.
func TestConflictLeavesISRUnchanged(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 1)
	s.append(10)
	s.fetch(2, 10)
	s.after(lag + time.Second)
	s.fetch(2, 10)
	p := s.l.Tick(s.now).Proposal
	s.zk.Version = 9 // someone else wrote the znode meanwhile
	if s.write(p) {
		t.Fatal("stale write won")
	}
	s.wantISR(1, 2, 3)
	s.wantHW(0)
	if s.l.Pending() != nil {
		t.Fatal("conflicted proposal still pending")
	}
	s.after(time.Second)
	if u := s.l.Tick(s.now); u.Proposal != nil {
		t.Fatal("proposed again with a known-stale version")
	}
	s.l.Committed(p, 10, s.now) // a late success report for it changes nothing
	s.wantISR(1, 2, 3)

	if _, err := s.l.Refresh(State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}, ControllerEpoch: 3, Version: 6}, s.now); !errors.Is(err, ErrStaleState) {
		t.Fatalf("older version: %v", err)
	}
	if _, err := s.l.Refresh(s.zk, s.now); err != nil {
		t.Fatal(err)
	}
	p = s.l.Tick(s.now).Proposal
	if p == nil || p.State.Version != 9 || p.State.ControllerEpoch != 2 {
		t.Fatalf("proposal after refresh %+v", p)
	}
	if !s.write(p) {
		t.Fatal("write after refresh lost")
	}
	s.wantISR(1, 2)
	s.wantHW(10)
}

func TestRefresh(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 10, 10, 1)
	s.fetch(2, 10)
	s.fetch(3, 10)
	if _, err := s.l.Refresh(State{Leader: 2, LeaderEpoch: 6, ISR: []int32{2, 3}, Version: 8}, s.now); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("other leader: %v", err)
	}
	if _, err := s.l.Refresh(State{Leader: 2, LeaderEpoch: 4, ISR: []int32{2}, Version: 9}, s.now); !errors.Is(err, ErrStaleState) {
		t.Fatalf("older epoch: %v", err)
	}
	if _, err := s.l.Refresh(State{Leader: 1, LeaderEpoch: 5, ISR: []int32{2, 3}, Version: 8}, s.now); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("ISR without the leader: %v", err)
	}
	if _, err := s.l.Refresh(State{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 4}, Version: 8}, s.now); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("ISR beyond the replicas: %v", err)
	}
	// Re-elected at a new epoch: it starts at the log end; the followers'
	// log ends are kept.
	s.append(5)
	u, err := s.l.Refresh(State{Leader: 1, LeaderEpoch: 6, ISR: []int32{1, 2}, ControllerEpoch: 3, Version: 8}, s.now)
	if err != nil || !u.NewEpoch {
		t.Fatalf("%+v %v", u, err)
	}
	if s.l.Epoch() != 6 || s.l.EpochStartOffset() != 15 {
		t.Fatalf("epoch %d from %d", s.l.Epoch(), s.l.EpochStartOffset())
	}
	if m := s.l.Metrics(); m.Followers[0].LogEndOffset != 10 {
		t.Fatalf("follower log end lost: %+v", m.Followers)
	}
	if _, err := s.l.FollowerFetched(Fetch{Replica: 2, CurrentLeaderEpoch: 5, FetchOffset: 15, LeaderLEO: 15}, s.now); !errors.Is(err, epoch.ErrFencedLeaderEpoch) {
		t.Fatalf("old-epoch fetch: %v", err)
	}
}

// Fetches are fenced by epoch as Kafka's: older than ours FENCED, newer
// UNKNOWN, none given accepted. Errors change nothing.
func TestFetchValidation(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 10, 0, 1)
	for _, tc := range []struct {
		fe   Fetch
		want error
	}{
		{Fetch{Replica: 2, CurrentLeaderEpoch: 4, FetchOffset: 10, LeaderLEO: 10}, epoch.ErrFencedLeaderEpoch},
		{Fetch{Replica: 2, CurrentLeaderEpoch: 6, FetchOffset: 10, LeaderLEO: 10}, epoch.ErrUnknownLeaderEpoch},
		{Fetch{Replica: 4, CurrentLeaderEpoch: 5, FetchOffset: 10, LeaderLEO: 10}, ErrUnknownReplica},
		{Fetch{Replica: 1, CurrentLeaderEpoch: 5, FetchOffset: 10, LeaderLEO: 10}, ErrUnknownReplica},
		{Fetch{Replica: 2, CurrentLeaderEpoch: 5, FetchOffset: 11, LeaderLEO: 10}, ErrOffsetOutOfRange},
		{Fetch{Replica: 2, CurrentLeaderEpoch: 5, FetchOffset: -1, LeaderLEO: 10}, ErrOffsetOutOfRange},
	} {
		if _, err := s.l.FollowerFetched(tc.fe, s.now); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.fe, err, tc.want)
		}
	}
	s.wantHW(0)
	if _, err := s.l.FollowerFetched(Fetch{Replica: 2, CurrentLeaderEpoch: -1, FetchOffset: 10, LeaderLEO: 10}, s.now); err != nil {
		t.Fatalf("fetch without epoch: %v", err)
	}
	if err := s.l.CheckEpoch(4); !errors.Is(err, epoch.ErrFencedLeaderEpoch) {
		t.Fatal(err)
	}
}

func TestNewLeaderValidation(t *testing.T) {
	cfg := Config{}
	for _, tc := range []struct {
		name     string
		replicas []int32
		st       State
		leo, hw  int64
		want     error
	}{
		{"not among replicas", []int32{2, 3}, State{Leader: 1, ISR: []int32{1}}, 0, 0, ErrInvalidState},
		{"duplicate replica", []int32{1, 2, 2}, State{Leader: 1, ISR: []int32{1}}, 0, 0, ErrInvalidState},
		{"other leader", []int32{1, 2}, State{Leader: 2, ISR: []int32{2}}, 0, 0, ErrNotLeader},
		{"ISR without leader", []int32{1, 2}, State{Leader: 1, ISR: []int32{2}}, 0, 0, ErrInvalidState},
		{"duplicate ISR", []int32{1, 2}, State{Leader: 1, ISR: []int32{1, 1}}, 0, 0, ErrInvalidState},
		{"high watermark past the end", []int32{1}, State{Leader: 1, ISR: []int32{1}}, 5, 6, ErrInvalidState},
	} {
		if _, err := NewLeader(1, tc.replicas, tc.st, tc.leo, tc.hw, cfg, t0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := NewLeader(1, []int32{1}, State{Leader: 1, ISR: []int32{1}}, 0, 0, Config{MinInsyncReplicas: -1}, t0); err == nil {
		t.Error("negative min.insync.replicas accepted")
	}
	l, err := NewLeader(1, []int32{1}, State{Leader: 1, ISR: []int32{1}}, 0, 0, cfg, t0)
	if err != nil || l.cfg.ReplicaLagTimeMax != DefaultReplicaLagTimeMax || l.cfg.MinInsyncReplicas != 1 {
		t.Fatalf("defaults: %+v %v", l, err)
	}
}

func TestMetrics(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2}, 0, 0, 2)
	s.append(10)
	s.fetch(2, 7)
	m := s.l.Metrics()
	if !m.UnderReplicated || m.UnderMinISR || !m.AtMinISR {
		t.Fatalf("%+v", m)
	}
	want := []FollowerLag{
		{Replica: 2, LogEndOffset: 7, Lag: 3, InSync: true, LastCaughtUp: t0},
		{Replica: 3, LogEndOffset: UnknownOffset, Lag: 10},
	}
	if !slices.Equal(m.Followers, want) {
		t.Fatalf("followers %+v, want %+v", m.Followers, want)
	}
}

// On a new leader, a follower outside the ISR is not caught up by its first
// fetch unless that fetch reads the log end (Kafka's makeLeader resets the
// previous fetch to unknown), so it does not hold the high watermark.
func TestNewLeaderFirstFetchOfOutsider(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 3}, 100, 50, 1)
	s.append(10)
	s.after(time.Second)
	p := s.fetch(2, 105).Proposal
	if p == nil {
		t.Fatal("no expand")
	}
	s.l.Conflict(p) // keep it outside
	if got := s.l.Metrics().Followers[0].LastCaughtUp; !got.IsZero() {
		t.Fatalf("outsider caught up as of %v", got)
	}
	s.fetch(3, 110)
	s.wantHW(110)
}

// The fetch and append paths run per partition per request: they must not
// allocate in the steady state.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 2)
	allocs := testing.AllocsPerRun(100, func() {
		s.append(1)
		s.fetch(2, s.l.LogEndOffset())
		s.fetch(3, s.l.LogEndOffset())
		s.l.Tick(s.now)
		_, _ = s.l.AcksAllDone(s.l.LogEndOffset())
		_ = s.l.CheckEnoughReplicas()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per append and fetches", allocs)
	}
}

// An expand says since when the joining follower was out of the ISR (as
// this leader knew it) and when it first fetched since, for the log line
// of its return (issue 23).
func TestExpandSaysHowLongTheFollowerWasOut(t *testing.T) {
	s := newScript(t, []int32{1, 2}, []int32{1}, 10, 10, 1)
	s.after(3 * time.Second)
	if u := s.fetch(2, 4); u.Proposal != nil {
		t.Fatalf("proposed %+v for a follower below the high watermark", u.Proposal)
	}
	firstFetch := s.now
	s.after(500 * time.Millisecond)
	u := s.fetch(2, 10)
	if u.Proposal == nil || u.Proposal.Change != Expand {
		t.Fatalf("no expand: %+v", u)
	}
	if !u.Proposal.OutSince.Equal(t0) || !u.Proposal.FirstFetch.Equal(firstFetch) {
		t.Fatalf("out since %v, first fetch %v; want %v and %v", u.Proposal.OutSince, u.Proposal.FirstFetch, t0, firstFetch)
	}
	s.l.Committed(u.Proposal, 8, s.now)
	if f := s.l.follower(2); !f.outSince.IsZero() || !f.firstFetch.IsZero() {
		t.Fatalf("back in the ISR, still out since %v", f.outSince)
	}
}

// What each follower was told of the high watermark, scripted as the
// answers to an acks=all append: the answer of the fetch that moves the
// high watermark carries news (it goes at once), a parked fetch's later
// answer too, and the next fetches nothing new (they may wait). A new
// leader has told no follower anything.
func TestHighWatermarkSentIsNewsOnce(t *testing.T) {
	s := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, 1)
	for _, f := range []int32{2, 3} {
		s.fetch(f, 0)
		if !s.l.HighWatermarkSent(f, 0) {
			t.Fatalf("follower %d: a new leader's first answer is not news", f)
		}
	}
	s.append(10)
	// Both read the append; the high watermark has not moved.
	for _, f := range []int32{2, 3} {
		s.fetch(f, 0)
		if s.l.HighWatermarkSent(f, s.l.HighWatermark()) {
			t.Fatalf("follower %d: high watermark 0 told twice as news", f)
		}
	}
	s.fetch(2, 10) // parks: the high watermark is still 0
	if s.l.HighWatermarkSent(2, s.l.HighWatermark()) {
		t.Fatal("follower 2: news before the high watermark moved")
	}
	if u := s.fetch(3, 10); !u.HighWatermarkAdvanced {
		t.Fatal("the last in-sync fetch did not move the high watermark")
	}
	if !s.l.HighWatermarkSent(3, s.l.HighWatermark()) {
		t.Fatal("follower 3: the fetch that moved the high watermark carries no news")
	}
	if !s.l.HighWatermarkSent(2, s.l.HighWatermark()) {
		t.Fatal("follower 2: its parked fetch's answer carries no news")
	}
	for _, f := range []int32{2, 3} {
		s.fetch(f, 10)
		if s.l.HighWatermarkSent(f, s.l.HighWatermark()) {
			t.Fatalf("follower %d: high watermark 10 told twice as news", f)
		}
	}
	if s.l.HighWatermarkSent(4, 10) || s.l.HighWatermarkSent(1, 10) {
		t.Fatal("news for a broker that is not a follower")
	}

	next := newScript(t, []int32{1, 2, 3}, []int32{1, 2, 3}, 10, 10, 1)
	if !next.l.HighWatermarkSent(2, 10) {
		t.Fatal("a new leader's first answer to a follower is not news")
	}
}
