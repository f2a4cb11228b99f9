package replication

import (
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/replication/epoch"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// A follower's side of a partition: it copies its leader's batches as they
// are (offsets, epochs, timestamps, producer ids), takes its high watermark
// from the leader, and truncates a tail that diverged from the leader's
// (KIP-101) before fetching. The leader's side and the decisions of both
// (ISR, high watermark, where to truncate) are in replication/isr and
// replication/epoch.

// AppendAsFollower appends batches fetched from the leader with the offsets
// they carry (storage's KeepOffsets: the first must start at the log end).
// The idempotent producers' state follows them, so this replica answers
// retries correctly once it leads. The high watermark does not move here:
// it comes from the leader (FollowHighWatermark).
func (p *Replica) AppendAsFollower(batches []byte) (storage.AppendResult, error) {
	ps := p.producers
	ps.appendMu.RLock()
	defer ps.appendMu.RUnlock()
	ps.ready(p.log) // loaded before the append: a later load would not replay it
	res, err := p.log.Append(batches, storage.AppendOptions{KeepOffsets: true})
	if err != nil {
		return res, err
	}
	p.assignEpochsOf(batches)
	ps.recordReplicated(p.log, batches)
	p.mu.Lock()
	p.mu.unacknowledgedBytes += int64(len(batches))
	p.mu.appendedBytes += int64(len(batches))
	p.mu.Unlock()
	return res, nil
}

// FollowHighWatermark moves the high watermark to the leader's, capped by
// this replica's log end (Kafka's follower rule: min(leader HW, LEO)). It
// never moves back; a truncation lowers it.
func (p *Replica) FollowHighWatermark(leaderHW int64) {
	p.leaderHW.Store(leaderHW)
	p.mu.Lock()
	before := p.hw.Load()
	p.setHighWatermarkLocked(min(leaderHW, p.log.LogEndOffset()))
	moved := p.hw.Load() != before
	p.mu.Unlock()
	if moved {
		p.notifyWaiters()
	}
}

// TruncateTo drops the log at and above offset (a batch boundary) and the
// producer state with it, which reloads from the snapshots below the cut
// and the log. The high watermark is capped at the new log end, and every
// request waiting on the partition answers now (delayed: a truncation is
// Gone), reading what is left.
func (p *Replica) TruncateTo(offset int64) error {
	if offset >= p.log.LogEndOffset() {
		return nil // nothing to cut: the producer state stays loaded
	}
	_, err := p.producers.recover(func() (bool, error) {
		if err := p.log.TruncateTo(offset); err != nil {
			return false, err
		}
		return true, nil
	}, p.log.LogEndOffset)
	if err != nil {
		return err
	}
	end := p.log.LogEndOffset()
	if err := p.epochs.truncateFromEnd(end); err != nil {
		return err
	}
	p.mu.Lock()
	if p.hw.Load() > end {
		p.hw.Store(end)
	}
	p.mu.unacknowledgedBytes = 0
	p.mu.Unlock()
	if p.waiters != nil {
		p.waiters.Notify(p.key(), delayed.State{Gone: true})
	}
	return nil
}

// assignEpochsOf records the epochs of copied batches in the epoch cache:
// each new epoch starts at its first batch.
func (p *Replica) assignEpochsOf(batches []byte) {
	for len(batches) >= recordbatch.HeaderSize {
		h, err := recordbatch.ParseHeader(batches)
		if err != nil || h.Size() > int64(len(batches)) {
			return // storage validated them
		}
		if err := p.epochs.assign(h.LeaderEpoch, h.BaseOffset); err != nil {
			p.logger.Error("leader epoch checkpoint", "err", err)
		}
		batches = batches[h.Size():]
	}
}

// TruncationQuery is the OffsetForLeaderEpoch question a new follower asks
// its leader before it fetches (KIP-101): where its own latest epoch ends
// on the leader. ask is false when it has no epoch history: it then
// truncates to its high watermark (TruncateToHighWatermark).
func (p *Replica) TruncationQuery() (req epoch.Request, ask bool) {
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	if !epoch.NeedsAnswer(p.epochs.cache) {
		return epoch.Request{}, false
	}
	return epoch.Query(p.epochs.cache, p.role.Load().LeaderEpoch), true
}

// TruncateForLeader cuts the log where it diverges from the leader's,
// given the leader's answer to TruncationQuery (KIP-101, KIP-279). done is
// false when the leader answered an epoch this replica does not hold: ask
// again, with the new latest epoch.
func (p *Replica) TruncateForLeader(answer epoch.EndOffset) (done bool, err error) {
	p.epochs.mu.Lock()
	tr := epoch.Truncate(p.epochs.cache, p.log.LogEndOffset(), p.hw.Load(), answer)
	p.epochs.mu.Unlock()
	if err := p.TruncateTo(tr.Offset); err != nil {
		return false, err
	}
	return tr.Done, nil
}

// TruncateToHighWatermark is KIP-101's fallback for a replica without an
// epoch history: keep what it knows was committed.
func (p *Replica) TruncateToHighWatermark() error {
	return p.TruncateTo(epoch.TruncateToHighWatermark(p.log.LogEndOffset(), p.hw.Load()).Offset)
}

// FollowerLag is how many records this follower's log end is behind the
// leader's high watermark as of the last fetch answer (Kafka's fetcher
// lag); 0 while it leads or before its first answer.
func (p *Replica) FollowerLag() int64 {
	if p.role.Load().Leader == p.brokerID {
		return 0
	}
	return max(0, p.leaderHW.Load()-p.log.LogEndOffset())
}
