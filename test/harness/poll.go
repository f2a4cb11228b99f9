package harness

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds and returns how long that took, or
// fails the test after timeout (Poll).
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !Poll(timeout, cond) {
		t.Fatalf("%s: not within %v", what, timeout)
	}
	return time.Since(start)
}

// Poll polls cond until it holds (true) or timeout passes (false). It is
// the one poll loop of the tests that wait on other processes, goroutines
// or ZooKeeper: the first checks come within a millisecond (most
// conditions hold almost at once), the later ones every 50 ms (a slow one
// does not burn the CPU it waits for).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 50*time.Millisecond) {
		select {
		case <-deadline.C:
			return cond()
		case <-time.After(pause):
		}
	}
	return true
}
