package epoch

import (
	"errors"
	"sort"

	"github.com/ferry-mq/ferry/replication/checkpoint"
)

// Kafka's markers for "no epoch" and "no offset" (UNDEFINED_EPOCH,
// UNDEFINED_EPOCH_OFFSET), as OffsetForLeaderEpoch carries them.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// Entry is one leader epoch and the first offset its leader wrote. It is
// the line of leader-epoch-checkpoint.
type Entry = checkpoint.EpochEntry

// Errors of the CurrentLeaderEpoch check; the Kafka listener maps them to
// FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH.
var (
	// ErrFencedLeaderEpoch: the request's epoch is older than ours; the
	// sender must refresh its metadata.
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request's epoch is newer than ours; this
	// broker has not yet learnt of it, and the sender retries.
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")
)

// CheckCurrent compares a request's CurrentLeaderEpoch with the
// partition's, as Kafka does for Fetch, ListOffsets and
// OffsetForLeaderEpoch; a negative request epoch (not sent) passes.
func CheckCurrent(requestEpoch, ours int32) error {
	switch {
	case requestEpoch < 0 || requestEpoch == ours:
		return nil
	case requestEpoch < ours:
		return ErrFencedLeaderEpoch
	}
	return ErrUnknownLeaderEpoch
}

// Cache is a partition's leader-epoch history: entries with strictly
// increasing epochs and start offsets. The zero value is empty and ready.
type Cache struct {
	entries []Entry
}

// NewCache builds a cache from a checkpoint's entries, assigning them in
// order as Kafka does on load: an entry that breaks the order replaces the
// ones it conflicts with rather than failing the partition.
func NewCache(entries []Entry) *Cache {
	c := &Cache{entries: make([]Entry, 0, len(entries))}
	for _, e := range entries {
		c.Assign(e.Epoch, e.StartOffset)
	}
	return c
}

// Entries returns a copy of the entries, oldest first, for the checkpoint.
func (c *Cache) Entries() []Entry { return append([]Entry(nil), c.entries...) }

// Len is the number of entries.
func (c *Cache) Len() int { return len(c.entries) }

// Latest is the newest entry; ok is false when the cache is empty.
func (c *Cache) Latest() (e Entry, ok bool) {
	if len(c.entries) == 0 {
		return Entry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// LatestEpoch is the newest epoch, UndefinedEpoch when empty.
func (c *Cache) LatestEpoch() int32 {
	if e, ok := c.Latest(); ok {
		return e.Epoch
	}
	return UndefinedEpoch
}

// Earliest is the oldest entry; ok is false when the cache is empty.
func (c *Cache) Earliest() (e Entry, ok bool) {
	if len(c.entries) == 0 {
		return Entry{}, false
	}
	return c.entries[0], true
}

// Assign records that epoch's leader wrote at startOffset, and reports
// whether the cache changed (the caller then rewrites the checkpoint).
//
// As Kafka's LeaderEpochFileCache.assign (2.1 and later):
//   - the latest epoch again, at or after its start, changes nothing (every
//     batch of an epoch is assigned; only its first one counts);
//   - otherwise the entries the new one conflicts with (an epoch at or
//     above it, or a start at or after its start) are dropped and the new
//     entry appended, so the order holds. An older epoch thus replaces the
//     newer ones above it: the log, which was just written, is the truth.
//
// A negative epoch or offset (a batch without an epoch) records nothing.
func (c *Cache) Assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.Latest(); ok && last.Epoch == epoch && startOffset >= last.StartOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], Entry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// EndOffsetFor answers "where did requested end?" with Kafka's exact rules
// (LeaderEpochFileCache.endOffsetFor):
//   - requested is UndefinedEpoch, or above every epoch known: (UndefinedEpoch,
//     UndefinedOffset);
//   - requested is the latest epoch: (requested, logEndOffset), the epoch
//     still being written;
//   - otherwise the largest epoch at or below requested and the start of the
//     first epoch above it; when none is at or below (retention removed
//     them), requested itself and the start of the first known epoch, so a
//     follower truncates to where the leader's history begins.
func (c *Cache) EndOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == UndefinedEpoch || len(c.entries) == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if c.LatestEpoch() == requested {
		return requested, logEndOffset
	}
	// higher: the first entry with an epoch above requested.
	higher := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	switch {
	case higher == len(c.entries):
		return UndefinedEpoch, UndefinedOffset
	case higher == 0:
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// EpochForOffset is the epoch whose leader wrote offset; ok is false when
// offset lies before the first entry or the cache is empty.
func (c *Cache) EpochForOffset(offset int64) (int32, bool) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return UndefinedEpoch, false
	}
	return c.entries[i-1].Epoch, true
}

// TruncateFromEnd drops the entries starting at or after endOffset, after
// the log was truncated to endOffset; it reports whether any went.
func (c *Cache) TruncateFromEnd(endOffset int64) bool {
	if endOffset < 0 {
		return false
	}
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// TruncateFromStart follows the log start to startOffset (retention,
// DeleteRecords): the entries starting at or before it go, except that the
// last of them stays, now starting at startOffset, since its epoch still
// covers the records from there. It reports whether the cache changed.
func (c *Cache) TruncateFromStart(startOffset int64) bool {
	n := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if n == 0 {
		return false
	}
	kept := c.entries[n-1]
	if n == 1 && kept.StartOffset == startOffset {
		return false
	}
	kept.StartOffset = startOffset
	c.entries = append(c.entries[:0], append([]Entry{kept}, c.entries[n:]...)...)
	return true
}

// Clear drops every entry (the log was deleted or wholly truncated);
// it reports whether there were any.
func (c *Cache) Clear() bool {
	changed := len(c.entries) > 0
	c.entries = c.entries[:0]
	return changed
}
