package ownership

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestTickLoopRunsJobsOneAtATime: each job runs at its own interval, the
// shorter one more often, and never two at once (the coordinators' jobs
// share state on that promise): while the fast job holds the loop past
// the slow job's due time, the slow job waits for it.
func TestTickLoopRunsJobsOneAtATime(t *testing.T) {
	const slowInterval = 20 * time.Millisecond
	life := NewLifecycle()
	defer life.Close()
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce, releaseOnce sync.Once
	releaseHeld := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseHeld() // before Close, which waits for the held job
	var running, overlaps, fast, slow atomic.Int32
	job := func(n *atomic.Int32, hold bool) func() {
		return func() {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			if hold {
				holdOnce.Do(func() { close(held); <-release })
			}
			n.Add(1)
			running.Add(-1)
		}
	}
	start := time.Now()
	life.TickLoop(Every{Interval: 2 * time.Millisecond, Run: job(&fast, true)}, Every{Interval: slowInterval, Run: job(&slow, false)})
	harness.WaitFor(t, "the fast job holds the loop", 10*time.Second, func() bool {
		select {
		case <-held:
			return true
		default:
			return false
		}
	})
	harness.WaitFor(t, "the slow job is overdue while the fast one runs", 10*time.Second, func() bool {
		return time.Since(start) > 2*slowInterval
	})
	if n := slow.Load(); n != 0 {
		t.Fatalf("the slow job ran %d times while the fast one held the loop", n)
	}
	releaseHeld()
	harness.WaitFor(t, "the slow job ran three times", 10*time.Second, func() bool { return slow.Load() >= 3 })
	if f, s := fast.Load(), slow.Load(); f <= s {
		t.Fatalf("the 2 ms job ran %d times, the 20 ms one %d", f, s)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("jobs overlapped %d times", n)
	}
}

// TestCloseWaitsAndStopsEverything: Close returns only after a running
// job and goroutine ended, and from then on nothing starts.
func TestCloseWaitsAndStopsEverything(t *testing.T) {
	life := NewLifecycle()
	var ticks atomic.Int32
	inJob := make(chan struct{})
	release := make(chan struct{})
	life.TickLoop(Every{Interval: time.Millisecond, Run: func() {
		if ticks.Add(1) == 1 {
			close(inJob)
			<-release
		}
	}})
	var goroutineDone atomic.Bool
	if !life.Go(func() { <-life.Closing(); goroutineDone.Store(true) }) {
		t.Fatal("Go refused before Close")
	}
	<-inJob
	closed := make(chan struct{})
	go func() { life.Close(); close(closed) }()
	harness.WaitFor(t, "Closing closed", 5*time.Second, life.Closed)
	select {
	case <-closed:
		t.Fatal("Close returned while a job was running")
	default:
	}
	close(release)
	<-closed
	if !goroutineDone.Load() {
		t.Fatal("Close returned before a goroutine started with Go ended")
	}
	if n := ticks.Load(); n != 1 {
		t.Fatalf("the job ran %d times: a tick ran after Close began", n)
	}
	if life.Go(func() { t.Error("ran after Close") }) {
		t.Fatal("Go started a goroutine after Close")
	}
	life.Close() // a second Close returns at once
}
