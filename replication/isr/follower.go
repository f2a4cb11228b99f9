package isr

import (
	"fmt"

	"github.com/ferry-mq/ferry/replication/epoch"
)

// Follower is this broker's state of a partition it follows: which leader
// and epoch it fetches from, its own log end and its high watermark.
type Follower struct {
	leader     int32
	epoch      int32
	leo, hw    int64
	logStart   int64
	truncating bool
}

// NewFollower is this broker becoming a follower of leader at leaderEpoch,
// its log spanning [logStart, leo) with high watermark hw. It starts by
// truncating: see Query and Decide.
func NewFollower(leader, leaderEpoch int32, logStart, leo, hw int64) (*Follower, error) {
	if logStart < 0 || leo < logStart || hw < 0 || hw > leo {
		return nil, fmt.Errorf("%w: log start %d, log end %d, high watermark %d", ErrInvalidState, logStart, leo, hw)
	}
	return &Follower{leader: leader, epoch: leaderEpoch, logStart: logStart, leo: leo, hw: max(hw, logStart), truncating: true}, nil
}

// Leader is the broker to fetch from.
func (f *Follower) Leader() int32 { return f.leader }

// Epoch is the leader epoch the follower fetches in (its fetches'
// CurrentLeaderEpoch).
func (f *Follower) Epoch() int32 { return f.epoch }

// LogEndOffset is where the next fetch starts.
func (f *Follower) LogEndOffset() int64 { return f.leo }

// HighWatermark is the follower's high watermark.
func (f *Follower) HighWatermark() int64 { return f.hw }

// Truncating reports whether the follower must truncate before fetching.
func (f *Follower) Truncating() bool { return f.truncating }

// LeaderChanged applies a LeaderAndIsr naming leader at leaderEpoch, and
// reports whether the fetcher must restart from truncation: the leader or
// the epoch changed (Kafka's makeFollower). Records of a former epoch may
// diverge from the new leader's log.
func (f *Follower) LeaderChanged(leader, leaderEpoch int32) bool {
	if leader == f.leader && leaderEpoch == f.epoch {
		return false
	}
	f.leader, f.epoch, f.truncating = leader, leaderEpoch, true
	return true
}

// Query is the OffsetForLeaderEpoch request to send while truncating; ask
// false means the cache has no epoch and Decide(cache, epoch.Undefined)
// truncates to the high watermark without asking.
func (f *Follower) Query(cache *epoch.Cache) (req epoch.Request, ask bool) {
	return epoch.Query(cache, f.epoch), epoch.NeedsAnswer(cache)
}

// Decide is where to truncate given the leader's answer (epoch.Undefined
// when none was asked). The caller truncates the log and the cache
// (TruncateFromEnd) there, then calls Truncated.
func (f *Follower) Decide(cache *epoch.Cache, answer epoch.EndOffset) epoch.Truncation {
	if !epoch.NeedsAnswer(cache) {
		return epoch.TruncateToHighWatermark(f.leo, f.hw)
	}
	return epoch.Truncate(cache, f.leo, f.hw, answer)
}

// Truncated records a truncation the caller made; when tr.Done the
// follower fetches from its new log end, else it queries again. A
// truncation below the log start empties the log, which then starts there
// (Kafka's truncateFullyAndStartAt).
func (f *Follower) Truncated(tr epoch.Truncation) {
	if tr.Offset < f.logStart {
		f.logStart = max(tr.Offset, 0)
	}
	f.leo = min(f.leo, max(tr.Offset, f.logStart))
	f.hw = min(f.hw, f.leo)
	f.truncating = !tr.Done
}

// ResetAction is how a follower resumes after OFFSET_OUT_OF_RANGE.
type ResetAction int8

// The three ways to resume.
const (
	// Refetch: keep the log and fetch again from its end.
	Refetch ResetAction = iota
	// TruncateTo: truncate the log and the epoch cache to Reset.Offset.
	TruncateTo
	// StartAt: empty the log and the epoch cache, and start the log at
	// Reset.Offset (the leader's log start).
	StartAt
)

// Reset is what a follower does when the leader refuses its fetch offset.
type Reset struct {
	Action ResetAction
	Offset int64
}

// OffsetOutOfRange decides how to resume after the leader refused the
// fetch offset, given the leader's log start and end (ListOffsets earliest
// and latest), as Kafka's fetchOffsetAndTruncate: past the leader's end
// (an unclean election gave it a shorter log), truncate to its end; below
// its start (the follower was away while retention ran), start afresh at
// the leader's log start; otherwise keep the log and fetch again. The
// follower's state follows; the caller acts on the Reset.
func (f *Follower) OffsetOutOfRange(leaderLogStart, leaderLogEnd int64) Reset {
	switch {
	case leaderLogEnd < f.leo:
		f.Truncated(epoch.Truncation{Offset: leaderLogEnd, Done: true})
		return Reset{Action: TruncateTo, Offset: f.leo}
	case leaderLogStart > f.leo:
		f.logStart, f.leo, f.hw = leaderLogStart, leaderLogStart, leaderLogStart
		f.truncating = false
		return Reset{Action: StartAt, Offset: leaderLogStart}
	}
	return Reset{Action: Refetch, Offset: f.leo}
}

// Appended records the follower's log end after appending fetched records.
func (f *Follower) Appended(leo int64) {
	f.leo = max(f.leo, leo)
}

// LeaderHighWatermark takes the high watermark of a fetch response, capped
// by the follower's own log end and raised to its log start, as Kafka's
// follower does (Log.updateHighWatermark); it reports whether it changed.
// It may move back: the follower follows the leader's word, which a new
// leader may give lower than an old one did.
func (f *Follower) LeaderHighWatermark(hw int64) bool {
	hw = max(min(hw, f.leo), f.logStart)
	changed := hw != f.hw
	f.hw = hw
	return changed
}

// LogStartMoved follows retention or DeleteRecords moving the log start.
func (f *Follower) LogStartMoved(start int64) {
	f.logStart = max(f.logStart, start)
	f.leo = max(f.leo, f.logStart)
	f.hw = max(f.hw, f.logStart)
}
