package ownership

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// owner is a scripted owner: each Load of a partition waits for a result
// the test sends, and what the Table does is recorded.
type owner struct {
	mu        sync.Mutex
	installed map[int32]string
	installs  []Owned
	drops     []int32
	failures  []int
	// failInstalls is how many installs to refuse from now on.
	failInstalls int

	loads   chan int32 // a Load started for this partition
	results chan loadResult
}

type loadResult struct {
	value string
	err   error
}

func newOwner() *owner {
	return &owner{installed: map[int32]string{}, loads: make(chan int32, 16), results: make(chan loadResult)}
}

func (o *owner) hooks() Hooks[string] {
	return Hooks[string]{
		Load: func(p, _ int32) (string, error) {
			o.loads <- p
			r := <-o.results
			return r.value, r.err
		},
		Install: func(p int32, own Owned, v string, _ time.Duration) (func(), error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.failInstalls > 0 {
				o.failInstalls--
				return nil, errors.New("the read after the load failed")
			}
			o.installed[p] = v
			o.installs = append(o.installs, own)
			return nil, nil
		},
		Drop: func(p int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			delete(o.installed, p)
			o.drops = append(o.drops, p)
		},
		LoadFailed: func(_ int32, attempt int, _ error) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.failures = append(o.failures, attempt)
		},
	}
}

func (o *owner) value(p int32) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.installed[p]
	return v, ok
}

func (o *owner) nextLoad(t *testing.T) int32 {
	t.Helper()
	select {
	case p := <-o.loads:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no load started")
		return -1
	}
}

type fixture struct {
	o    *owner
	tab  *Table[string]
	life *Lifecycle
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{o: newOwner(), life: NewLifecycle()}
	f.tab = New(f.o.hooks(), f.life)
	t.Cleanup(f.life.Close)
	return f
}

func TestGainLoadsThenServes(t *testing.T) {
	f := newFixture(t)
	if _, ok := f.tab.Get(3); ok {
		t.Fatal("a partition never led is owned")
	}
	f.tab.Leadership(3, true, 7)
	if o, ok := f.tab.Get(3); !ok || o.State != Loading || o.LeaderEpoch != 7 {
		t.Fatalf("while loading: %+v %v, want Loading at epoch 7", o, ok)
	}
	if p := f.o.nextLoad(t); p != 3 {
		t.Fatalf("load of partition %d, want 3", p)
	}
	if f.tab.Serving(3, 0) {
		t.Fatal("serving before its load returned")
	}
	f.o.results <- loadResult{value: "p3"}
	harness.WaitFor(t, "partition 3 serving", 5*time.Second, func() bool { return f.tab.Serving(3, 0) })
	if v, _ := f.o.value(3); v != "p3" {
		t.Fatalf("installed %q, want p3", v)
	}
	o, _ := f.tab.Get(3)
	if !f.tab.Serving(3, o.Term) || f.tab.Serving(3, o.Term+1) {
		t.Fatal("Serving does not tell the term it serves in")
	}

	// A new epoch while leading keeps what was loaded: no second load.
	f.tab.Leadership(3, true, 8)
	if o2, _ := f.tab.Get(3); o2.LeaderEpoch != 8 || o2.State != Serving || o2.Term != o.Term {
		t.Fatalf("after an epoch bump: %+v, want serving at epoch 8 in term %d", o2, o.Term)
	}
	// An older epoch does not move it back.
	f.tab.Leadership(3, true, 5)
	if o2, _ := f.tab.Get(3); o2.LeaderEpoch != 8 {
		t.Fatalf("epoch moved back to %d", o2.LeaderEpoch)
	}
	select {
	case p := <-f.o.loads:
		t.Fatalf("partition %d loaded again on an epoch bump", p)
	case <-time.After(20 * time.Millisecond):
	}

	f.tab.Leadership(3, false, 8)
	if _, ok := f.tab.Get(3); ok {
		t.Fatal("still owned after losing leadership")
	}
	if _, ok := f.o.value(3); ok {
		t.Fatal("state not dropped on losing leadership")
	}
	// Losing what was not led drops nothing.
	f.tab.Leadership(4, false, 1)
	if len(f.o.drops) != 1 {
		t.Fatalf("drops %v, want only partition 3", f.o.drops)
	}
}

func TestLoseMidLoadThenRegainWithNewEpoch(t *testing.T) {
	f := newFixture(t)
	f.tab.Leadership(1, true, 1)
	f.o.nextLoad(t)
	first, _ := f.tab.Get(1)

	f.tab.Leadership(1, false, 1)
	f.tab.Leadership(1, true, 2)
	// The first load returns after leadership moved: it must not install.
	f.o.results <- loadResult{value: "stale"}
	f.o.nextLoad(t) // the second leadership's load
	if v, ok := f.o.value(1); ok {
		t.Fatalf("a load from a lost leadership was installed: %q", v)
	}
	if o, _ := f.tab.Get(1); o.State != Loading || o.LeaderEpoch != 2 || o.Term <= first.Term {
		t.Fatalf("regained: %+v, want loading at epoch 2 in a term after %d", o, first.Term)
	}
	f.o.results <- loadResult{value: "fresh"}
	harness.WaitFor(t, "partition 1 serving", 5*time.Second, func() bool { return f.tab.Serving(1, 0) })
	if v, _ := f.o.value(1); v != "fresh" {
		t.Fatalf("installed %q, want fresh", v)
	}
	if f.tab.Serving(1, first.Term) {
		t.Fatal("work of the first term still sees the partition as its own")
	}
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if len(f.o.installs) != 1 || f.o.installs[0].LeaderEpoch != 2 {
		t.Fatalf("installs %+v, want one at epoch 2", f.o.installs)
	}
}

