package delayed

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Key names a partition.
type Key struct {
	Topic     string
	Partition int32
}

// State is what a partition tells the waiters about itself.
type State struct {
	HighWatermark  int64
	LogStartOffset int64
	// VisibleBytes counts the bytes of the batches below HighWatermark
	// since the partition was opened; it never goes down.
	VisibleBytes int64
	// LogEndOffset and AppendedBytes are the same for the whole log, which
	// follower fetches read (they copy what consumers cannot see yet).
	LogEndOffset  int64
	AppendedBytes int64
	// LastStableOffset is where read_committed fetches stop (Wait.Committed).
	LastStableOffset int64
	// Gone: deleted, or no longer led here.
	Gone bool
}

// Wait is one partition's part of an Op.
type Wait struct {
	Key Key
	// Offset: for a fetch, the fetch offset; for a produce, the offset the
	// high watermark must reach (the appended records' last offset + 1).
	Offset int64
	// BaseBytes is State.VisibleBytes taken before the caller read the
	// partition; KnownBytes what that read found beyond Offset. Fetch only.
	BaseBytes  int64
	KnownBytes int64
	// ToLogEnd: a follower's fetch, which counts bytes below the log end
	// (State.LogEndOffset, AppendedBytes) rather than the high watermark.
	ToLogEnd bool
	// Committed: a read_committed fetch, which finds nothing until the
	// last stable offset passes its offset, however far the high watermark
	// is (an open transaction holds the last stable offset back). Its
	// bytes are counted as below the high watermark, at least one.
	Committed bool
	// ToldHighWatermark, with TellsHighWatermark (a follower's fetch): the
	// high watermark the follower knows. Once the partition's passes it
	// the fetch completes within TellWithin, whatever the bytes, so the
	// follower learns it (Kafka's DelayedFetch, case H, which answers at
	// once: TellWithin 0). Meanwhile an append completes it as usual, and
	// its answer carries the high watermark with the records.
	TellsHighWatermark bool
	ToldHighWatermark  int64
	TellWithin         time.Duration
}

// Outcome says why an Op completed.
type Outcome int32

const (
	Pending   Outcome = iota // not completed
	Ready                    // the condition holds, or a partition must answer now
	Expired                  // the timeout passed first
	Cancelled                // Cancel (the client went away)
	Closed                   // the Purgatory closed (shutdown)
)

func (o Outcome) String() string {
	return [...]string{"pending", "ready", "expired", "cancelled", "closed"}[o]
}

type kind int8

const (
	fetchKind kind = iota
	produceKind
)

// Op is one waiting request. Build it with NewFetch or NewProduce and hand
// it to Purgatory.Register once.
type Op struct {
	kind     kind
	minBytes int64

	outcome atomic.Int32
	done    chan struct{}
	pg      atomic.Pointer[Purgatory] // set by Register

	// waits' Wait fields are immutable; the rest is guarded by mu.
	waits []waitState

	mu struct {
		sync.Mutex
		remaining int // produce: waits whose high watermark is not reached
		stop      func() bool
		// tellWithin: a follower's high watermark to tell, within it (-1:
		// none); tellStop, once its timer is armed, stops that timer.
		tellWithin time.Duration
		tellStop   func() bool
	}
}

type waitState struct {
	Wait
	bytes   int64 // fetch: bytes beyond Offset seen so far
	reached bool  // produce: the high watermark reached Offset
}

// NewFetch waits for minBytes (at least 1) beyond the waits' offsets in
// total.
func NewFetch(minBytes int64, waits []Wait) *Op {
	op := newOp(fetchKind, waits)
	op.minBytes = max(minBytes, 1)
	return op
}

// NewProduce waits for every wait's high watermark to reach its Offset
// (acks=all).
func NewProduce(waits []Wait) *Op {
	op := newOp(produceKind, waits)
	op.mu.remaining = len(waits)
	return op
}

func newOp(k kind, waits []Wait) *Op {
	op := &Op{kind: k, done: make(chan struct{}), waits: make([]waitState, len(waits))}
	op.mu.tellWithin = -1
	for i, w := range waits {
		op.waits[i] = waitState{Wait: w, bytes: w.KnownBytes}
	}
	return op
}

// Done is closed when the Op completes.
func (op *Op) Done() <-chan struct{} { return op.done }

// Outcome is Pending until the Op completes.
func (op *Op) Outcome() Outcome { return Outcome(op.outcome.Load()) }

// Wait blocks until the Op completes or ctx ends; an ended ctx cancels it.
func (op *Op) Wait(ctx context.Context) Outcome {
	select {
	case <-op.done:
	case <-ctx.Done():
		if pg := op.pg.Load(); pg != nil {
			pg.Cancel(op)
		} else {
			op.complete(Cancelled)
		}
	}
	return op.Outcome()
}

