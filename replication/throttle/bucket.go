package throttle

import (
	"math"
	"time"
)

// Bucket is ferry's one token bucket, behind every rate it enforces: the
// replication throttle (Rate), the client quotas' byte rates, request
// time and connection rates (server/quota), and the HTTP gateway's
// per-principal request rate. It refills at Rate tokens a second, saves
// at most Capacity and owes at most MaxDebt: a byte rate owes a whole
// request's bytes (MaxDebt infinite), a request-time quota one window,
// and a request limiter nothing (it takes only what it has). Not safe for
// concurrent use: its owner's lock guards it.
type Bucket struct {
	rate     float64 // tokens a second; 0: it never refills
	capacity float64
	maxDebt  float64
	balance  float64 // tokens that may be taken now; below 0: owed
	at       time.Time
}

// NewBucket is a bucket holding balance at now.
func NewBucket(rate, capacity, maxDebt, balance float64, now time.Time) Bucket {
	return Bucket{rate: rate, capacity: capacity, maxDebt: maxDebt, balance: balance, at: now}
}

// Unbounded is the MaxDebt of a bucket that owes whatever is taken.
var Unbounded = math.Inf(1)

// Refill adds what the time since the last refill earned, up to
// capacity. A clock that went back earns nothing.
func (b *Bucket) Refill(now time.Time) {
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.balance = min(b.balance+elapsed*b.rate, b.capacity)
		b.at = now
	}
}

// Take draws n, owing at most MaxDebt.
func (b *Bucket) Take(n float64) { b.balance = max(b.balance-n, -b.maxDebt) }

// Give returns n, saving at most capacity.
func (b *Bucket) Give(n float64) { b.balance = min(b.balance+n, b.capacity) }

// Balance is what may be taken now (below 0: what is owed), as of the
// last Refill.
func (b *Bucket) Balance() float64 { return b.balance }

// Full reports whether the bucket holds all it can save: dropping it and
// making a new full one changes nothing.
func (b *Bucket) Full() bool { return b.balance >= b.capacity }

// LastRefill is when the bucket was last refilled.
func (b *Bucket) LastRefill() time.Time { return b.at }

// Until is how long until the balance has refilled to level, at most
// limit (limit too for a bucket that never refills).
func (b *Bucket) Until(level float64, limit time.Duration) time.Duration {
	if b.balance >= level {
		return 0
	}
	if b.rate <= 0 {
		return limit
	}
	// Compared as floats: a debt of years would overflow a Duration.
	wait := math.Ceil((level - b.balance) / b.rate * float64(time.Second))
	if wait >= float64(limit) {
		return limit
	}
	return time.Duration(wait)
}
