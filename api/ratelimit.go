package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/server/auth"
)

// requestLimiter is ferry.http.rate.limit.per.principal: each principal
// (each client host, for requests without credentials) may make so many
// requests a second, with a second's worth in reserve for bursts; past
// that it is answered 429 with Retry-After, before its request costs
// anything else. Health checks are never limited.
type requestLimiter struct {
	perSecond int64
	now       func() time.Time

	mu    sync.Mutex
	rates map[string]*bucket
	// swept is when idle principals' buckets were last dropped.
	swept time.Time
}

const (
	codeRateLimited = 42901
	// limiterIdle: a bucket unused this long is full again, so dropping
	// it changes nothing; sweeping bounds the map by the principals of
	// the last minute.
	limiterIdle = time.Minute
)

func newRequestLimiter(perSecond int64, now func() time.Time) *requestLimiter {
	if now == nil {
		now = time.Now
	}
	return &requestLimiter{perSecond: perSecond, now: now, rates: map[string]*bucket{}, swept: now()}
}

// bucket is one principal's budget: it starts full, holds a second of
// requests and refills at the limit.
type bucket struct {
	tokens float64
	at     time.Time
}

func (b *bucket) refill(now time.Time, perSecond float64) {
	if now.After(b.at) {
		b.tokens = min(perSecond, b.tokens+now.Sub(b.at).Seconds()*perSecond)
		b.at = now
	}
}

// take counts one request of key and reports how long it must wait
// (0: go ahead).
func (l *requestLimiter) take(key string) time.Duration {
	now := l.now()
	rate := float64(l.perSecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > limiterIdle {
		for k, b := range l.rates {
			if now.Sub(b.at) > limiterIdle {
				delete(l.rates, k) // full again: nothing is lost
			}
		}
		l.swept = now
	}
	b := l.rates[key]
	if b == nil {
		b = &bucket{tokens: rate, at: now}
		l.rates[key] = b
	}
	b.refill(now, rate)
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / rate * float64(time.Second))
	}
	b.tokens--
	return 0
}

// rateLimit is the middleware after authenticate.
func (g *Gateway) rateLimit(next http.Handler) http.Handler {
	if g.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/healthz" || p == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		key := auth.PrincipalFrom(r.Context()).String()
		if key == auth.Anonymous.String() {
			key = "host:" + clientHost(r)
		}
		if wait := g.limiter.take(key); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeError(w, http.StatusTooManyRequests, codeRateLimited,
				"more than "+strconv.FormatInt(g.limiter.perSecond, 10)+" requests a second from "+key+"; retry after "+wait.Round(time.Millisecond).String())
			return
		}
		next.ServeHTTP(w, r)
	})
}
