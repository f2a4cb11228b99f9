package quota

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// RequestWindow bounds a request-time bucket both ways: it saves up at
// most this much of its share and owes at most this much, so one
// response's request throttle is at most RequestWindow. Kafka caps its
// request throttle at one quota window (quota.window.size.seconds, 1 s),
// so a client is never held for long by the handler time of a few
// requests that its sampled window would soon forget.
const RequestWindow = time.Second

// handlerTime is one entity's request-time bucket: it refills at
// request_percentage / 100 seconds of handler time per second (1 being one
// whole handler thread), saves and owes at most RequestWindow of that, and
// each request draws its handler time.
type handlerTime struct {
	tokens throttle.Bucket // in seconds of handler time
	used   time.Time
}

// newHandlerTime starts with nothing saved up: a new entity's first
// request is throttled by its own handler time, as a new byte rate is by
// its size.
func newHandlerTime(percentage float64, now time.Time) *handlerTime {
	share := max(percentage/100, math.SmallestNonzeroFloat64)
	window := RequestWindow.Seconds() * share
	return &handlerTime{tokens: throttle.NewBucket(share, window, window, 0, now)}
}

// record draws d and returns the delay that brings the balance back to
// zero (0: within the share).
func (h *handlerTime) record(d time.Duration, now time.Time) time.Duration {
	h.tokens.Refill(now)
	h.tokens.Take(max(d, 0).Seconds())
	return h.tokens.Until(0, RequestWindow)
}

// LimitsRequests reports whether any entity has a request_percentage
// quota: while none does, the listener need not time its requests.
func (m *Manager) LimitsRequests() bool { return m.requestQuotas.Load() }

// RecordRequest counts d of handler time by user with client id client
// against the request_percentage quota that holds them (the precedence
// the byte rates use) and returns the throttle time it earned.
func (m *Manager) RecordRequest(user, client string, d time.Duration, now time.Time) Throttle {
	if !m.requestQuotas.Load() {
		return Throttle{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	percentage, entity, ok := m.mu.table.Resolve(RequestPercentage, user, client)
	if !ok {
		return Throttle{}
	}
	h := m.mu.handlers[entity]
	if h == nil {
		m.pruneLocked(now)
		h = newHandlerTime(percentage, now)
		m.mu.handlers[entity] = h
	}
	h.used = now
	return Throttle{Delay: h.record(d, now), Entity: entity, Quota: true}
}

// noteRequestQuotasLocked keeps LimitsRequests true exactly while an
// entity has a request_percentage quota. m.mu is held.
func (m *Manager) noteRequestQuotasLocked() {
	for _, q := range m.mu.table {
		if _, ok := q[RequestPercentage]; ok {
			m.requestQuotas.Store(true)
			return
		}
	}
	m.requestQuotas.Store(false)
}

// Parked is the time one request spends parked (a Fetch's long poll, a
// Produce waiting for its acks, a JoinGroup waiting for the rebalance),
// which its handler time leaves out as Kafka's leaves out purgatory time:
// parked, the request holds no handler busy. The zero value is ready.
type Parked struct{ nanos atomic.Int64 }

// Total is the time parked so far.
func (p *Parked) Total() time.Duration { return time.Duration(p.nanos.Load()) }

// Reset starts the count again, for the connection's next request.
func (p *Parked) Reset() { p.nanos.Store(0) }

type parkedKey struct{}

// WithParked makes ctx's waits count into p.
func WithParked(ctx context.Context, p *Parked) context.Context {
	return context.WithValue(ctx, parkedKey{}, p)
}

// Park starts a wait of the request ctx serves; call End when it is over.
// Without WithParked (no request quota to account for) it costs nothing.
func Park(ctx context.Context) ParkedWait {
	p, _ := ctx.Value(parkedKey{}).(*Parked)
	if p == nil {
		return ParkedWait{}
	}
	return ParkedWait{p: p, from: time.Now()}
}

// ParkedWait is one wait Park started.
type ParkedWait struct {
	p    *Parked
	from time.Time
}

// End adds the wait to its request's parked time.
func (w ParkedWait) End() {
	if w.p != nil {
		w.p.nanos.Add(int64(time.Since(w.from)))
	}
}
