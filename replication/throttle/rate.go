package throttle

import (
	"math"
	"sync"
	"time"
)

// Rate is a replication throttle: Unlimited until SetLimit gives it a
// bound in bytes per second. It is safe for concurrent use.
type Rate struct {
	mu    sync.Mutex
	limit float64 // bytes per second; 0: unlimited
	// bytes saves at most one second of the bound and owes whatever
	// was copied: a fetch's bytes are owed whole.
	bytes Bucket
}

// Unlimited is the bound of a rate no config sets (Kafka's default,
// Long.MAX_VALUE).
const Unlimited int64 = math.MaxInt64

// SetLimit bounds the rate to limit bytes per second; limit <= 0 or
// Unlimited lifts the bound. A new bound starts with nothing saved up.
func (r *Rate) SetLimit(limit int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limit <= 0 || limit == Unlimited {
		r.limit = 0
		return
	}
	if float64(limit) != r.limit {
		r.limit = float64(limit)
		r.bytes = NewBucket(r.limit, r.limit, Unbounded, 0, now)
	}
}

// Limit is the bound in bytes per second, Unlimited when there is none.
func (r *Rate) Limit() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limit == 0 {
		return Unlimited
	}
	return int64(r.limit)
}

// Exceeded reports whether copying must wait: the bytes recorded have
// used up the bound.
func (r *Rate) Exceeded(now time.Time) bool { return r.Delay(now) > 0 }

// Delay is how long until the rate is no longer exceeded (0: now).
func (r *Rate) Delay(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limit == 0 {
		return 0
	}
	r.bytes.Refill(now)
	return r.bytes.Until(0, math.MaxInt64)
}

// Record counts n bytes copied under the throttle.
func (r *Rate) Record(n int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limit == 0 || n <= 0 {
		return
	}
	r.bytes.Refill(now)
	r.bytes.Take(float64(n))
}
