package group

import (
	"context"
	"time"
)

// ExpireOffsets tombstones the committed offsets of empty groups that
// offsets.retention.minutes has passed for, as Kafka 2.1+ does (KIP-211):
// a group without members keeps its offsets for the retention after it
// became Empty, a standalone group's (one that only commits) after each
// commit; groups with members keep theirs. Deviation: the later of the
// two times counts for every empty group, so an offset never expires
// before Kafka would expire it. The tombstones reach
// __consumer_offsets, so the cleaner drops the commits and the
// tombstones after delete.retention.ms; a group left with nothing is
// forgotten by Tick. The background loop runs it every
// offsets.retention.check.interval.ms; with ManualTick, tests call it.
func (c *Coordinator) ExpireOffsets(ctx context.Context, now time.Time) (expired int) {
	for _, g := range c.groupList() {
		if c.serves(g.name) != errNone {
			continue
		}
		expired += c.expireGroup(ctx, g, now)
	}
	return expired
}

// expireGroup tombstones g's expired offsets and drops them from the
// table, unless a commit or a member came meanwhile.
func (c *Coordinator) expireGroup(ctx context.Context, g *group, now time.Time) int {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	due := g.expiredOffsets(now, c.cfg.OffsetsRetention)
	g.mu.Unlock()
	if len(due) == 0 {
		return 0
	}
	if err := c.writeOffsets(ctx, g, nil, due); err != nil {
		c.cfg.Logger.Warn("offset expiry not written", "group", g.name, "err", err)
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, tp := range due {
		delete(g.offsets, tp)
	}
	c.cfg.Logger.Info("committed offsets expired", "group", g.name, "partitions", len(due))
	return len(due)
}

// expiredOffsets lists the offsets of an empty g older than retention.
// Expects g.mu (and g.commitMu, so no commit lands in between).
func (g *group) expiredOffsets(now time.Time, retention time.Duration) []topicPartition {
	if g.state != stateEmpty || len(g.members) > 0 || len(g.pending) > 0 || g.committing > 0 {
		return nil
	}
	var due []topicPartition
	for _, tp := range sortedTPs(g.offsets) {
		since := g.offsets[tp].commitTime
		if !g.emptySince.IsZero() {
			since = max(since, g.emptySince.UnixMilli())
		}
		if now.UnixMilli()-since >= retention.Milliseconds() {
			due = append(due, tp)
		}
	}
	return due
}
