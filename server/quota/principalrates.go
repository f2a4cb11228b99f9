package quota

import (
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// PrincipalRates is the HTTP gateway's ferry.http.rate.limit.per.principal:
// each key (a principal, or a client host for requests without
// credentials) may make PerSecond requests a second, with a second's worth
// in reserve for bursts. It is safe for concurrent use.
type PrincipalRates struct {
	perSecond float64
	// Now is the clock; tests set it before the first Take.
	Now func() time.Time

	mu struct {
		sync.Mutex
		rates map[string]*throttle.Bucket
		// swept is when idle keys' buckets were last dropped.
		swept time.Time
	}
}

// principalIdle: a bucket unused this long is full again, so dropping it
// changes nothing; sweeping bounds the map by the keys of the last minute.
const principalIdle = time.Minute

// NewPrincipalRates limits every key to perSecond requests a second.
func NewPrincipalRates(perSecond int64) *PrincipalRates {
	r := &PrincipalRates{perSecond: float64(perSecond), Now: time.Now}
	r.mu.rates = map[string]*throttle.Bucket{}
	return r
}

// Take counts one request of key and reports how long it must wait
// (0: go ahead; a refused request takes nothing).
func (r *PrincipalRates) Take(key string) time.Duration {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.swept.IsZero() {
		r.mu.swept = now
	}
	if now.Sub(r.mu.swept) > principalIdle {
		for k, b := range r.mu.rates {
			if now.Sub(b.LastRefill()) > principalIdle {
				delete(r.mu.rates, k) // full again: nothing is lost
			}
		}
		r.mu.swept = now
	}
	b := r.mu.rates[key]
	if b == nil {
		nb := throttle.NewBucket(r.perSecond, r.perSecond, 0, r.perSecond, now)
		b = &nb
		r.mu.rates[key] = b
	}
	b.Refill(now)
	if b.Balance() < 1 {
		return b.Until(1, principalIdle)
	}
	b.Take(1)
	return 0
}
