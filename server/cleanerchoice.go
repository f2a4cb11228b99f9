package server

import (
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// cleanCandidate is one compacted log as the choice of the next log to
// clean sees it: plain data, so the rule is tested without logs.
type cleanCandidate struct {
	state storage.CleanerState
	cfg   storage.Compaction
	busy  bool // another cleaner thread has it
}

// forced reports whether max.compaction.lag.ms forces a pass: a dirty
// record older than the lag (Kafka's needCompactionNow). The oldest dirty
// time is the first dirty segment's newest timestamp, so the force comes
// at most one segment's span late, never early.
func (c cleanCandidate) forced(now time.Time) bool {
	return c.cfg.MaxLag > 0 && c.state.OldestDirtyTime >= 0 &&
		now.UnixMilli()-c.state.OldestDirtyTime > c.cfg.MaxLag.Milliseconds()
}

// chooseDirtiest returns the index of the log to clean next, or -1:
// Kafka's grabFilthiestCompactedLog. A log qualifies when it is free, has
// dirty bytes, and its dirty ratio is above its min.cleanable.dirty.ratio
// or max.compaction.lag.ms forces it; among those the highest ratio wins
// (the earlier on a tie).
func chooseDirtiest(cands []cleanCandidate, now time.Time) int {
	best, bestRatio := -1, -1.0
	for i, c := range cands {
		if c.busy || !c.cfg.Enabled || c.state.DirtyBytes == 0 {
			continue
		}
		ratio := c.state.DirtyRatio()
		if ratio <= c.cfg.MinCleanableRatio && !c.forced(now) {
			continue
		}
		if ratio > bestRatio {
			best, bestRatio = i, ratio
		}
	}
	return best
}
