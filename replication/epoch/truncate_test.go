package epoch

import (
	"errors"
	"reflect"
	"testing"
)

// replica is a log in miniature for the scenarios: the epoch of each record
// (its offset is its index), the epoch cache the log keeps, and the high
// watermark.
type replica struct {
	name  string
	log   []int32
	cache Cache
	hw    int64
}

func (r *replica) leo() int64 { return int64(len(r.log)) }

// becomeLeader assigns the new epoch at the log end, as Kafka's makeLeader.
func (r *replica) becomeLeader(epoch int32) { r.cache.Assign(epoch, r.leo()) }

func (r *replica) append(epoch int32, n int) {
	for range n {
		r.cache.Assign(epoch, r.leo())
		r.log = append(r.log, epoch)
	}
}

// fetch copies what the leader has beyond the follower's log end, epochs
// and all, and takes the leader's high watermark capped by its own end.
func (r *replica) fetch(leader *replica) {
	for _, e := range leader.log[r.leo():] {
		r.cache.Assign(e, r.leo())
		r.log = append(r.log, e)
	}
	r.hw = min(leader.hw, r.leo())
}

func (r *replica) truncateTo(off int64) {
	if off >= r.leo() {
		return
	}
	r.log = r.log[:off]
	r.cache.TruncateFromEnd(off)
	r.hw = min(r.hw, off)
}

// answerFunc is what a leader answers to a follower's query.
type answerFunc func(leader *replica, epoch int32, q Request) EndOffset

func kafkaAnswer(leader *replica, epoch int32, q Request) EndOffset {
	a, err := LeaderAnswer(&leader.cache, epoch, q, leader.leo())
	if err != nil {
		panic(err)
	}
	return a
}

// kip101Answer is Kafka 0.11's leader (KIP-101 before KIP-279): it answers
// only an end offset, the start of the first epoch above the one asked.
func kip101Answer(leader *replica, _ int32, q Request) EndOffset {
	if q.LeaderEpoch == leader.cache.LatestEpoch() {
		return EndOffset{Epoch: UndefinedEpoch, Offset: leader.leo()}
	}
	for _, e := range leader.cache.Entries() {
		if e.Epoch > q.LeaderEpoch {
			return EndOffset{Epoch: UndefinedEpoch, Offset: e.StartOffset}
		}
	}
	return Undefined
}

// becomeFollower runs the truncation protocol against leader at epoch and
// returns the offsets truncated to, round by round.
func (r *replica) becomeFollower(t *testing.T, leader *replica, epoch int32, answer answerFunc) []int64 {
	t.Helper()
	var rounds []int64
	if !NeedsAnswer(&r.cache) {
		tr := TruncateToHighWatermark(r.leo(), r.hw)
		r.truncateTo(tr.Offset)
		return append(rounds, tr.Offset)
	}
	for len(rounds) < 10 {
		tr := Truncate(&r.cache, r.leo(), r.hw, answer(leader, epoch, Query(&r.cache, epoch)))
		r.truncateTo(tr.Offset)
		rounds = append(rounds, tr.Offset)
		if tr.Done {
			return rounds
		}
	}
	t.Fatalf("%s: truncation did not finish: %v", r.name, rounds)
	return nil
}

func sameLogs(t *testing.T, a, b *replica) {
	t.Helper()
	if !reflect.DeepEqual(a.log, b.log) {
		t.Fatalf("logs diverge: %s %v, %s %v", a.name, a.log, b.name, b.log)
	}
	if !reflect.DeepEqual(a.cache.Entries(), b.cache.Entries()) {
		t.Fatalf("caches diverge: %s %v, %s %v", a.name, a.cache.Entries(), b.name, b.cache.Entries())
	}
}

