package quota

import (
	"math"
	"time"
)

// tokenBucket is the one token bucket behind the request-time and the
// connection rates: it refills at rate a second up to capacity and owes at
// most capacity, so what it saves and what it owes are both one window of
// the rate. (The byte rates use replication/quota.Rate, whose debt is not
// bounded: a Produce's bytes are owed whole.)
type tokenBucket struct {
	rate     float64 // tokens a second; 0: it never refills
	capacity float64
	balance  float64 // tokens that may be taken now; below 0: owed
	at       time.Time
}

func (b *tokenBucket) refill(now time.Time) {
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.balance = min(b.balance+elapsed*b.rate, b.capacity)
		b.at = now
	}
}

// take draws n, owing at most capacity.
func (b *tokenBucket) take(n float64) { b.balance = max(b.balance-n, -b.capacity) }

// give returns n, saving at most capacity.
func (b *tokenBucket) give(n float64) { b.balance = min(b.balance+n, b.capacity) }

// until is how long until the balance has refilled to level, at most
// limit (limit too for a bucket that never refills).
func (b *tokenBucket) until(level float64, limit time.Duration) time.Duration {
	if b.balance >= level {
		return 0
	}
	if b.rate <= 0 {
		return limit
	}
	return min(time.Duration(math.Ceil((level-b.balance)/b.rate*float64(time.Second))), limit)
}
