package isr

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication/epoch"
)

// Errors of the leader's decisions. The Kafka listener maps them to
// protocol codes: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, OFFSET_OUT_OF_RANGE; a fetch from an
// unknown replica is answered with no records, as Kafka does.
var (
	ErrNotLeader                    = errors.New("this broker does not lead the partition")
	ErrNotEnoughReplicas            = errors.New("the in-sync replicas are fewer than min.insync.replicas")
	ErrNotEnoughReplicasAfterAppend = errors.New("written, but the in-sync replicas fell below min.insync.replicas")
	ErrUnknownReplica               = errors.New("the fetching broker is not a replica of the partition")
	ErrOffsetOutOfRange             = errors.New("fetch offset outside the leader's log")
	ErrInvalidState                 = errors.New("invalid partition state")
	ErrStaleState                   = errors.New("partition state older than the one held")
)

// UnknownOffset is a follower's log end offset before its first fetch to
// this leader.
const UnknownOffset int64 = -1

// Config holds a partition's replication settings.
type Config struct {
	// ReplicaLagTimeMax is replica.lag.time.max.ms: a follower that has
	// not caught up with the leader's log end for longer leaves the ISR.
	// Zero means Kafka's default, 30 s.
	ReplicaLagTimeMax time.Duration
	// MinInsyncReplicas is min.insync.replicas: acks=all needs an ISR of at
	// least this many. Zero means Kafka's default, 1.
	MinInsyncReplicas int
}

// DefaultReplicaLagTimeMax is Kafka's replica.lag.time.max.ms.
const DefaultReplicaLagTimeMax = 30 * time.Second

