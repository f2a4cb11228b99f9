package delayed

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock fires timers only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Duration
	f       func()
	stopped bool
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now + d, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*fakeTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.stopped {
			continue
		}
		if t.at <= c.now {
			t.stopped = true
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at < due[j].at })
	for _, t := range due {
		t.f()
	}
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// partitions is a scripted set of partition states.
type partitions map[Key]State

func (ps partitions) lookup(k Key) (State, bool) { st, ok := ps[k]; return st, ok }

// appendBytes makes n bytes in one record visible on k and returns the new
// state.
func (ps partitions) appendBytes(k Key, n int64) State {
	st := ps[k]
	st.HighWatermark++
	st.VisibleBytes += n
	ps[k] = st
	return st
}

var (
	a = Key{"t", 0}
	b = Key{"t", 1}
	c = Key{"u", 0}
)

func emptyParts(keys ...Key) partitions {
	ps := partitions{}
	for _, k := range keys {
		ps[k] = State{HighWatermark: 10, VisibleBytes: 1000}
	}
	return ps
}

func fetchAtEnd(ps partitions, minBytes int64, keys ...Key) *Op {
	var ws []Wait
	for _, k := range keys {
		ws = append(ws, Wait{Key: k, Offset: ps[k].HighWatermark, BaseBytes: ps[k].VisibleBytes})
	}
	return NewFetch(minBytes, ws)
}

func mustOutcome(t *testing.T, op *Op, want Outcome) {
	t.Helper()
	if got := op.Outcome(); got != want {
		t.Fatalf("outcome %v, want %v", got, want)
	}
	if want != Pending {
		select {
		case <-op.Done():
		default:
			t.Fatal("Done not closed on completion")
		}
	}
}

func TestCompletesOnAppend(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a)
	pg := New(clk)
	op := pg.Register(fetchAtEnd(ps, 1, a), 5*time.Second, ps.lookup)
	mustOutcome(t, op, Pending)
	pg.Notify(a, ps.appendBytes(a, 100))
	mustOutcome(t, op, Ready)
	if pg.Watching(a) != 0 || clk.pending() != 0 {
		t.Fatalf("completed op still watched (%d) or timed (%d)", pg.Watching(a), clk.pending())
	}
}

func TestMinBytesCountsAcrossAppends(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a)
	pg := New(clk)
	op := pg.Register(fetchAtEnd(ps, 250, a), time.Second, ps.lookup)
	pg.Notify(a, ps.appendBytes(a, 100))
	pg.Notify(a, ps.appendBytes(a, 100))
	mustOutcome(t, op, Pending)
	pg.Notify(a, ps.appendBytes(a, 100))
	mustOutcome(t, op, Ready)
}

func TestKnownBytesCount(t *testing.T) {
	ps := emptyParts(a)
	pg := New(&fakeClock{})
	// The caller read 80 bytes already there; 20 more reach MinBytes 100.
	op := NewFetch(100, []Wait{{Key: a, Offset: 5, BaseBytes: ps[a].VisibleBytes, KnownBytes: 80}})
	pg.Register(op, time.Second, ps.lookup)
	mustOutcome(t, op, Pending)
	pg.Notify(a, ps.appendBytes(a, 20))
	mustOutcome(t, op, Ready)
}

func TestExpiresAtDeadline(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a)
	pg := New(clk)
	op := pg.Register(fetchAtEnd(ps, 1, a), 5*time.Second, ps.lookup)
	clk.advance(4999 * time.Millisecond)
	mustOutcome(t, op, Pending)
	clk.advance(time.Millisecond)
	mustOutcome(t, op, Expired)
	pg.Notify(a, ps.appendBytes(a, 100)) // too late: stays Expired
	mustOutcome(t, op, Expired)
	if pg.Watching(a) != 0 {
		t.Fatal("expired op still watched")
	}
}

func TestZeroTimeoutExpiresAtOnce(t *testing.T) {
	ps := emptyParts(a)
	op := New(&fakeClock{}).Register(fetchAtEnd(ps, 1, a), 0, ps.lookup)
	mustOutcome(t, op, Expired)
}

