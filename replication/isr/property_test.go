package isr

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Seeded random timelines of appends, fetches, ticks, ZooKeeper writes that
// win or lose, controller-side ISR edits and fenced fetches. After every
// step: the high watermark never decreases, never passes the leader's log
// end nor any (maximal) ISR member's log end, and the ISR holds the
// leader. An ISR member's fetches never go below the high watermark: it
// holds every committed record, and its truncation to the leader's epoch
// boundary never cuts one.
func TestPropertyRandomTimelines(t *testing.T) {
	var total Metrics
	var advanced int
	for seed := uint64(1); seed <= 300; seed++ {
		m, hwMoved := runTimeline(t, seed, 400)
		total.ISRShrinks += m.ISRShrinks
		total.ISRExpands += m.ISRExpands
		if hwMoved {
			advanced++
		}
	}
	// The timelines must exercise what they check.
	if total.ISRShrinks < 100 || total.ISRExpands < 100 || advanced < 250 {
		t.Fatalf("weak timelines: %d shrinks, %d expands, high watermark moved in %d of 300",
			total.ISRShrinks, total.ISRExpands, advanced)
	}
}

func runTimeline(t *testing.T, seed uint64, steps int) (Metrics, bool) {
	rng := rand.New(rand.NewPCG(seed, 0x15a))
	n := 2 + rng.IntN(4)
	replicas := make([]int32, n)
	for i := range replicas {
		replicas[i] = int32(i + 1)
	}
	isr := []int32{1}
	for _, id := range replicas[1:] {
		if rng.IntN(2) == 0 {
			isr = append(isr, id)
		}
	}
	leo := int64(rng.IntN(50))
	hw := leo - int64(rng.IntN(int(leo)+1))
	s := newScript(t, replicas, isr, leo, hw, 1+rng.IntN(n))
	// each follower's log end as the timeline knows it (-1: not fetched)
	ends := map[int32]int64{}
	for _, id := range replicas[1:] {
		ends[id] = UnknownOffset
	}
	var pending *Proposal
	initialHW := s.l.HighWatermark()
	prevHW := initialHW
	for step := range steps {
		what := rng.IntN(10)
		switch {
		case what < 2:
			s.append(int64(rng.IntN(6)))
		case what < 6:
			id := replicas[1+rng.IntN(n-1)]
			// An ISR member holds every committed record and only grows; a
			// follower outside may fetch from anywhere (it truncated).
			lo := int64(0)
			if slices.Contains(s.l.MaximalISR(), id) {
				lo = max(ends[id], s.l.HighWatermark())
			}
			off := lo + rng.Int64N(s.l.LogEndOffset()-lo+1)
			u := s.fetch(id, off)
			ends[id] = off
			if u.Proposal != nil {
				pending = u.Proposal
			}
		case what < 7:
			s.after(time.Duration(rng.IntN(4000)) * time.Millisecond)
			if u := s.l.Tick(s.now); u.Proposal != nil {
				pending = u.Proposal
			}
		case what < 9 && pending != nil:
			checkProposal(t, seed, step, s.l, pending)
			if rng.IntN(4) == 0 {
				s.zk.Version++ // another writer got there first
			}
			if !s.write(pending) {
				s.refreshFromZK(rng)
			}
			pending = nil
		default:
			if _, err := s.l.FollowerFetched(Fetch{Replica: 2, CurrentLeaderEpoch: s.l.Epoch() - 1, FetchOffset: s.l.LogEndOffset(), LeaderLEO: s.l.LogEndOffset()}, s.now); err == nil {
				t.Fatalf("seed %d step %d: fenced fetch accepted", seed, step)
			}
		}
		if s.l.Pending() == nil {
			pending = nil
		}
		prevHW = checkInvariants(t, seed, step, s.l, ends, prevHW, initialHW)
	}
	return s.l.Metrics(), s.l.HighWatermark() > initialHW
}

// refreshFromZK re-reads the znode after a lost write; sometimes the
// controller has meanwhile removed a follower from the ISR.
func (s *script) refreshFromZK(rng *rand.Rand) {
	s.t.Helper()
	if len(s.zk.ISR) > 1 && rng.IntN(2) == 0 {
		i := 1 + rng.IntN(len(s.zk.ISR)-1)
		if s.zk.ISR[i] != s.l.self {
			s.zk.ISR = slices.Delete(slices.Clone(s.zk.ISR), i, i+1)
			s.zk.Version++
		}
	}
	if _, err := s.l.Refresh(s.zk, s.now); err != nil {
		s.t.Fatalf("refresh %+v: %v", s.zk, err)
	}
}

func checkProposal(t *testing.T, seed uint64, step int, l *Leader, p *Proposal) {
	t.Helper()
	if !slices.Contains(p.State.ISR, l.self) {
		t.Fatalf("seed %d step %d: proposal %+v drops the leader", seed, step, p)
	}
	for _, id := range p.State.ISR {
		if !slices.Contains(l.replicas, id) {
			t.Fatalf("seed %d step %d: proposal %+v names a non-replica", seed, step, p)
		}
	}
	if p.State.Version != l.version || p.State.LeaderEpoch != l.epoch {
		t.Fatalf("seed %d step %d: proposal %+v at version %d epoch %d", seed, step, p, l.version, l.epoch)
	}
}

func checkInvariants(t *testing.T, seed uint64, step int, l *Leader, ends map[int32]int64, prevHW, initialHW int64) int64 {
	t.Helper()
	hw := l.HighWatermark()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: "+format, append([]any{seed, step}, args...)...)
	}
	if hw < prevHW {
		fail("high watermark moved back from %d to %d", prevHW, hw)
	}
	if hw > l.LogEndOffset() {
		fail("high watermark %d past the log end %d", hw, l.LogEndOffset())
	}
	if !slices.Contains(l.ISR(), l.self) {
		fail("ISR %v lacks the leader", l.ISR())
	}
	for _, id := range l.MaximalISR() {
		if id == l.self {
			continue
		}
		// A member that has not fetched yet holds the high watermark where
		// the leader found it.
		if end := ends[id]; end == UnknownOffset && hw != initialHW {
			fail("high watermark %d moved from %d before ISR member %d fetched", hw, initialHW, id)
		} else if end != UnknownOffset && hw > end {
			fail("high watermark %d past ISR member %d's log end %d (ISR %v)", hw, id, end, l.MaximalISR())
		}
	}
	return hw
}