// complete moves the Op out of Pending once; it reports whether this call
// did it.
func (op *Op) complete(o Outcome) bool {
	if !op.outcome.CompareAndSwap(int32(Pending), int32(o)) {
		return false
	}
	op.mu.Lock()
	stop, tellStop := op.mu.stop, op.mu.tellStop
	op.mu.Unlock()
	if stop != nil {
		stop()
	}
	if tellStop != nil {
		tellStop()
	}
	close(op.done)
	return true
}

// armTell starts, once, the timer that completes op within the time its
// follower's high watermark may wait for records (Wait.TellWithin), when
// update found one to tell. Called without the shard's lock.
func (pg *Purgatory) armTell(op *Op) {
	op.mu.Lock()
	d, armed := op.mu.tellWithin, op.mu.tellStop != nil
	op.mu.Unlock()
	if d < 0 || armed {
		return
	}
	stop := pg.clock.AfterFunc(d, func() { pg.finish(op, Ready) })
	op.mu.Lock()
	if op.mu.tellStop != nil { // armed meanwhile by another Notify
		op.mu.Unlock()
		stop()
		return
	}
	op.mu.tellStop = stop
	op.mu.Unlock()
	if op.Outcome() != Pending { // completed while the timer was being set
		stop()
	}
}

// update applies one partition's state and reports whether the Op is now
// satisfied.
func (op *Op) update(key Key, st State) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	satisfied := false
	for i := range op.waits {
		w := &op.waits[i]
		if w.Key != key {
			continue
		}
		if st.Gone {
			return true
		}
		switch op.kind {
		case fetchKind:
			if st.LogStartOffset > w.Offset {
				return true // the read answers out of range
			}
			if w.TellsHighWatermark && st.HighWatermark > w.ToldHighWatermark {
				if w.TellWithin <= 0 {
					return true // news for a follower
				}
				if op.mu.tellWithin < 0 || w.TellWithin < op.mu.tellWithin {
					op.mu.tellWithin = w.TellWithin
				}
			}
			// States only grow; a Notify overtaken by a newer one must not
			// lower the count.
			w.bytes = max(w.bytes, fetchBytes(w.Wait, st))
			satisfied = op.totalBytes() >= op.minBytes
		case produceKind:
			if !w.reached && st.HighWatermark >= w.Offset {
				w.reached = true
				op.mu.remaining--
			}
			satisfied = op.mu.remaining == 0
		}
	}
	return satisfied
}

// tells reports that op has a follower's high watermark to tell and no
// timer for it yet.
func (op *Op) tells() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.mu.tellWithin >= 0 && op.mu.tellStop == nil
}

// fetchBytes is what lies beyond w.Offset: nothing until the high watermark
// passes it, then at least one byte.
func fetchBytes(w Wait, st State) int64 {
	end, bytes := st.HighWatermark, st.VisibleBytes
	switch {
	case w.ToLogEnd:
		end, bytes = st.LogEndOffset, st.AppendedBytes
	case w.Committed:
		end = st.LastStableOffset
	}
	if end <= w.Offset {
		return w.KnownBytes
	}
	return max(w.KnownBytes+bytes-w.BaseBytes, 1)
}

// totalBytes expects op.mu.
func (op *Op) totalBytes() int64 {
	var n int64
	for i := range op.waits {
		n += op.waits[i].bytes
	}
	return n
}

// Clock runs f after d; the returned function stops it, reporting whether
// it did before f ran.
type Clock interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// RealClock is the wall clock.
var RealClock Clock = realClock{}

const shardCount = 64

// Purgatory holds waiting Ops, watched per partition.
type Purgatory struct {
	clock  Clock
	seed   maphash.Seed
	closed atomic.Bool
	// woken counts the Ops that Notify completed, whose waiting
	// goroutines it made runnable (Woken).
	woken  atomic.Uint64
	shards [shardCount]shard
}

// shard holds the watch lists of some partitions. A partition's list stays
// once made (it is reused by the next waiter, which keeps a wait free of
// allocations for it) until the partition is reported Gone.
type shard struct {
	mu       sync.Mutex
	watchers map[Key]*watchList // guarded by mu
	count    atomic.Int64       // ops watched in this shard, for the fast path
}

// watchList is unordered: removal swaps the last op in, so completing an Op
// costs a scan of each list it is on.
type watchList struct{ ops []*Op }

// New returns an empty Purgatory whose timeouts run on clock (nil: the wall
// clock).
func New(clock Clock) *Purgatory {
	if clock == nil {
		clock = RealClock
	}
	pg := &Purgatory{clock: clock, seed: maphash.MakeSeed()}
	for i := range pg.shards {
		pg.shards[i].watchers = make(map[Key]*watchList)
	}
	return pg
}

func (pg *Purgatory) shardOf(k Key) *shard {
	var h maphash.Hash
	h.SetSeed(pg.seed)
	h.WriteString(k.Topic)
	h.WriteByte(byte(k.Partition))
	h.WriteByte(byte(k.Partition >> 8))
	h.WriteByte(byte(k.Partition >> 16))
	h.WriteByte(byte(k.Partition >> 24))
	return &pg.shards[h.Sum64()%shardCount]
}

