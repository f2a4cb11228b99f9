package epoch

// Request is one partition of an OffsetForLeaderEpoch request.
type Request struct {
	// CurrentLeaderEpoch is the sender's idea of the partition's epoch
	// (v2+; negative when not sent), fenced as in CheckCurrent.
	CurrentLeaderEpoch int32
	// LeaderEpoch is the epoch whose end the sender asks for: a follower's
	// latest epoch.
	LeaderEpoch int32
}

// EndOffset is one partition's OffsetForLeaderEpoch answer: the largest
// epoch the leader knows at or below the one asked, and the offset where
// that epoch ends in the leader's log.
type EndOffset struct {
	Epoch  int32
	Offset int64
}

// Undefined is the answer when the leader knows nothing to say.
var Undefined = EndOffset{Epoch: UndefinedEpoch, Offset: UndefinedOffset}

// LeaderAnswer is what the leader of a partition at currentEpoch, with
// cache and logEndOffset, answers to req (Kafka's
// Partition.lastOffsetForLeaderEpoch). The error is ErrFencedLeaderEpoch or
// ErrUnknownLeaderEpoch when req's CurrentLeaderEpoch is not ours; the
// answer is then Undefined. The caller checks first that this broker leads
// the partition (NOT_LEADER_OR_FOLLOWER otherwise) when a follower asks.
//
// The leader's cache always holds its current epoch (assigned when it
// became leader), so asking for it gives the log end offset, and asking
// for an older epoch gives where the next one began.
func LeaderAnswer(c *Cache, currentEpoch int32, req Request, logEndOffset int64) (EndOffset, error) {
	if err := CheckCurrent(req.CurrentLeaderEpoch, currentEpoch); err != nil {
		return Undefined, err
	}
	e, off := c.EndOffsetFor(req.LeaderEpoch, logEndOffset)
	if off == UndefinedOffset {
		return Undefined, nil
	}
	return EndOffset{Epoch: e, Offset: off}, nil
}

// Truncation is where a follower truncates its log before fetching. Done
// false means the leader answered an epoch this follower does not hold:
// after truncating to Offset it asks again with its new latest epoch.
type Truncation struct {
	Offset int64
	Done   bool
}

// NeedsAnswer reports whether a follower with cache must ask its leader
// before truncating; when it need not (no epoch recorded, as after an
// upgrade or on a new replica), TruncateToHighWatermark applies.
func NeedsAnswer(c *Cache) bool { return c.Len() > 0 }

// Query is the OffsetForLeaderEpoch request a follower sends to the leader
// of currentEpoch: the end of its own latest epoch.
func Query(c *Cache, currentEpoch int32) Request {
	return Request{CurrentLeaderEpoch: currentEpoch, LeaderEpoch: c.LatestEpoch()}
}

// TruncateToHighWatermark is KIP-101's fallback: without epochs to compare,
// the follower keeps what it knows was committed.
func TruncateToHighWatermark(logEndOffset, highWatermark int64) Truncation {
	return Truncation{Offset: min(highWatermark, logEndOffset), Done: true}
}

// Truncate decides a follower's truncation from its cache, its log end
// offset and high watermark, and the leader's answer to Query, as Kafka's
// AbstractFetcherThread.getOffsetTruncationState (2.8):
//   - the leader has no end offset for the epoch: fall back to the high
//     watermark (KIP-101);
//   - the leader answered without an epoch (a v0 answer): its offset;
//   - the follower's cache is empty (it had epochs when it asked: a
//     concurrent truncation emptied it): the leader's offset;
//   - the follower's largest epoch at or below the leader's is another
//     epoch (KIP-279: the leader's epoch is unknown here): the end of that
//     epoch in the follower's log, and ask again;
//   - the same epoch: the smaller of the two ends, where both logs agree.
//     (An epoch below all of the follower's also lands here: EndOffsetFor
//     answers it with the follower's first start offset.)
//
// The offset never exceeds logEndOffset: a truncation there is a no-op.
func Truncate(c *Cache, logEndOffset, highWatermark int64, leader EndOffset) Truncation {
	switch {
	case leader.Offset == UndefinedOffset:
		return TruncateToHighWatermark(logEndOffset, highWatermark)
	case leader.Epoch == UndefinedEpoch:
		return Truncation{Offset: min(leader.Offset, logEndOffset), Done: true}
	}
	ourEpoch, ourEnd := c.EndOffsetFor(leader.Epoch, logEndOffset)
	switch {
	case ourEnd == UndefinedOffset:
		return Truncation{Offset: min(leader.Offset, logEndOffset), Done: true}
	case ourEpoch != leader.Epoch:
		return Truncation{Offset: min(ourEnd, logEndOffset), Done: false}
	}
	return Truncation{Offset: min(ourEnd, leader.Offset, logEndOffset), Done: true}
}