// KIP-101, scenario 1 (data loss on truncation to the high watermark): B
// holds m2 but learnt the high watermark that covers it only on a fetch it
// never made; it restarts. Truncating to its high watermark would drop m2,
// which A acknowledged, and lose it for good once A dies and B leads.
func TestKIP101FollowerKeepsCommittedRecordAfterRestart(t *testing.T) {
	a := &replica{name: "A"}
	b := &replica{name: "B"}
	a.becomeLeader(0)
	a.append(0, 2) // m1, m2
	b.fetch(a)     // B has both; A's high watermark was 0 when B fetched
	a.hw = 2       // B's next fetch would have told it
	if b.hw != 0 {
		t.Fatalf("B's high watermark %d", b.hw)
	}

	// The fallback alone: the committed m2 goes.
	old := *b
	old.log = append([]int32(nil), b.log...)
	old.cache = *NewCache(b.cache.Entries())
	if tr := TruncateToHighWatermark(old.leo(), old.hw); tr.Offset != 0 {
		t.Fatalf("high watermark truncation to %d", tr.Offset)
	}

	// B restarts and asks A: the end of epoch 0 is A's log end.
	if got := b.becomeFollower(t, a, 0, kafkaAnswer); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("truncated to %v, want [2]", got)
	}
	// A dies; B leads with both records.
	b.becomeLeader(1)
	if b.leo() != 2 {
		t.Fatalf("B lost a committed record: log %v", b.log)
	}
}

// KIP-101, scenario 2 (divergent logs after a restart): A and B lose power;
// B had not flushed m2 and comes back first, leads epoch 1 and takes m3 at
// offset 1. A returns with m2 at offset 1 and a high watermark of 2: the
// fallback keeps m2 and the logs diverge; the epoch answer truncates it.
func TestKIP101DivergentLogsAfterRestart(t *testing.T) {
	a := &replica{name: "A", log: []int32{0, 0}, hw: 2}
	a.cache.Assign(0, 0)
	b := &replica{name: "B", log: []int32{0}, hw: 1}
	b.cache.Assign(0, 0)

	b.becomeLeader(1)
	b.append(1, 1) // m3 at offset 1

	if tr := TruncateToHighWatermark(a.leo(), a.hw); tr.Offset != 2 {
		t.Fatalf("fallback truncates to %d; the scenario needs it to keep m2", tr.Offset)
	}
	if got := a.becomeFollower(t, b, 1, kafkaAnswer); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("A truncated to %v, want [1]", got)
	}
	a.fetch(b)
	sameLogs(t, a, b)
}

// KIP-279: leadership moves twice quickly, so the follower holds records of
// an epoch the new leader never saw, and the leader holds an epoch the
// follower never saw. KIP-101's end offset alone keeps a divergent record;
// the leader's epoch in the answer makes the follower truncate in two rounds.
//
//	epoch 0, X leads:  0..3 everywhere, 4 reaches F only
//	epoch 1, L leads:  writes 4, 5; dies before F fetches
//	epoch 2, F leads:  writes 5, 6, 7; dies
//	epoch 3, L leads:  writes 6; F returns as its follower
func TestKIP279FastLeaderFailover(t *testing.T) {
	build := func() (l, f *replica) {
		l, f = &replica{name: "L"}, &replica{name: "F"}
		x := &replica{name: "X"}
		x.becomeLeader(0)
		x.append(0, 4)
		l.fetch(x)
		x.append(0, 1)
		f.fetch(x)

		l.becomeLeader(1)
		l.append(1, 2)
		f.becomeLeader(2)
		f.append(2, 3)
		l.becomeLeader(3)
		l.append(3, 1)
		return l, f
	}

	l, f := build()
	if got := f.becomeFollower(t, l, 3, kafkaAnswer); !reflect.DeepEqual(got, []int64{5, 4}) {
		t.Fatalf("F truncated to %v, want [5 4]", got)
	}
	f.fetch(l)
	sameLogs(t, l, f)

	// Before KIP-279 the same history diverges.
	l, f = build()
	f.becomeFollower(t, l, 3, kip101Answer)
	f.fetch(l)
	if reflect.DeepEqual(l.log, f.log) {
		t.Fatalf("KIP-101 alone converged (%v); the scenario does not show KIP-279's case", f.log)
	}
}

