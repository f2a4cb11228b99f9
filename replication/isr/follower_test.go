package isr

import (
	"testing"

	"github.com/ferry-mq/ferry/replication/epoch"
)

// The follower's high watermark is the leader's, capped by its own log end.
func TestFollowerHighWatermarkCappedByOwnLogEnd(t *testing.T) {
	f, err := NewFollower(2, 5, 0, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncated(epoch.Truncation{Offset: 10, Done: true})
	if !f.LeaderHighWatermark(8) || f.HighWatermark() != 8 {
		t.Fatalf("high watermark %d, want 8", f.HighWatermark())
	}
	f.LeaderHighWatermark(50)
	if f.HighWatermark() != 10 {
		t.Fatalf("high watermark %d beyond own log end 10", f.HighWatermark())
	}
	f.Appended(30)
	f.LeaderHighWatermark(50)
	if f.HighWatermark() != 30 {
		t.Fatalf("high watermark %d, want 30", f.HighWatermark())
	}
	if f.LeaderHighWatermark(50) {
		t.Fatal("unchanged high watermark reported as changed")
	}
	f.LogStartMoved(40)
	if f.HighWatermark() != 40 || f.LogEndOffset() != 40 {
		t.Fatalf("after log start 40: high watermark %d, log end %d", f.HighWatermark(), f.LogEndOffset())
	}
	f.LeaderHighWatermark(35)
	if f.HighWatermark() != 40 {
		t.Fatalf("high watermark %d below the log start", f.HighWatermark())
	}
}

// A new leader or epoch restarts truncation; the same one does not.
func TestFollowerTruncatesOnNewEpoch(t *testing.T) {
	f, _ := NewFollower(2, 5, 0, 10, 4)
	if !f.Truncating() {
		t.Fatal("a new follower fetches before truncating")
	}
	f.Truncated(epoch.Truncation{Offset: 10, Done: true})
	if f.Truncating() || f.LeaderChanged(2, 5) {
		t.Fatal("the same leader and epoch restart truncation")
	}
	if !f.LeaderChanged(2, 6) || !f.Truncating() || f.Epoch() != 6 {
		t.Fatal("a new epoch does not restart truncation")
	}
	f.Truncated(epoch.Truncation{Offset: 10, Done: true})
	if !f.LeaderChanged(3, 6) || f.Leader() != 3 {
		t.Fatal("a new leader does not restart truncation")
	}
}

// The whole truncation, driven through the follower: it asks with its own
// latest epoch at the new leader's epoch, truncates in two rounds where the
// leader holds an epoch it never saw, and its high watermark follows.
func TestFollowerTruncationRounds(t *testing.T) {
	cache := epoch.NewCache([]epoch.Entry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 5}})
	leaderCache := epoch.NewCache([]epoch.Entry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 4}, {Epoch: 3, StartOffset: 6}})
	f, _ := NewFollower(9, 3, 0, 8, 7)
	var rounds []int64
	for f.Truncating() && len(rounds) < 5 {
		req, ask := f.Query(cache)
		if !ask || req.CurrentLeaderEpoch != 3 {
			t.Fatalf("query %+v %v", req, ask)
		}
		answer, err := epoch.LeaderAnswer(leaderCache, 3, req, 7)
		if err != nil {
			t.Fatal(err)
		}
		tr := f.Decide(cache, answer)
		cache.TruncateFromEnd(tr.Offset)
		f.Truncated(tr)
		rounds = append(rounds, tr.Offset)
	}
	if len(rounds) != 2 || rounds[0] != 5 || rounds[1] != 4 {
		t.Fatalf("rounds %v, want [5 4]", rounds)
	}
	if f.LogEndOffset() != 4 || f.HighWatermark() != 4 {
		t.Fatalf("log end %d, high watermark %d", f.LogEndOffset(), f.HighWatermark())
	}
}

// Without epochs the follower truncates to its high watermark unasked.
func TestFollowerWithoutEpochs(t *testing.T) {
	var cache epoch.Cache
	f, _ := NewFollower(2, 5, 0, 10, 4)
	if _, ask := f.Query(&cache); ask {
		t.Fatal("asked without epochs")
	}
	tr := f.Decide(&cache, epoch.Undefined)
	if tr != (epoch.Truncation{Offset: 4, Done: true}) {
		t.Fatalf("%+v", tr)
	}
	f.Truncated(tr)
	if f.LogEndOffset() != 4 || f.Truncating() {
		t.Fatalf("log end %d truncating %v", f.LogEndOffset(), f.Truncating())
	}
}

func TestNewFollowerValidation(t *testing.T) {
	for _, c := range [][3]int64{{-1, 0, 0}, {5, 4, 4}, {0, 4, 5}, {0, 4, -1}} {
		if _, err := NewFollower(1, 0, c[0], c[1], c[2]); err == nil {
			t.Errorf("log start %d, end %d, high watermark %d accepted", c[0], c[1], c[2])
		}
	}
}

// OFFSET_OUT_OF_RANGE: a leader with a shorter log (unclean election)
// truncates the follower to its end; a leader whose retention passed the
// follower's end restarts it at the leader's start; otherwise refetch.
func TestFollowerOffsetOutOfRange(t *testing.T) {
	f, _ := NewFollower(2, 5, 0, 100, 90)
	if r := f.OffsetOutOfRange(0, 80); r != (Reset{Action: TruncateTo, Offset: 80}) || f.LogEndOffset() != 80 || f.HighWatermark() != 80 {
		t.Fatalf("shorter leader: %+v, log end %d, high watermark %d", r, f.LogEndOffset(), f.HighWatermark())
	}
	if r := f.OffsetOutOfRange(500, 900); r != (Reset{Action: StartAt, Offset: 500}) || f.LogEndOffset() != 500 || f.HighWatermark() != 500 {
		t.Fatalf("retention passed us: %+v, log end %d", r, f.LogEndOffset())
	}
	if r := f.OffsetOutOfRange(400, 900); r != (Reset{Action: Refetch, Offset: 500}) {
		t.Fatalf("in range: %+v", r)
	}
	// Truncating below the log start empties the log, starting there.
	f.Truncated(epoch.Truncation{Offset: 450, Done: true})
	if f.LogEndOffset() != 450 || f.HighWatermark() != 450 {
		t.Fatalf("below log start: log end %d, high watermark %d", f.LogEndOffset(), f.HighWatermark())
	}
}