func TestCancelAndContext(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a)
	pg := New(clk)
	op := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
	pg.Cancel(op)
	mustOutcome(t, op, Cancelled)

	ctx, cancel := context.WithCancel(context.Background())
	op2 := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
	cancel()
	if got := op2.Wait(ctx); got != Cancelled {
		t.Fatalf("Wait after cancel: %v", got)
	}
	if pg.Watching(a) != 0 || clk.pending() != 0 {
		t.Fatalf("cancelled ops still watched (%d) or timed (%d)", pg.Watching(a), clk.pending())
	}
}

func TestCloseCompletesAll(t *testing.T) {
	ps := emptyParts(a, b)
	pg := New(&fakeClock{})
	op1 := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
	op2 := pg.Register(fetchAtEnd(ps, 1, a, b), time.Minute, ps.lookup)
	pg.Close()
	mustOutcome(t, op1, Closed)
	mustOutcome(t, op2, Closed)
	op3 := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
	mustOutcome(t, op3, Closed)
	if pg.Watching(a)+pg.Watching(b) != 0 {
		t.Fatal("closed purgatory still watches")
	}
}

func TestManyOpsOnOnePartition(t *testing.T) {
	ps := emptyParts(a, b)
	pg := New(&fakeClock{})
	var small, big, other []*Op
	for range 100 {
		small = append(small, pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup))
		big = append(big, pg.Register(fetchAtEnd(ps, 1000, a), time.Minute, ps.lookup))
		other = append(other, pg.Register(fetchAtEnd(ps, 1, b), time.Minute, ps.lookup))
	}
	pg.Notify(a, ps.appendBytes(a, 10))
	for i := range small {
		mustOutcome(t, small[i], Ready)
		mustOutcome(t, big[i], Pending)
		mustOutcome(t, other[i], Pending)
	}
	if got := pg.Watching(a); got != 100 {
		t.Fatalf("watching a: %d, want the 100 big ones", got)
	}
}

func TestOneOpOverManyPartitionsCompletesOnce(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a, b, c)
	pg := New(clk)
	op := pg.Register(fetchAtEnd(ps, 30, a, b, c), time.Minute, ps.lookup)
	pg.Notify(a, ps.appendBytes(a, 10))
	pg.Notify(b, ps.appendBytes(b, 10))
	mustOutcome(t, op, Pending)
	pg.Notify(c, ps.appendBytes(c, 10)) // the sum reaches 30
	mustOutcome(t, op, Ready)
	pg.Notify(a, ps.appendBytes(a, 10))
	clk.advance(time.Hour)
	mustOutcome(t, op, Ready) // completed once; later events and the deadline change nothing
	for _, k := range []Key{a, b, c} {
		if pg.Watching(k) != 0 {
			t.Fatalf("%v still watched", k)
		}
	}
}

func TestGoneOrOutOfRangeAnswersAtOnce(t *testing.T) {
	ps := emptyParts(a, b)
	pg := New(&fakeClock{})
	op := pg.Register(fetchAtEnd(ps, 1000, a, b), time.Minute, ps.lookup)
	pg.Notify(b, State{Gone: true})
	mustOutcome(t, op, Ready)

	op2 := pg.Register(fetchAtEnd(ps, 1000, a), time.Minute, ps.lookup)
	st := ps[a]
	st.LogStartOffset = st.HighWatermark + 1 // records deleted past the fetch offset
	pg.Notify(a, st)
	mustOutcome(t, op2, Ready)

	op3 := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, func(Key) (State, bool) { return State{}, false })
	mustOutcome(t, op3, Ready) // an unknown partition is gone
}

// TestAppendRacingRegistration scripts the lost wake-up: the append lands
// after the caller took its base state and read nothing, but before the op
// watched, so its Notify found no watcher. The check after watching must see
// it.
func TestAppendRacingRegistration(t *testing.T) {
	ps := emptyParts(a)
	pg := New(&fakeClock{})
	op := fetchAtEnd(ps, 1, a)          // base state taken, read found nothing
	pg.Notify(a, ps.appendBytes(a, 10)) // nobody watches yet
	pg.Register(op, time.Minute, ps.lookup)
	mustOutcome(t, op, Ready)
}