// Validate reports a setting outside its range.
func (c Config) Validate() error {
	if c.ReplicaLagTimeMax < 0 {
		return fmt.Errorf("replica.lag.time.max.ms %v is negative", c.ReplicaLagTimeMax)
	}
	if c.MinInsyncReplicas < 0 {
		return fmt.Errorf("min.insync.replicas %d is negative", c.MinInsyncReplicas)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ReplicaLagTimeMax == 0 {
		c.ReplicaLagTimeMax = DefaultReplicaLagTimeMax
	}
	if c.MinInsyncReplicas == 0 {
		c.MinInsyncReplicas = 1
	}
	return c
}

// State is a partition's leadership as its ZooKeeper state znode holds it
// (Kafka's LeaderAndIsr with the controller epoch), plus the znode version.
type State struct {
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32
	// Version is the znode's version (Kafka's zkVersion); an ISR write is
	// conditional on it.
	Version int32
}

// Change names what a Proposal does to the ISR.
type Change int8

// The two ISR changes a leader proposes.
const (
	Expand Change = iota + 1
	Shrink
)

func (c Change) String() string {
	switch c {
	case Expand:
		return "expand"
	case Shrink:
		return "shrink"
	}
	return "none"
}

// Proposal is an ISR change the caller writes to ZooKeeper.
type Proposal struct {
	Change Change
	// Replicas are the followers joining (Expand) or leaving (Shrink).
	Replicas []int32
	// OutSince and FirstFetch (Expand): since when the joining follower
	// was out of the ISR as this leader knew it, and its first fetch
	// since, so the caller can log how long its return took.
	OutSince, FirstFetch time.Time
	// State is the znode's new content; State.Version is the version the
	// write is conditional on (the one this leader holds).
	State State
}

// Update is what an event asks the caller to do.
type Update struct {
	// HighWatermarkAdvanced: notify the purgatory.
	HighWatermarkAdvanced bool
	// Proposal, when set: write it to ZooKeeper (see the package doc).
	Proposal *Proposal
	// NewEpoch (Refresh only): a new leader epoch starts at the log end;
	// assign it in the epoch cache.
	NewEpoch bool
}

// follower is the leader's view of one remote replica (Kafka's Replica).
type follower struct {
	id           int32
	leo          int64 // UnknownOffset until its first fetch
	lastCaughtUp time.Time
	// The previous fetch: when it came, and the leader's log end then.
	lastFetch    time.Time
	lastFetchLEO int64
	// outSince: out of the committed ISR since then, as this leader knows
	// (zero: in it); firstFetch: its first fetch since, for the log line
	// of its return (Proposal.OutSince).
	outSince, firstFetch time.Time
	// sentHW is the highest high watermark an answer to its fetches
	// carried (UnknownOffset: none yet), Kafka's lastSentHighWatermark.
	sentHW int64
}

// Leader is the leader's state of one partition.
type Leader struct {
	self      int32
	replicas  []int32
	followers []follower // the replicas but self, in assignment order
	cfg       Config

	epoch           int32
	epochStart      int64 // log end when this epoch began
	controllerEpoch int32
	version         int32
	isr             []int32   // committed
	pending         *Proposal // in flight, at most one
	blocked         bool      // a proposal conflicted: none until Refresh

	leo, hw          int64
	shrinks, expands uint64
	// heardAt is the last follower fetch in this epoch, or the epoch's
	// start (replication/fence's rule).
	heardAt time.Time
}

// NewLeader is this broker (self) becoming the leader of a partition with
// the given assignment (self included) and state, its log ending at leo
// with high watermark hw. The epoch starts at leo: the caller assigns
// (state.LeaderEpoch, leo) in the epoch cache, as Kafka's makeLeader.
// Followers in the ISR count as caught up now; their log ends are unknown
// until they fetch, so the high watermark waits for their first fetch,
// unless the ISR is the leader alone (it may then be leo at once).
func NewLeader(self int32, replicas []int32, st State, leo, hw int64, cfg Config, now time.Time) (*Leader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkAssignment(self, replicas); err != nil {
		return nil, err
	}
	if hw < 0 || hw > leo {
		return nil, fmt.Errorf("%w: high watermark %d, log end %d", ErrInvalidState, hw, leo)
	}
	l := &Leader{self: self, replicas: slices.Clone(replicas), cfg: cfg.withDefaults(), leo: leo, hw: hw}
	if err := l.checkState(st); err != nil {
		return nil, err
	}
	for _, id := range replicas {
		if id != self {
			l.followers = append(l.followers, follower{id: id, leo: UnknownOffset, lastFetchLEO: UnknownOffset, sentHW: UnknownOffset})
		}
	}
	l.startEpoch(st, now)
	for i := range l.followers {
		// Kafka's new leader also forgets the previous fetch: the first
		// one counts as caught up only if it reads the log end.
		l.followers[i].lastFetch, l.followers[i].lastFetchLEO = time.Time{}, UnknownOffset
	}
	l.advanceHighWatermark(now)
	return l, nil
}

func checkAssignment(self int32, replicas []int32) error {
	if !slices.Contains(replicas, self) {
		return fmt.Errorf("%w: broker %d not among replicas %v", ErrInvalidState, self, replicas)
	}
	for i, id := range replicas {
		if id < 0 || slices.Contains(replicas[:i], id) {
			return fmt.Errorf("%w: replicas %v", ErrInvalidState, replicas)
		}
	}
	return nil
}

// checkState accepts a state this broker can lead with.
func (l *Leader) checkState(st State) error {
	switch {
	case st.Leader != l.self:
		return fmt.Errorf("%w: broker %d leads epoch %d", ErrNotLeader, st.Leader, st.LeaderEpoch)
	case st.LeaderEpoch < 0:
		return fmt.Errorf("%w: leader epoch %d", ErrInvalidState, st.LeaderEpoch)
	case !slices.Contains(st.ISR, l.self):
		return fmt.Errorf("%w: ISR %v lacks the leader %d", ErrInvalidState, st.ISR, l.self)
	}
	for i, id := range st.ISR {
		if !slices.Contains(l.replicas, id) || slices.Contains(st.ISR[:i], id) {
			return fmt.Errorf("%w: ISR %v, replicas %v", ErrInvalidState, st.ISR, l.replicas)
		}
	}
	return nil
}

// startEpoch adopts st's epoch from the log end, resetting the followers'
// catch-up clocks as Kafka's makeLeader does: ISR members are caught up
// now, the others not at all, and the previous fetch is "now, at the
// epoch's start" (a re-elected leader; NewLeader forgets it).
func (l *Leader) startEpoch(st State, now time.Time) {
	l.epoch, l.epochStart, l.heardAt = st.LeaderEpoch, l.leo, now
	l.adopt(st, now)
	for i := range l.followers {
		f := &l.followers[i]
		f.lastCaughtUp = time.Time{}
		if slices.Contains(l.isr, f.id) {
			f.lastCaughtUp = now
		}
		f.lastFetch, f.lastFetchLEO = now, l.epochStart
	}
}

// adopt takes st's ISR and version as committed, ending any change in
// flight.
func (l *Leader) adopt(st State, now time.Time) {
	l.isr = slices.Clone(st.ISR)
	l.version, l.controllerEpoch = st.Version, st.ControllerEpoch
	l.pending, l.blocked = nil, false
	l.trackMembership(now)
}

// trackMembership notes when followers left the committed ISR.
func (l *Leader) trackMembership(now time.Time) {
	for i := range l.followers {
		f := &l.followers[i]
		switch in := slices.Contains(l.isr, f.id); {
		case in:
			f.outSince, f.firstFetch = time.Time{}, time.Time{}
		case f.outSince.IsZero():
			f.outSince = now
		}
	}
}

// SetConfig applies changed settings (a topic's min.insync.replicas or the
// broker's replica.lag.time.max.ms changed); they count from the next event.
func (l *Leader) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.cfg = cfg.withDefaults()
	return nil
}

