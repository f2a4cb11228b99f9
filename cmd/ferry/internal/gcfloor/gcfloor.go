// Package gcfloor keeps the garbage collector's heap goal at or above a
// floor while the live heap is small, for `ferry serve`.
//
// Go's collector runs when the heap has grown by GOGC percent (100) of
// what the last cycle found live, and a broker's live heap is small (a
// few MiB) while it moves tens of MiB a second through short-lived request
// buffers: it collected 13 to 27 times a second under `make bench-http`
// and 3 times a second at 10,000 records/s end to end, spending a fifth to
// a third of the process's CPU time in the collector and pausing every
// request for each cycle's stop-the-world phases. A JVM broker sizes its
// heap up front (Kafka's start script: 1 GiB) for the same reason.
//
// After each cycle, Start's hook sets GOGC so that the next goal is the
// floor: GOGC = (floor − live) / live × 100, never below 100, so a live
// heap above half the floor is collected exactly as by default (and never
// above floor / 4 MiB × 100, where the runtime's minimum goal, 4 MiB
// scaled by GOGC, reaches the floor by itself). The hook runs on
// the runtime's cleanup goroutine right after the cycle that found its
// marker unreachable, before much can be allocated against the goal the
// cycle set. GOMEMLIMIT, when set, still bounds the heap; a GOGC set in
// the environment is the operator's choice and turns the floor off.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the heap goal `ferry serve` keeps at least.
const DefaultFloor = 64 << 20

// basePercent is GOGC's default, which the floor never goes below.
const basePercent = 100

// Start keeps the heap goal at floor bytes or more for the rest of the
// process, unless GOGC is set in the environment or floor is 0; it
// reports whether it did. Call it once.
func Start(floor uint64) bool {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return false
	}
	t := &tuner{floor: floor, percent: basePercent}
	t.sample[0].Name = liveHeapMetric
	t.adjust() // from what is live now, before the first cycle
	t.arm()
	return true
}

// liveHeapMetric is the heap the last cycle marked live.
const liveHeapMetric = "/gc/heap/live:bytes"

type tuner struct {
	floor uint64
	// mu serialises adjust; only the cleanup goroutine calls it after Start.
	mu      sync.Mutex
	percent int
	sample  [1]metrics.Sample
}

// marker exists to be collected: its cleanup is the hook after a cycle.
type marker struct{ _ *byte }

func (t *tuner) arm() {
	runtime.AddCleanup(new(marker), func(t *tuner) { t.cycle() }, t)
}

func (t *tuner) cycle() {
	t.adjust()
	t.arm()
}

func (t *tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return // not reported by this runtime: leave GOGC alone
	}
	p := percentFor(t.sample[0].Value.Uint64(), t.floor)
	if !worthChanging(t.percent, p) {
		return
	}
	debug.SetGCPercent(p)
	t.percent = p
}

// runtimeHeapMinimum is the runtime's smallest goal at GOGC=100, which
// it scales with GOGC: at GOGC=p no goal is below runtimeHeapMinimum×p/100.
const runtimeHeapMinimum = 4 << 20

// percentFor is the GOGC whose goal for a live heap of live bytes is
// floor bytes, and basePercent once that is less. For a live heap so
// small that the runtime's minimum sets the goal, the GOGC at which that
// minimum is floor.
func percentFor(live, floor uint64) int {
	byMinimum := floor * 100 / runtimeHeapMinimum
	if live >= floor/2 || byMinimum <= basePercent {
		return basePercent
	}
	if live == 0 {
		return int(byMinimum)
	}
	return int(max(basePercent, min(byMinimum, (floor-live)*100/live)))
}

// worthChanging says whether GOGC should move from cur to next: a change
// of less than a tenth moves the goal by less than a tenth, not worth a
// new pacing of the cycle under way, except back to the default.
func worthChanging(cur, next int) bool {
	if cur == next {
		return false
	}
	if next == basePercent {
		return true
	}
	diff := max(cur-next, next-cur)
	return diff*10 >= cur
}