// TestConcurrentAppendsNeverLoseAWakeUp runs registration and appends
// concurrently (for -race) and checks that every op whose partition moved
// past its offset completes.
func TestConcurrentAppendsNeverLoseAWakeUp(t *testing.T) {
	pg := New(RealClock)
	var mu sync.Mutex
	st := State{HighWatermark: 0}
	lookup := func(Key) (State, bool) { mu.Lock(); defer mu.Unlock(); return st, true }
	var wg sync.WaitGroup
	ops := make(chan *Op, 1000)
	wg.Go(func() {
		for range 1000 {
			cur, _ := lookup(a)
			ops <- pg.Register(NewFetch(1, []Wait{{Key: a, Offset: cur.HighWatermark, BaseBytes: cur.VisibleBytes}}), time.Hour, lookup)
		}
		close(ops)
	})
	wg.Go(func() {
		for range 1000 {
			mu.Lock()
			st.HighWatermark++
			st.VisibleBytes += 10
			now := st
			mu.Unlock()
			pg.Notify(a, now)
		}
	})
	wg.Wait()
	mu.Lock()
	st.HighWatermark++
	st.VisibleBytes += 10
	final := st
	mu.Unlock()
	pg.Notify(a, final)
	for op := range ops {
		select {
		case <-op.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("an op missed its wake-up")
		}
		mustOutcome(t, op, Ready)
	}
}

func TestProduceWaitsForEveryHighWatermark(t *testing.T) {
	ps := emptyParts(a, b)
	pg := New(&fakeClock{})
	op := pg.Register(NewProduce([]Wait{{Key: a, Offset: 12}, {Key: b, Offset: 11}}), time.Minute, ps.lookup)
	pg.Notify(a, ps.appendBytes(a, 1)) // a at 11
	pg.Notify(b, ps.appendBytes(b, 1)) // b at 11: reached
	mustOutcome(t, op, Pending)
	pg.Notify(a, ps.appendBytes(a, 1)) // a at 12: every partition reached
	mustOutcome(t, op, Ready)

	already := pg.Register(NewProduce([]Wait{{Key: a, Offset: 12}}), time.Minute, ps.lookup)
	mustOutcome(t, already, Ready)
}

func TestNotifyWithoutWatchersAllocatesNothing(t *testing.T) {
	pg := New(&fakeClock{})
	st := State{HighWatermark: 1}
	if n := testing.AllocsPerRun(100, func() { pg.Notify(a, st) }); n != 0 {
		t.Fatalf("Notify with no watchers allocates %v times", n)
	}
}

func BenchmarkNotifyNoWatchers(b *testing.B) {
	pg := New(RealClock)
	st := State{HighWatermark: 1}
	for b.Loop() {
		pg.Notify(a, st)
	}
}

func BenchmarkRegisterAndComplete(b *testing.B) {
	pg := New(RealClock)
	ps := emptyParts(a)
	b.ReportAllocs()
	for b.Loop() {
		op := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
		pg.Notify(a, ps.appendBytes(a, 10))
		<-op.Done()
	}
}

func TestStaleNotifyDoesNotLowerTheCount(t *testing.T) {
	ps := emptyParts(a)
	pg := New(&fakeClock{})
	op := pg.Register(fetchAtEnd(ps, 150, a), time.Minute, ps.lookup)
	older := ps.appendBytes(a, 100)
	newer := ps.appendBytes(a, 40)
	pg.Notify(a, newer) // 140 so far
	pg.Notify(a, older) // arrives late
	pg.Notify(a, ps.appendBytes(a, 10))
	mustOutcome(t, op, Ready)
}

func TestGoneDropsTheWatchList(t *testing.T) {
	ps := emptyParts(a)
	pg := New(&fakeClock{})
	op := pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)
	pg.Notify(a, State{Gone: true})
	mustOutcome(t, op, Ready)
	s := pg.shardOf(a)
	s.mu.Lock()
	_, kept := s.watchers[a]
	s.mu.Unlock()
	if kept || s.count.Load() != 0 {
		t.Fatalf("a deleted partition keeps its watch list (kept %v, count %d)", kept, s.count.Load())
	}
}