// Epoch is the leader epoch.
func (l *Leader) Epoch() int32 { return l.epoch }

// EpochStartOffset is where this epoch began in the log.
func (l *Leader) EpochStartOffset() int64 { return l.epochStart }

// HighWatermark is the offset below which records are committed.
func (l *Leader) HighWatermark() int64 { return l.hw }

// LogEndOffset is the leader's log end as last reported by Appended.
func (l *Leader) LogEndOffset() int64 { return l.leo }

// ISR is the committed in-sync replica set, in ZooKeeper's order.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// MaximalISR is the ISR the high watermark waits for: the committed one,
// plus the follower joining in a pending expand.
func (l *Leader) MaximalISR() []int32 {
	if l.pending != nil && l.pending.Change == Expand {
		return slices.Clone(l.pending.State.ISR)
	}
	return l.ISR()
}

func (l *Leader) inMaximalISR(id int32) bool {
	if l.pending != nil && l.pending.Change == Expand {
		return slices.Contains(l.pending.State.ISR, id)
	}
	return slices.Contains(l.isr, id)
}

func (l *Leader) maximalISRSize() int {
	if l.pending != nil && l.pending.Change == Expand {
		return len(l.pending.State.ISR)
	}
	return len(l.isr)
}

// Replicas is the assignment, self included.
func (l *Leader) Replicas() []int32 { return slices.Clone(l.replicas) }

// State is the partition state as this leader holds it committed.
func (l *Leader) State() State {
	return State{Leader: l.self, LeaderEpoch: l.epoch, ISR: l.ISR(), ControllerEpoch: l.controllerEpoch, Version: l.version}
}

// HeardFromFollower is when a follower last fetched in this epoch (the
// epoch's start before any did), and whether another replica could be
// elected in this leader's place: the maximal ISR holds one (an expand
// in flight may have been written).
func (l *Leader) HeardFromFollower() (at time.Time, replaceable bool) {
	return l.heardAt, l.maximalISRSize() > 1
}

// Pending is the ISR change in flight, or nil.
func (l *Leader) Pending() *Proposal { return l.pending }

// CheckEpoch fences a request's CurrentLeaderEpoch (negative: not sent)
// against this leader's, as Kafka does for Fetch, ListOffsets and
// OffsetForLeaderEpoch.
func (l *Leader) CheckEpoch(requestEpoch int32) error {
	return epoch.CheckCurrent(requestEpoch, l.epoch)
}

// Appended records the leader's new log end after a local append.
func (l *Leader) Appended(leo int64, now time.Time) Update {
	if leo <= l.leo {
		return Update{}
	}
	l.leo = leo
	return Update{HighWatermarkAdvanced: l.advanceHighWatermark(now)}
}

// advanceHighWatermark moves the high watermark to the smallest log end
// among the leader, the maximal ISR and the followers caught up within the
// lag time (Kafka 2.8's maybeIncrementLeaderHW), never back.
func (l *Leader) advanceHighWatermark(now time.Time) bool {
	hw := l.leo
	for i := range l.followers {
		f := &l.followers[i]
		if f.leo < hw && (l.caughtUpWithin(f, now) || l.inMaximalISR(f.id)) {
			hw = f.leo
		}
	}
	if hw <= l.hw {
		return false
	}
	l.hw = hw
	return true
}

func (l *Leader) caughtUpWithin(f *follower, now time.Time) bool {
	// A zero lastCaughtUp (never) gives a saturated, huge Sub.
	return now.Sub(f.lastCaughtUp) <= l.cfg.ReplicaLagTimeMax
}

func (l *Leader) follower(id int32) *follower {
	for i := range l.followers {
		if l.followers[i].id == id {
			return &l.followers[i]
		}
	}
	return nil
}
