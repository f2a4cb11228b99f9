// Package ownership is the one home of "a coordinator serves the partitions
// of an internal topic that this broker leads" (Kafka's
// GroupCoordinator/TransactionStateManager loading and unloading): the group
// coordinator (__consumer_offsets), the transaction coordinator
// (__transaction_state) and the idempotency keys store (__idempotency_keys)
// follow their topic's leadership through a Table. It does no I/O of its
// own: the owner's hooks read the log and hold the state.
//
// When the broker starts leading a partition, the Table marks it loading
// (requests for it answer COORDINATOR_LOAD_IN_PROGRESS), reads its log on a
// goroutine (retried with backoff while the broker still leads it at the
// same epoch) and installs what was read, after which the partition serves.
// When the broker stops leading it, the Table forgets it and the owner drops
// its state (NOT_COORDINATOR from then on). A new leader epoch while still
// leading only moves the epoch on: what was loaded stays right.
//
// Each leadership gets a term, unique within the Table: work started under
// one term (a transaction's markers) stops when the partition was lost and
// gained again, even at the same epoch.
//
// The rest of what the three owners share lives here too, so each is
// written once:
//
//   - Topic (topic.go) is the internal topic itself: its creation
//     (compacted, one replica on a single node, min.insync.replicas capped
//     at the replication factor), a key's partition (hash of key → partition)
//     and coordinator (→ the partition's leader in the controller's view,
//     creating the topic on a cluster's first lookup; none while that is
//     this broker and it fenced itself, cut from ZooKeeper:
//     replication/fence), and reading a
//     partition's log back for Load.
//   - Lifecycle (lifecycle.go) is an owner's goroutines: the Table's
//     loads, its tick loop (TickLoop: jobs at their intervals, one at a
//     time) and what else it starts (a transaction's completion); Close
//     stops and waits for them all.
package ownership

import (
	"sync"
	"time"
)

// State is how far a led partition is: Loading until its log is installed,
// then Serving.
type State uint8

const (
	Loading State = iota + 1
	Serving
)

// Owned is a partition this broker leads.
type Owned struct {
	LeaderEpoch int32
	State       State
	Term        uint64
}

// Hooks are what an owner does with its partitions.
type Hooks[T any] struct {
	// Load reads partition p's log. It runs without the Table's lock, on
	// the loading goroutine.
	Load func(p, leaderEpoch int32) (T, error)
	// Install makes what Load read the owner's state. It runs with the
	// Table's lock held (the owner's lock order starts with it), only while
	// p is still loading at the epoch it was read at; p serves once it
	// returns. took is how long Load read. The func it returns, if any,
	// runs after the lock is released (work that must not hold it:
	// starting completions, logging). An error leaves p loading, to be
	// read again from the start as after a failed Load: Install must then
	// have changed nothing.
	Install func(p int32, o Owned, loaded T, took time.Duration) (after func(), err error)
	// Drop forgets p's state once p has left the Table; no lock is held.
	Drop func(p int32)
	// LoadFailed is told of a failed Load or Install before it is retried.
	LoadFailed func(p int32, attempt int, err error)
}

// Table is the partitions of one topic this broker leads.
type Table[T any] struct {
	hooks Hooks[T]
	life  *Lifecycle

	mu    sync.Mutex
	parts map[int32]Owned
	terms uint64
}

// New returns an empty Table. Its loading goroutines run in life and stop
// when it closes.
func New[T any](hooks Hooks[T], life *Lifecycle) *Table[T] {
	return &Table[T]{hooks: hooks, life: life, parts: map[int32]Owned{}}
}

// Get is p's ownership: false when this broker does not lead p.
func (t *Table[T]) Get(p int32) (Owned, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.parts[p]
	return o, ok
}

// Serving: this broker leads p and has installed it, in term (any term
// when term is 0).
func (t *Table[T]) Serving(p int32, term uint64) bool {
	o, ok := t.Get(p)
	return ok && o.State == Serving && (term == 0 || o.Term == term)
}