func TestRegisterReusesTheWatchList(t *testing.T) {
	ps := emptyParts(a)
	pg := New(&fakeClock{})
	pg.Cancel(pg.Register(fetchAtEnd(ps, 1, a), time.Minute, ps.lookup)) // makes a's list
	waits := []Wait{{Key: a, Offset: ps[a].HighWatermark, BaseBytes: ps[a].VisibleBytes}}
	// The Op, its done channel and its waits; the fake clock's timer is the test's.
	n := testing.AllocsPerRun(100, func() {
		op := pg.Register(NewFetch(1, waits), 0, ps.lookup)
		if op.Outcome() != Expired {
			t.Fatal(op.Outcome())
		}
	})
	if n > 3 {
		t.Fatalf("a wait on a watched-before partition allocates %v times, want at most 3", n)
	}
}

// A follower's fetch counts the bytes below the log end: an append that
// does not move the high watermark (followers have not copied it yet)
// completes it, and leaves a consumer's fetch waiting.
func TestFollowerFetchCountsBytesToTheLogEnd(t *testing.T) {
	st := State{HighWatermark: 10, VisibleBytes: 1000, LogEndOffset: 10, AppendedBytes: 1000}
	lookup := func(Key) (State, bool) { return st, true }
	pg := New(&fakeClock{})
	follower := pg.Register(NewFetch(100, []Wait{{Key: a, Offset: 10, BaseBytes: 1000, ToLogEnd: true}}), time.Minute, lookup)
	consumer := pg.Register(NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 1000}}), time.Minute, lookup)
	st.LogEndOffset, st.AppendedBytes = 11, 1060
	pg.Notify(a, st)
	mustOutcome(t, follower, Pending) // 60 of 100 bytes
	st.LogEndOffset, st.AppendedBytes = 12, 1120
	pg.Notify(a, st)
	mustOutcome(t, follower, Ready)
	mustOutcome(t, consumer, Pending)
	st.HighWatermark, st.VisibleBytes = 12, 1120
	pg.Notify(a, st)
	mustOutcome(t, consumer, Ready)
}

// Woken counts the Ops a Notify completed (whose waiters it made
// runnable), not those completed at Register, by expiry or cancelled.
func TestWokenCountsNotifyCompletions(t *testing.T) {
	clk, ps := &fakeClock{}, emptyParts(a, b)
	pg := New(clk)
	pg.Register(fetchAtEnd(ps, 1, a), time.Second, ps.lookup)
	pg.Register(fetchAtEnd(ps, 1, a, b), time.Second, ps.lookup)
	pg.Register(fetchAtEnd(ps, 1000, b), time.Second, ps.lookup)
	if n := pg.Woken(); n != 0 {
		t.Fatalf("woken %d before any append", n)
	}
	pg.Notify(a, ps.appendBytes(a, 10))
	if n := pg.Woken(); n != 2 {
		t.Fatalf("woken %d by an append that satisfies two ops, want 2", n)
	}
	pg.Notify(b, ps.appendBytes(b, 10)) // short of the third op's MinBytes
	ready := pg.Register(NewFetch(1, []Wait{{Key: a, Offset: 0, BaseBytes: ps[a].VisibleBytes}}), time.Second, ps.lookup)
	mustOutcome(t, ready, Ready) // answered at Register: nobody waited
	pg.Cancel(pg.Register(fetchAtEnd(ps, 1, a), time.Second, ps.lookup))
	clk.advance(time.Second) // the third op expires
	if n := pg.Woken(); n != 2 {
		t.Fatalf("woken %d after a short append, a Register, a Cancel and an expiry; want still 2", n)
	}
}

