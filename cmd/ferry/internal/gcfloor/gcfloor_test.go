package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 64 * mib, 1600},        // nothing live yet: the runtime's minimum, scaled to the floor
		{1 * mib, 64 * mib, 1600},  // likewise: 4 MiB × 16 is the floor
		{8 * mib, 64 * mib, 700},   // 8 + 8 × 7 = 64
		{16 * mib, 64 * mib, 300},  // 16 + 16 × 3 = 64
		{31 * mib, 64 * mib, 106},  // just below half the floor
		{32 * mib, 64 * mib, 100},  // half the floor and more: the default
		{500 * mib, 64 * mib, 100}, // a large live heap is collected as by default
		{1 * mib, 4 * mib, 100},    // a floor at the runtime's own minimum changes nothing
	} {
		if got := percentFor(c.live, c.floor); got != c.want {
			t.Errorf("percentFor(%d MiB live, %d MiB floor) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

func TestWorthChanging(t *testing.T) {
	for _, c := range []struct {
		cur, next int
		want      bool
	}{
		{100, 100, false},
		{1600, 1500, false}, // less than a tenth
		{1600, 1400, true},
		{700, 100, true},
		{110, 100, true}, // back to the default, however close
		{100, 109, false},
		{100, 110, true},
	} {
		if got := worthChanging(c.cur, c.next); got != c.want {
			t.Errorf("worthChanging(%d, %d) = %v, want %v", c.cur, c.next, got, c.want)
		}
	}
}

// GOGC in the environment is the operator's: Start leaves it alone.
func TestStartLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	if Start(DefaultFloor) {
		t.Fatal("Start tuned the collector although GOGC is set")
	}
	if Start(0) {
		t.Fatal("Start tuned the collector for a floor of 0")
	}
}

// On the real runtime: after a cycle the goal is at least the floor while
// little is live; a live heap above half the floor is collected at the
// default GOGC; when it is gone the floor is back.
func TestStartKeepsTheGoalAtTheFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 32 << 20
	if !Start(floor) {
		t.Fatal("Start did not tune the collector")
	}
	gcUntil(t, "the goal to reach the floor", func(gogc, goal uint64) bool { return gogc > 100 && goal >= floor })
	live := make([]byte, 24<<20)
	for i := range live {
		live[i] = byte(i) // touched, so it is surely heap
	}
	gcUntil(t, "the default GOGC with 24 MiB live", func(gogc, goal uint64) bool { return gogc == 100 })
	runtime.KeepAlive(live)
	live = nil
	gcUntil(t, "the floor again once the 24 MiB are garbage", func(gogc, goal uint64) bool { return gogc > 100 && goal >= floor })
}

// gcUntil runs cycles until cond holds for GOGC and the heap goal.
func gcUntil(t *testing.T, what string, cond func(gogc, goal uint64) bool) {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	harness.WaitFor(t, what, 10*time.Second, func() bool {
		runtime.GC()
		metrics.Read(s)
		return cond(s[0].Value.Uint64(), s[1].Value.Uint64())
	})
}
