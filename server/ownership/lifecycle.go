package ownership

import (
	"sync"
	"time"
)

// Lifecycle is the goroutines of one owner (a coordinator, the
// idempotency keys store): its Table's loads, its tick loop and what else
// it starts with Go. Close stops them all: it closes Closing, which each
// watches, and waits for them. The zero value is not usable: NewLifecycle.
type Lifecycle struct {
	closing chan struct{}
	wg      sync.WaitGroup

	// mu orders Go's wg.Add before Close's Wait: no goroutine starts once
	// Close began.
	mu     sync.Mutex
	closed bool
}

// NewLifecycle returns a running Lifecycle.
func NewLifecycle() *Lifecycle { return &Lifecycle{closing: make(chan struct{})} }

// Closing is closed when Close begins: goroutines select on it.
func (l *Lifecycle) Closing() <-chan struct{} { return l.closing }

// Closed reports whether Close has begun.
func (l *Lifecycle) Closed() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}

// Go runs f on a goroutine Close waits for; after Close began it runs
// nothing and returns false.
func (l *Lifecycle) Go(f func()) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		f()
	}()
	return true
}

// Close stops every goroutine: it closes Closing and waits for those
// started with Go. Calls after the first return at once.
func (l *Lifecycle) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.closing)
	l.mu.Unlock()
	l.wg.Wait()
}

// Every is a job of a tick loop: Run, every Interval.
type Every struct {
	Interval time.Duration
	Run      func()
}

// TickLoop starts the owner's tick loop: one goroutine that runs each job
// every its interval until Close. Jobs run one at a time, never
// overlapping, so they may share state without locking against each
// other; ticks missed while a job ran are dropped, as time.Ticker drops
// them.
func (l *Lifecycle) TickLoop(jobs ...Every) {
	l.Go(func() { l.tickLoop(jobs) })
}

func (l *Lifecycle) tickLoop(jobs []Every) {
	due := make([]time.Time, len(jobs))
	start := time.Now()
	for i, j := range jobs {
		due[i] = start.Add(j.Interval)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for len(jobs) > 0 {
		timer.Reset(time.Until(due[earliest(due)]))
		select {
		case <-l.closing:
			return
		case <-timer.C:
		}
		for i, j := range jobs {
			now := time.Now()
			if now.Before(due[i]) || l.Closed() {
				continue
			}
			j.Run()
			due[i] = due[i].Add(j.Interval)
			if now = time.Now(); !due[i].After(now) {
				due[i] = now.Add(j.Interval)
			}
		}
	}
}

// earliest is the index of the earliest time in ts (not empty).
func earliest(ts []time.Time) int {
	first := 0
	for i, t := range ts {
		if t.Before(ts[first]) {
			first = i
		}
	}
	return first
}