// A follower's fetch completes once the high watermark passes the one it
// was told, with no new bytes (Kafka's DelayedFetch case H); a consumer's
// fetch of the same partition does not, and a follower's fetch told the
// current one stays parked.
func TestFollowerFetchCompletesWhenItsHighWatermarkIsStale(t *testing.T) {
	clk, ps := &fakeClock{}, partitions{a: {HighWatermark: 4, LogEndOffset: 10, AppendedBytes: 1000, VisibleBytes: 400}}
	pg := New(clk)
	follower := func(told int64) *Op {
		return NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 1000, ToLogEnd: true, TellsHighWatermark: true, ToldHighWatermark: told}})
	}
	stale := pg.Register(follower(2), time.Second, ps.lookup)
	mustOutcome(t, stale, Ready) // told 2, the high watermark is 4 already
	told := pg.Register(follower(4), time.Second, ps.lookup)
	consumer := pg.Register(NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 400}}), time.Second, ps.lookup)
	mustOutcome(t, told, Pending)
	st := ps[a]
	st.HighWatermark, st.VisibleBytes = 7, 700 // the followers caught up to 7
	ps[a] = st
	pg.Notify(a, st)
	mustOutcome(t, told, Ready)
	mustOutcome(t, consumer, Pending) // its offset 10 is still above the high watermark
}

// With TellWithin, a high watermark the follower was not told waits that
// long for an append to carry it: the timer answers it when none comes,
// an append within it answers at once (and stops the timer), and a
// second Notify does not arm a second timer.
func TestFollowerHighWatermarkWaitsTellWithinForAnAppend(t *testing.T) {
	clk := &fakeClock{}
	ps := partitions{a: {HighWatermark: 4, LogEndOffset: 10, AppendedBytes: 1000, VisibleBytes: 400}}
	pg := New(clk)
	follower := func() *Op {
		return NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 1000, ToLogEnd: true,
			TellsHighWatermark: true, ToldHighWatermark: 4, TellWithin: 2 * time.Millisecond}})
	}
	moveHW := func(hw int64) {
		st := ps[a]
		st.HighWatermark = hw
		ps[a] = st
		pg.Notify(a, st)
	}
	alone := pg.Register(follower(), time.Second, ps.lookup)
	moveHW(7)
	moveHW(9)
	mustOutcome(t, alone, Pending)
	if n := clk.pending(); n != 2 { // the timeout and one tell timer
		t.Fatalf("%d timers, want 2", n)
	}
	clk.advance(2 * time.Millisecond)
	mustOutcome(t, alone, Ready)
	if n := clk.pending(); n != 0 {
		t.Fatalf("%d timers left", n)
	}

	ps[a] = State{HighWatermark: 4, LogEndOffset: 10, AppendedBytes: 1000, VisibleBytes: 400}
	carried := pg.Register(follower(), time.Second, ps.lookup)
	moveHW(10)
	st := ps[a]
	st.LogEndOffset, st.AppendedBytes = 11, 1100
	ps[a] = st
	pg.Notify(a, st)
	mustOutcome(t, carried, Ready)
	if n := clk.pending(); n != 0 {
		t.Fatalf("%d timers left after the append answered", n)
	}
}

// A read_committed fetch waits for the last stable offset, not the high
// watermark: records of an open transaction below the high watermark do
// not complete it; the transaction's end does.
func TestCommittedFetchWaitsForTheLastStableOffset(t *testing.T) {
	clk := &fakeClock{}
	ps := partitions{a: {HighWatermark: 10, LastStableOffset: 10, VisibleBytes: 1000, LogEndOffset: 10, AppendedBytes: 1000}}
	pg := New(clk)
	committed := pg.Register(NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 1000, Committed: true}}), time.Second, ps.lookup)
	uncommitted := pg.Register(NewFetch(1, []Wait{{Key: a, Offset: 10, BaseBytes: 1000}}), time.Second, ps.lookup)
	// A transaction's records: the high watermark moves, the last stable
	// offset stays at their first offset.
	st := State{HighWatermark: 14, LastStableOffset: 10, VisibleBytes: 1400, LogEndOffset: 14, AppendedBytes: 1400}
	ps[a] = st
	pg.Notify(a, st)
	mustOutcome(t, uncommitted, Ready)
	mustOutcome(t, committed, Pending)
	st.HighWatermark, st.LastStableOffset, st.VisibleBytes, st.LogEndOffset, st.AppendedBytes = 15, 15, 1480, 15, 1480 // its commit marker
	ps[a] = st
	pg.Notify(a, st)
	mustOutcome(t, committed, Ready)
}