// A new leader assigns its epoch at its log end before writing anything, so
// a follower that took records from a short-lived leader in between learns
// where to cut (Kafka's makeLeader, for successive elections).
func TestNewLeaderEpochStartTruncatesShortLivedLeadersRecords(t *testing.T) {
	a, b, c := &replica{name: "A"}, &replica{name: "B"}, &replica{name: "C"}
	a.becomeLeader(0)
	a.append(0, 10)
	b.fetch(a)
	c.fetch(a)
	a.append(0, 2) // 10, 11 on A alone

	b.becomeLeader(1)
	b.append(1, 1) // 10 on B alone
	c.becomeLeader(2)

	if got := b.becomeFollower(t, c, 2, kafkaAnswer); !reflect.DeepEqual(got, []int64{10}) {
		t.Fatalf("B truncated to %v, want [10]", got)
	}
	if got := a.becomeFollower(t, c, 2, kafkaAnswer); !reflect.DeepEqual(got, []int64{10}) {
		t.Fatalf("A truncated to %v, want [10]", got)
	}
	c.append(2, 3)
	a.fetch(c)
	b.fetch(c)
	sameLogs(t, a, c)
	sameLogs(t, b, c)
}

// A follower that records no epochs truncates to its high watermark
// without asking.
func TestFollowerWithoutEpochsTruncatesToHighWatermark(t *testing.T) {
	f := &replica{name: "F", log: []int32{0, 0, 0}, hw: 2}
	if NeedsAnswer(&f.cache) {
		t.Fatal("an empty cache asks the leader")
	}
	if got := f.becomeFollower(t, nil, 1, kafkaAnswer); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("truncated to %v, want [2]", got)
	}
}

func TestTruncateCases(t *testing.T) {
	c := NewCache(entries(0, 0, 2, 10, 4, 20)) // follower, log end 25
	const leo, hw = 25, 12
	for _, tc := range []struct {
		name   string
		leader EndOffset
		want   Truncation
	}{
		{"leader knows nothing: high watermark", Undefined, Truncation{hw, true}},
		{"v0 answer without epoch: its offset", EndOffset{UndefinedEpoch, 15}, Truncation{15, true}},
		{"v0 answer past our end: no-op", EndOffset{UndefinedEpoch, 30}, Truncation{leo, true}},
		{"same latest epoch, leader shorter", EndOffset{4, 22}, Truncation{22, true}},
		{"same latest epoch, leader longer", EndOffset{4, 40}, Truncation{leo, true}},
		{"older epoch we hold, ends earlier at the leader", EndOffset{2, 15}, Truncation{15, true}},
		{"older epoch we hold, ends later at the leader", EndOffset{2, 22}, Truncation{20, true}},
		{"epoch we never held: end of ours below it, ask again", EndOffset{3, 30}, Truncation{20, false}},
		{"epoch 1 unknown here: end of epoch 0", EndOffset{1, 5}, Truncation{10, false}},
		{"epoch below all of ours: where our history begins", EndOffset{0, 3}, Truncation{3, true}},
	} {
		if got := Truncate(c, leo, hw, tc.leader); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	var empty Cache
	if got := Truncate(&empty, leo, hw, EndOffset{2, 7}); got != (Truncation{7, true}) {
		t.Errorf("emptied cache: %+v", got)
	}
}

func TestLeaderAnswer(t *testing.T) {
	c := NewCache(entries(0, 0, 3, 10, 5, 20))
	const current, leo = 5, 30
	for _, tc := range []struct {
		req     Request
		want    EndOffset
		wantErr error
	}{
		{Request{-1, 5}, EndOffset{5, leo}, nil},
		{Request{5, 5}, EndOffset{5, leo}, nil},
		{Request{5, 4}, EndOffset{3, 20}, nil},
		{Request{5, 0}, EndOffset{0, 10}, nil},
		{Request{5, 6}, Undefined, nil},
		{Request{5, UndefinedEpoch}, Undefined, nil},
		{Request{4, 4}, Undefined, ErrFencedLeaderEpoch},
		{Request{6, 4}, Undefined, ErrUnknownLeaderEpoch},
	} {
		got, err := LeaderAnswer(c, current, tc.req, leo)
		if got != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("%+v: %+v %v, want %+v %v", tc.req, got, err, tc.want, tc.wantErr)
		}
	}
}
