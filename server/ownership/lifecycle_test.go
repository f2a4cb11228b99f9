package ownership

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestTickLoopRunsJobsOneAtATime: each job runs at its own interval, the
// shorter one more often, and never two at once (the coordinators' jobs
// share state on that promise).
func TestTickLoopRunsJobsOneAtATime(t *testing.T) {
	life := NewLifecycle()
	defer life.Close()
	var running, overlaps, fast, slow atomic.Int32
	job := func(n *atomic.Int32) func() {
		return func() {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond) // the job's work, not a wait: it lasts long enough for a second job started meanwhile to show as an overlap
			n.Add(1)
			running.Add(-1)
		}
	}
	life.TickLoop(Every{Interval: 2 * time.Millisecond, Run: job(&fast)}, Every{Interval: 20 * time.Millisecond, Run: job(&slow)})
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
