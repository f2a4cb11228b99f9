package replication

import (
	"github.com/ferry-mq/ferry/replication/delayed"
	"github.com/ferry-mq/ferry/storage"
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
func (p *Partition) AppendAsFollower(batches []byte) (storage.AppendResult, error) {
	ps := p.producers
	ps.appendMu.RLock()
	defer ps.appendMu.RUnlock()
	ps.ready(p.log) // loaded before the append: a later load would not replay it
	res, err := p.log.Append(batches, storage.AppendOptions{KeepOffsets: true})
	if err != nil {
		return res, err
	}
	ps.recordReplicated(batches)
	p.mu.Lock()
	p.mu.unacknowledgedBytes += int64(len(batches))
	p.mu.appendedBytes += int64(len(batches))
	p.mu.Unlock()
	return res, nil
}

// FollowHighWatermark moves the high watermark to the leader's, capped by
// this replica's log end (Kafka's follower rule: min(leader HW, LEO)). It
// never moves back; a truncation lowers it.
func (p *Partition) FollowHighWatermark(leaderHW int64) {
	hw := min(leaderHW, p.log.LogEndOffset())
	p.mu.Lock()
	if hw <= p.hw.Load() {
		p.mu.Unlock()
		return
	}
	p.hw.Store(hw)
	if hw >= p.log.LogEndOffset() {
		// Bytes are counted exactly only once the high watermark has caught
		// up with the appends; until then a waiting fetch sees at least one
		// byte (delayed: a high watermark beyond its offset), never more
		// than exist.
		p.mu.visibleBytes += p.mu.unacknowledgedBytes
		p.mu.unacknowledgedBytes = 0
	}
	p.mu.Unlock()
	p.notifyWaiters()
}

// TruncateTo drops the log at and above offset (a batch boundary) and the
// producer state with it, which reloads from the snapshots below the cut
// and the log. The high watermark is capped at the new log end, and every
// request waiting on the partition answers now (delayed: a truncation is
// Gone), reading what is left.
func (p *Partition) TruncateTo(offset int64) error {
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