// Register watches op's partitions, then checks it against lookup's current
// states (a key lookup does not know is treated as Gone), and starts its
// timeout. It returns op, which may already be complete. A timeout <= 0
// completes an unsatisfied op at once with Expired.
func (pg *Purgatory) Register(op *Op, timeout time.Duration, lookup func(Key) (State, bool)) *Op {
	op.pg.Store(pg)
	for i := range op.waits {
		pg.watch(op.waits[i].Key, op)
	}
	if op.Outcome() != Pending { // cancelled by its Wait while watching
		for i := range op.waits {
			pg.unwatch(op.waits[i].Key, op)
		}
		return op
	}
	if pg.closed.Load() {
		pg.finish(op, Closed)
		return op
	}
	for i := range op.waits {
		k := op.waits[i].Key
		st, ok := lookup(k)
		if !ok {
			st.Gone = true
		}
		if op.update(k, st) {
			pg.finish(op, Ready)
			return op
		}
	}
	pg.armTell(op)
	if timeout <= 0 {
		pg.finish(op, Expired)
		return op
	}
	stop := pg.clock.AfterFunc(timeout, func() { pg.finish(op, Expired) })
	op.mu.Lock()
	op.mu.stop = stop
	op.mu.Unlock()
	if op.Outcome() != Pending { // completed while the timer was being set
		stop()
	}
	return op
}

func (pg *Purgatory) watch(k Key, op *Op) {
	s := pg.shardOf(k)
	s.mu.Lock()
	wl := s.watchers[k]
	if wl == nil {
		wl = &watchList{}
		s.watchers[k] = wl
	}
	wl.ops = append(wl.ops, op)
	s.count.Add(1)
	s.mu.Unlock()
}

// Watched reports whether some Op may watch k, so a partition can skip
// building its State for Notify. It may say true when nothing watches k,
// never false when something registered before the call.
func (pg *Purgatory) Watched(k Key) bool { return pg.shardOf(k).count.Load() > 0 }

// Notify checks the Ops watching k against its new state and completes
// those it satisfies. A Gone state also drops k's watch list.
func (pg *Purgatory) Notify(k Key, st State) {
	s := pg.shardOf(k)
	if s.count.Load() == 0 {
		return
	}
	var ready, tell []*Op
	s.mu.Lock()
	if wl := s.watchers[k]; wl != nil {
		for _, op := range wl.ops {
			if op.Outcome() != Pending {
				continue
			}
			if op.update(k, st) {
				ready = append(ready, op)
			} else if op.tells() {
				tell = append(tell, op)
			}
		}
	}
	s.mu.Unlock()
	for _, op := range ready {
		pg.finish(op, Ready)
	}
	for _, op := range tell {
		pg.armTell(op)
	}
	if len(ready) > 0 {
		pg.woken.Add(uint64(len(ready)))
	}
	if st.Gone {
		s.mu.Lock()
		if wl := s.watchers[k]; wl != nil && len(wl.ops) == 0 {
			delete(s.watchers, k)
		}
		s.mu.Unlock()
	}
}

// Woken counts the Ops Notify has completed since New. A caller that
// reads it before and after its own Notifys (an append) learns whether it
// may have woken a waiting request: it may then let that request run
// before it goes on (another goroutine's Notify also counts, so the answer
// can be a false yes, never a false no).
func (pg *Purgatory) Woken() uint64 { return pg.woken.Load() }

// Cancel completes op with Cancelled unless it already completed.
func (pg *Purgatory) Cancel(op *Op) { pg.finish(op, Cancelled) }

// finish completes op with o (if still pending) and drops it from the watch
// lists. Only the call that completed it drops it, so each watch is dropped
// once.
func (pg *Purgatory) finish(op *Op, o Outcome) {
	if !op.complete(o) {
		return
	}
	for i := range op.waits {
		pg.unwatch(op.waits[i].Key, op)
	}
}

func (pg *Purgatory) unwatch(k Key, op *Op) {
	s := pg.shardOf(k)
	s.mu.Lock()
	if wl := s.watchers[k]; wl != nil {
		for i, o := range wl.ops {
			if o == op {
				last := len(wl.ops) - 1
				wl.ops[i], wl.ops[last] = wl.ops[last], nil
				wl.ops = wl.ops[:last]
				s.count.Add(-1)
				break
			}
		}
	}
	s.mu.Unlock()
}

// Watching is the number of Ops watching k.
func (pg *Purgatory) Watching(k Key) int {
	s := pg.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if wl := s.watchers[k]; wl != nil {
		return len(wl.ops)
	}
	return 0
}

// Close completes every waiting Op with Closed; later Registers complete
// at once with Closed.
func (pg *Purgatory) Close() {
	pg.closed.Store(true)
	var all []*Op
	for i := range pg.shards {
		s := &pg.shards[i]
		s.mu.Lock()
		for _, wl := range s.watchers {
			all = append(all, wl.ops...)
		}
		s.mu.Unlock()
	}
	for _, op := range all {
		pg.finish(op, Closed)
	}
}
