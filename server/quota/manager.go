package quota

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// MaxThrottle caps one response's throttle time, so a client's next
// request is never held past its request timeout; a request larger than
// this much of its quota is throttled again by the debt left.
const MaxThrottle = 30 * time.Second

// maxBuckets bounds the rates kept: client ids are the client's to pick,
// and a default quota gives each its own rate. Past it, idle rates go.
const maxBuckets = 10000

// Manager is a broker's copy of every entity's quotas and the rates of
// the entities requests count against. It is safe for concurrent use.
type Manager struct {
	alterMu sync.Mutex // serialises Alter's read-modify-write of the store
	// requestQuotas: some entity has a request_percentage quota. Read
	// without mu, so a broker without one pays nothing per request.
	requestQuotas atomic.Bool
	// ipQuotas: some ip entity has a connection_creation_rate; likewise
	// read without mu, so a broker without one pays nothing per accept.
	ipQuotas atomic.Bool
	// rateQuotas: some user or client entity has a quota other than
	// request_percentage (a byte or mutation rate). Read without mu, so a
	// broker without one takes no lock for the bytes of each produce and
	// fetch.
	rateQuotas atomic.Bool
	mu         struct {
		sync.Mutex
		table    Table
		buckets  map[bucketKey]*bucket
		handlers map[Entity]*handlerTime // request_percentage buckets
		ips      ipRates                 // connection_creation_rate (connections.go)
	}
}

type bucketKey struct {
	key    string
	entity Entity
}

type bucket struct {
	rate throttle.Rate
	used time.Time
}

// NewManager starts with no quotas.
func NewManager() *Manager {
	m := &Manager{}
	m.mu.table, m.mu.buckets, m.mu.handlers = Table{}, map[bucketKey]*bucket{}, map[Entity]*handlerTime{}
	m.mu.ips.reset(m.mu.table)
	return m
}

// Replace sets every entity's quotas, as read from the store.
func (m *Manager) Replace(t Table) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.table = Table{}
	for e, q := range t {
		if len(q) > 0 {
			m.mu.table[e] = maps.Clone(q)
		}
	}
	m.restartRatesLocked()
	m.restartIPRatesLocked()
}

// Set replaces one entity's quotas (none: it has no quotas).
func (m *Manager) Set(e Entity, q Quotas) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if maps.Equal(m.mu.table[e], q) {
		return // a notification of a user's credentials alone, say
	}
	if len(q) == 0 {
		delete(m.mu.table, e)
	} else {
		m.mu.table[e] = maps.Clone(q)
	}
	if e.IP.Set {
		m.restartIPRatesLocked() // user and client rates are not the ip's to reset
		return
	}
	// A changed quota may move requests to another entity's rate; start
	// every rate afresh rather than keep ones nothing resolves to.
	m.restartRatesLocked()
}

// restartRatesLocked drops every rate after the table changed. m.mu is
// held.
func (m *Manager) restartRatesLocked() {
	clear(m.mu.buckets)
	clear(m.mu.handlers)
	m.noteRequestQuotasLocked()
	m.noteRateQuotasLocked()
}

// noteRateQuotasLocked keeps rateQuotas true exactly while a user or
// client entity has a quota that rate resolves. m.mu is held.
func (m *Manager) noteRateQuotasLocked() {
	for e, q := range m.mu.table {
		if e.IP.Set {
			continue // Resolve never matches an ip entity
		}
		for key := range q {
			if key != RequestPercentage {
				m.rateQuotas.Store(true)
				return
			}
		}
	}
	m.rateQuotas.Store(false)
}

// Get is one entity's quotas.
func (m *Manager) Get(e Entity) Quotas {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.mu.table[e])
}

// Select lists the entities f selects.
func (m *Manager) Select(f Filter) []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.table.Select(f)
}

// Throttle is what a request's bytes earned.
type Throttle struct {
	Delay  time.Duration // 0: within the quota
	Entity Entity        // the entity the bytes counted against
	Quota  bool          // a quota applies at all
}

// Record counts n bytes of quota type key by user with client id client
// and returns the throttle time they earned.
func (m *Manager) Record(key, user, client string, n int, now time.Time) Throttle {
	return m.rate(key, user, client, n, now, true)
}

// Pending is the throttle time an entity owes before n more bytes, without
// counting any (a fetch checks it before reading).
func (m *Manager) Pending(key, user, client string, now time.Time) Throttle {
	return m.rate(key, user, client, 0, now, false)
}

func (m *Manager) rate(key, user, client string, n int, now time.Time, record bool) Throttle {
	if !m.rateQuotas.Load() {
		return Throttle{} // what Resolve finds with no such quota
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, entity, ok := m.mu.table.Resolve(key, user, client)
	if !ok {
		return Throttle{}
	}
	k := bucketKey{key, entity}
	b := m.mu.buckets[k]
	if b == nil {
		if !record {
			return Throttle{Entity: entity, Quota: true}
		}
		m.pruneLocked(now)
		b = &bucket{}
		// A new rate starts with nothing saved up: its first request
		// is throttled by its own size.
		b.rate.SetLimit(max(int64(limit), 1), now)
		m.mu.buckets[k] = b
	}
	b.used = now
	if record {
		b.rate.Record(n, now)
	}
	return Throttle{Delay: min(b.rate.Delay(now), MaxThrottle), Entity: entity, Quota: true}
}

// pruneLocked drops rates idle for a while once there are too many. m.mu
// is held.
func (m *Manager) pruneLocked(now time.Time) {
	if m.ratesLocked() < maxBuckets {
		return
	}
	for k, b := range m.mu.buckets {
		if now.Sub(b.used) > 2*time.Second {
			delete(m.mu.buckets, k)
		}
	}
	for e, h := range m.mu.handlers {
		if now.Sub(h.used) > 2*time.Second {
			delete(m.mu.handlers, e)
		}
	}
	// All busy: some lose their debt, a quarter at once so the next
	// inserts do not sweep again.
	for k := range m.mu.buckets {
		if m.ratesLocked() < maxBuckets*3/4 {
			return
		}
		delete(m.mu.buckets, k)
	}
	for e := range m.mu.handlers {
		if m.ratesLocked() < maxBuckets*3/4 {
			return
		}
		delete(m.mu.handlers, e)
	}
}

// ratesLocked is how many rates are kept. m.mu is held.
func (m *Manager) ratesLocked() int { return len(m.mu.buckets) + len(m.mu.handlers) }

// WindowBytes is the most bytes of key the entity may take in one
// second, for bounding a fetch; ok false: no quota.
func (m *Manager) WindowBytes(key, user, client string) (int64, bool) {
	if !m.rateQuotas.Load() {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	limit, _, ok := m.mu.table.Resolve(key, user, client)
	return int64(limit), ok
}
