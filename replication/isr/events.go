package isr

import (
	"fmt"
	"slices"
	"time"
)

// Fetch is one partition of a follower's fetch, as the leader served it.
type Fetch struct {
	Replica int32
	// CurrentLeaderEpoch is the fetch's epoch (negative: not sent).
	CurrentLeaderEpoch int32
	// FetchOffset is where the follower asked to read: its log end.
	FetchOffset int64
	// LeaderLEO is the leader's log end when the read was made.
	LeaderLEO int64
}

// FollowerFetched records a follower's fetch (Kafka's
// Partition.updateFollowerFetchState): its log end becomes FetchOffset,
// and it is caught up as of now when it asked for the leader's log end, or
// as of its previous fetch when it asked for at least the log end the
// leader had then (it read everything there was at that fetch). It may
// propose an expand and advance the high watermark. An error changes
// nothing.
func (l *Leader) FollowerFetched(fe Fetch, now time.Time) (Update, error) {
	if err := l.CheckEpoch(fe.CurrentLeaderEpoch); err != nil {
		return Update{}, err
	}
	f := l.follower(fe.Replica)
	if f == nil {
		return Update{}, fmt.Errorf("%w: broker %d, replicas %v", ErrUnknownReplica, fe.Replica, l.replicas)
	}
	if fe.FetchOffset < 0 || fe.FetchOffset > l.leo || fe.LeaderLEO > l.leo {
		return Update{}, fmt.Errorf("%w: fetch at %d (leader's end then %d), log end %d", ErrOffsetOutOfRange, fe.FetchOffset, fe.LeaderLEO, l.leo)
	}
	prev := f.leo
	updateFetchState(f, fe.FetchOffset, fe.LeaderLEO, now)
	l.heardAt = later(l.heardAt, now)
	if !f.outSince.IsZero() && f.firstFetch.IsZero() {
		f.firstFetch = now
	}
	var u Update
	if l.canExpandWith(f) {
		u.Proposal = l.propose(Expand, []int32{f.id}, append(slices.Clone(l.isr), f.id))
		u.Proposal.OutSince, u.Proposal.FirstFetch = f.outSince, f.firstFetch
	}
	if f.leo != prev {
		u.HighWatermarkAdvanced = l.advanceHighWatermark(now)
	}
	return u, nil
}

// HighWatermarkSent records that an answer to replica's fetch carries hw
// and reports whether hw is news to it: above every high watermark its
// earlier answers carried since this leader took over. A follower learns
// the high watermark only from these answers, and serves reads below it
// (the HTTP gateway on every node, read_committed readers of its last
// stable offset), so a fetch whose answer is news does not wait for
// records, and a parked one is answered once the high watermark passes
// what it was told (Kafka's DelayedFetch, case H; the listener lets each
// wait a moment for an append to carry it: server.FollowerTellWithin).
// Otherwise the follower would learn of the records it acknowledged only
// with the next append, or after replica.fetch.wait.max.ms.
func (l *Leader) HighWatermarkSent(replica int32, hw int64) bool {
	f := l.follower(replica)
	if f == nil || hw <= f.sentHW {
		return false
	}
	f.sentHW = hw
	return true
}

// updateFetchState is Kafka's Replica.updateFetchState.
func updateFetchState(f *follower, fetchOffset, leaderLEO int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetch)
	}
	f.leo = fetchOffset
	f.lastFetchLEO, f.lastFetch = leaderLEO, now
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// canExpandWith: a follower outside the ISR joins once it holds every
// committed record and this epoch's start (Kafka's
// isFollowerAtHighwatermark: a follower below the epoch start may still
// hold a previous leader's divergent tail), and no change is in flight.
func (l *Leader) canExpandWith(f *follower) bool {
	return l.pending == nil && !l.blocked && !slices.Contains(l.isr, f.id) &&
		f.leo >= l.hw && f.leo >= l.epochStart
}

// Tick proposes to shrink the ISR by the followers out of sync (Kafka's
// maybeShrinkIsr): behind the leader's log end and not caught up for more
// than ReplicaLagTimeMax. A follower at the log end never is, however long
// ago it fetched: there was nothing to fetch. The leader never leaves.
// Time passing may also release a high watermark held by a caught-up
// follower outside the ISR.
func (l *Leader) Tick(now time.Time) Update {
	var u Update
	if out := l.outOfSync(now); len(out) > 0 {
		isr := slices.DeleteFunc(slices.Clone(l.isr), func(id int32) bool { return slices.Contains(out, id) })
		u.Proposal = l.propose(Shrink, out, isr)
	}
	u.HighWatermarkAdvanced = l.advanceHighWatermark(now)
	return u
}

func (l *Leader) outOfSync(now time.Time) []int32 {
	if l.pending != nil || l.blocked {
		return nil
	}
	var out []int32
	for _, id := range l.isr {
		f := l.follower(id)
		if f != nil && f.leo != l.leo && now.Sub(f.lastCaughtUp) > l.cfg.ReplicaLagTimeMax {
			out = append(out, id)
		}
	}
	return out
}

func (l *Leader) propose(c Change, replicas, isr []int32) *Proposal {
	l.pending = &Proposal{Change: c, Replicas: replicas, State: State{
		Leader: l.self, LeaderEpoch: l.epoch, ISR: isr, ControllerEpoch: l.controllerEpoch, Version: l.version,
	}}
	return l.pending
}

// Committed reports that p was written and the znode is now at
// newVersion: its ISR counts from now on. A p other than the pending
// proposal (superseded by a Refresh) is ignored.
func (l *Leader) Committed(p *Proposal, newVersion int32, now time.Time) Update {
	if p == nil || p != l.pending {
		return Update{}
	}
	l.isr, l.version, l.pending = slices.Clone(p.State.ISR), newVersion, nil
	l.trackMembership(now)
	if p.Change == Expand {
		l.expands++
	} else {
		l.shrinks++
	}
	return Update{HighWatermarkAdvanced: l.advanceHighWatermark(now)}
}

// Conflict reports that p's write failed on the version: the ISR stays as
// committed, and no proposal follows until Refresh brings the znode's
// current state.
func (l *Leader) Conflict(p *Proposal) {
	if p != nil && p == l.pending {
		l.pending, l.blocked = nil, true
	}
}

// Refresh applies the partition state ZooKeeper holds now (re-read after a
// conflict) or a LeaderAndIsr from the controller:
//   - another leader: ErrNotLeader (the caller becomes a follower);
//   - an older epoch or znode version than held: ErrStaleState, ignored;
//   - a newer epoch led by this broker: the epoch restarts at the log end
//     (Update.NewEpoch), the followers' log ends are kept;
//   - the same epoch: its ISR and version are adopted.
//
// Any change in flight is dropped: its outcome is what st says.
func (l *Leader) Refresh(st State, now time.Time) (Update, error) {
	if st.LeaderEpoch < l.epoch || st.LeaderEpoch == l.epoch && st.Version < l.version {
		return Update{}, fmt.Errorf("%w: epoch %d version %d, held epoch %d version %d",
			ErrStaleState, st.LeaderEpoch, st.Version, l.epoch, l.version)
	}
	if err := l.checkState(st); err != nil {
		return Update{}, err
	}
	if st.LeaderEpoch > l.epoch {
		l.startEpoch(st, now)
		return Update{NewEpoch: true, HighWatermarkAdvanced: l.advanceHighWatermark(now)}, nil
	}
	l.adopt(st, now)
	return Update{HighWatermarkAdvanced: l.advanceHighWatermark(now)}, nil
}