// Leadership follows one change of this broker's leadership of partition
// p. It must not block (it runs where the controller's request is
// applied): the load runs on its own goroutine.
func (t *Table[T]) Leadership(p int32, leading bool, leaderEpoch int32) {
	t.mu.Lock()
	cur, owned := t.parts[p]
	switch {
	case leading && owned:
		if leaderEpoch > cur.LeaderEpoch {
			cur.LeaderEpoch = leaderEpoch
			t.parts[p] = cur
		}
		t.mu.Unlock()
	case leading:
		t.terms++
		t.parts[p] = Owned{LeaderEpoch: leaderEpoch, State: Loading, Term: t.terms}
		t.mu.Unlock()
		t.life.Go(func() { t.load(p, leaderEpoch) })
	case owned:
		delete(t.parts, p)
		t.mu.Unlock()
		t.hooks.Drop(p)
	default:
		t.mu.Unlock()
	}
}

// loadBackoff is the wait before the attempt after attempt (from 0).
func loadBackoff(attempt int) time.Duration {
	return min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)
}

// load reads p and installs it while this broker still leads it at
// leaderEpoch; a failed read is retried while it does.
func (t *Table[T]) load(p, leaderEpoch int32) {
	for attempt := 0; ; attempt++ {
		if !t.stillLoading(p, leaderEpoch) {
			return
		}
		start := time.Now()
		loaded, err := t.hooks.Load(p, leaderEpoch)
		if err == nil {
			if err = t.install(p, leaderEpoch, loaded, time.Since(start)); err == nil {
				return
			}
		}
		if t.hooks.LoadFailed != nil {
			t.hooks.LoadFailed(p, attempt, err)
		}
		select {
		case <-t.life.Closing():
			return
		case <-time.After(loadBackoff(attempt)):
		}
	}
}

func (t *Table[T]) stillLoading(p, leaderEpoch int32) bool {
	o, ok := t.Get(p)
	return ok && o.LeaderEpoch == leaderEpoch && o.State == Loading
}

// install installs loaded unless leadership moved since it was read (nil:
// nothing to install any more). p stays loading when Install fails.
func (t *Table[T]) install(p, leaderEpoch int32, loaded T, took time.Duration) error {
	t.mu.Lock()
	cur, ok := t.parts[p]
	if !ok || cur.LeaderEpoch != leaderEpoch || cur.State != Loading {
		t.mu.Unlock()
		return nil
	}
	after, err := t.hooks.Install(p, cur, loaded, took)
	if err != nil {
		t.mu.Unlock()
		return err
	}
	cur.State = Serving
	t.parts[p] = cur
	t.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

// LoadLed loads p, which this broker leads at leaderEpoch, before the
// caller goes on (at start, or when a single node creates the topic),
// reading it with load. A partition the Table has already is left to its
// own load. When load or the install fails p is forgotten, so a later
// call tries again, and the error is returned.
func (t *Table[T]) LoadLed(p, leaderEpoch int32, load func(p, leaderEpoch int32) (T, error)) error {
	t.mu.Lock()
	if _, ok := t.parts[p]; ok {
		t.mu.Unlock()
		return nil
	}
	t.terms++
	t.parts[p] = Owned{LeaderEpoch: leaderEpoch, State: Loading, Term: t.terms}
	t.mu.Unlock()
	start := time.Now()
	loaded, err := load(p, leaderEpoch)
	if err == nil {
		err = t.install(p, leaderEpoch, loaded, time.Since(start))
	}
	if err != nil {
		t.mu.Lock()
		if cur, ok := t.parts[p]; ok && cur.LeaderEpoch == leaderEpoch && cur.State == Loading {
			delete(t.parts, p)
		}
		t.mu.Unlock()
		return err
	}
	return nil
}