// An install that fails leaves the partition loading, and it is read
// again from its start: nothing of the refused load is served.
func TestInstallFailureLoadsAgain(t *testing.T) {
	f := newFixture(t)
	f.o.failInstalls = 1
	f.tab.Leadership(2, true, 1)
	f.o.nextLoad(t)
	f.o.results <- loadResult{value: "refused"}
	f.o.nextLoad(t) // read again after the refused install
	if o, _ := f.tab.Get(2); o.State != Loading || f.tab.Serving(2, 0) {
		t.Fatalf("after a refused install: %+v, want still loading", o)
	}
	if v, ok := f.o.value(2); ok {
		t.Fatalf("a refused install left %q installed", v)
	}
	f.o.results <- loadResult{value: "read again"}
	harness.WaitFor(t, "partition 2 serving", 5*time.Second, func() bool { return f.tab.Serving(2, 0) })
	f.o.mu.Lock()
	defer f.o.mu.Unlock()
	if v := f.o.installed[2]; v != "read again" || len(f.o.installs) != 1 || len(f.o.failures) != 1 {
		t.Fatalf("installed %q (%d installs), failures %v; want the second read, one install, one failure told", v, len(f.o.installs), f.o.failures)
	}
}

// LoadLed forgets a partition whose install failed, as one whose load
// failed, so that a later call reads it again.
func TestLoadLedInstallFailure(t *testing.T) {
	f := newFixture(t)
	f.o.failInstalls = 1
	read := func(p, _ int32) (string, error) { return "led", nil }
	if err := f.tab.LoadLed(6, 1, read); err == nil {
		t.Fatal("LoadLed reported success for a refused install")
	}
	if _, ok := f.tab.Get(6); ok {
		t.Fatal("a partition whose install failed is still owned")
	}
	if err := f.tab.LoadLed(6, 1, read); err != nil || !f.tab.Serving(6, 0) {
		t.Fatalf("second LoadLed: %v, serving %v; want it served", err, f.tab.Serving(6, 0))
	}
}

func TestLoadFailureRetriedWhileLeading(t *testing.T) {
	f := newFixture(t)
	f.tab.Leadership(0, true, 1)
	for range 2 {
		f.o.nextLoad(t)
		f.o.results <- loadResult{err: errors.New("disk says no")}
	}
	f.o.nextLoad(t)
	if f.tab.Serving(0, 0) {
		t.Fatal("serving after failed loads")
	}
	f.o.results <- loadResult{value: "ok"}
	harness.WaitFor(t, "partition 0 serving", 5*time.Second, func() bool { return f.tab.Serving(0, 0) })
	f.o.mu.Lock()
	failures := append([]int(nil), f.o.failures...)
	f.o.mu.Unlock()
	if len(failures) != 2 || failures[0] != 0 || failures[1] != 1 {
		t.Fatalf("failed attempts %v, want [0 1]", failures)
	}

	// A failing load stops retrying once leadership is lost.
	f.tab.Leadership(2, true, 1)
	f.o.nextLoad(t)
	f.tab.Leadership(2, false, 1)
	f.o.results <- loadResult{err: errors.New("gone")}
	select {
	case <-f.o.loads:
		t.Fatal("retried a load of a partition no longer led")
	case <-time.After(loadBackoff(0) + 100*time.Millisecond):
	}
}

func TestCloseDuringLoad(t *testing.T) {
	f := newFixture(t)
	f.tab.Leadership(5, true, 1)
	f.o.nextLoad(t)
	f.o.results <- loadResult{err: errors.New("fails")}
	// The loader now waits out its backoff: closing must end it at once.
	done := make(chan struct{})
	go func() { f.life.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(loadBackoff(0) / 2):
		t.Fatal("a loader outlived Close")
	}
	// After close, a new leadership starts no loader.
	f.tab.Leadership(6, true, 1)
	select {
	case <-f.o.loads:
		t.Fatal("a load started after close")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestLoadLed(t *testing.T) {
	f := newFixture(t)
	calls := 0
	fail := func(int32, int32) (string, error) { calls++; return "", errors.New("bad log") }
	if err := f.tab.LoadLed(0, 3, fail); err == nil {
		t.Fatal("a failed load reported no error")
	}
	if _, ok := f.tab.Get(0); ok {
		t.Fatal("a partition whose load failed stays owned: nothing would load it again")
	}
	ok := func(int32, int32) (string, error) { calls++; return "led", nil }
	if err := f.tab.LoadLed(0, 3, ok); err != nil {
		t.Fatal(err)
	}
	if o, _ := f.tab.Get(0); o.State != Serving || o.LeaderEpoch != 3 {
		t.Fatalf("after LoadLed: %+v, want serving at epoch 3", o)
	}
	if v, _ := f.o.value(0); v != "led" {
		t.Fatalf("installed %q, want led", v)
	}
	// Owned already (by its watcher or an earlier call): not loaded again.
	if err := f.tab.LoadLed(0, 3, ok); err != nil || calls != 2 {
		t.Fatalf("LoadLed of an owned partition: err %v, loads %d, want none", err, calls)
	}
	f.tab.Leadership(1, true, 1)
	f.o.nextLoad(t)
	if err := f.tab.LoadLed(1, 1, ok); err != nil || calls != 2 {
		t.Fatalf("LoadLed of a partition being loaded: err %v, loads %d, want none", err, calls)
	}
	f.o.results <- loadResult{value: "watched"}
	harness.WaitFor(t, "partition 1 serving", 5*time.Second, func() bool { return f.tab.Serving(1, 0) })
}
