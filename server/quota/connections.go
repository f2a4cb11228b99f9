package quota

import (
	"net/netip"
	"sync"
	"time"

	"github.com/ferry-mq/ferry/replication/throttle"
)

// Connection creation rates (KIP-612). Two kinds, decided here without
// I/O and enforced by the Kafka listener's accept loop:
//
//   - An ip entity's connection_creation_rate (or the <default> ip's, each
//     address then its own rate) holds new connections from one address.
//     A connection over it is refused and not counted, as Kafka un-records
//     it, so a client retrying in a loop does not lock itself out for
//     longer; the refusal says how long until the address may connect
//     again, for which Kafka keeps the socket open, unread, before closing
//     it, so the client's reconnect backoff is not all that slows it.
//   - A listener's max.connection.creation.rate (ConnectionRate): every
//     connection is counted and one over the rate is not refused but
//     accepted late, the acceptor waiting out the delay, as Kafka's
//     acceptor does.
//
// Both are token buckets refilling at the rate and saving at most one
// second of it (at least one connection), so a rate of 5 lets 5
// connections in at once and then one every 200 ms. A new bucket starts
// full. A delay is at most ConnectionWindow, as Kafka bounds its connection
// throttle by quota.window.size.seconds.

// ConnectionWindow bounds one connection throttle.
const ConnectionWindow = time.Second

// maxIPBuckets bounds the addresses whose rates are kept: with a <default>
// ip quota every client address has its own. Past it, refilled rates go.
const maxIPBuckets = 10000

// newConnBucket is a connection rate's bucket, full: rate connections a
// second (0 refuses every one), saving and owing burstOf(rate).
func newConnBucket(rate float64, now time.Time) throttle.Bucket {
	return throttle.NewBucket(rate, burstOf(rate), burstOf(rate), burstOf(rate), now)
}

// burstOf is what a bucket saves up: one second of its rate, and at least
// the one connection a rate below one a second must let through.
func burstOf(rate float64) float64 { return max(rate, 1) }

// ipRates are the connection_creation_rate quotas by address and the
// addresses' buckets, owned by a Manager under its mu.
type ipRates struct {
	limits     map[netip.Addr]float64
	deflt      float64 // the <default> ip's rate, when hasDefault
	hasDefault bool
	buckets    map[netip.Addr]*throttle.Bucket
}

// reset reads the ip quotas from t and starts every address's rate afresh.
func (r *ipRates) reset(t Table) {
	r.limits, r.hasDefault, r.deflt = map[netip.Addr]float64{}, false, 0
	for e, q := range t {
		v, ok := q[ConnectionCreationRate]
		if !e.IP.Set || !ok {
			continue
		}
		if e.IP.Default {
			r.deflt, r.hasDefault = v, true
			continue
		}
		if a, err := netip.ParseAddr(e.IP.Value); err == nil {
			r.limits[a.Unmap()] = v
		}
	}
	r.buckets = map[netip.Addr]*throttle.Bucket{}
}

func (r *ipRates) any() bool { return len(r.limits) > 0 || r.hasDefault }

// limit is ip's rate: its own, else the default's.
func (r *ipRates) limit(ip netip.Addr) (float64, bool) {
	if v, ok := r.limits[ip]; ok {
		return v, true
	}
	return r.deflt, r.hasDefault
}

// prune drops refilled buckets once there are too many, and if every one
// is in use a quarter of them, so the next inserts do not sweep again.
func (r *ipRates) prune(now time.Time) {
	if len(r.buckets) < maxIPBuckets {
		return
	}
	for ip, b := range r.buckets {
		if b.Refill(now); b.Full() { // dropping it loses nothing
			delete(r.buckets, ip)
		}
	}
	for ip := range r.buckets {
		if len(r.buckets) < maxIPBuckets*3/4 {
			return
		}
		delete(r.buckets, ip)
	}
}

// restartIPRatesLocked rereads the ip quotas after the table changed.
// m.mu is held.
func (m *Manager) restartIPRatesLocked() {
	m.mu.ips.reset(m.mu.table)
	m.ipQuotas.Store(m.mu.ips.any())
}

// LimitsConnections reports whether any ip entity has a
// connection_creation_rate: while none does, AdmitConnection admits all.
func (m *Manager) LimitsConnections() bool { return m.ipQuotas.Load() }

// AdmitConnection counts a new connection from ip against the
// connection_creation_rate that holds it (the address's own, else the
// <default> ip's). Over it, refused is true, the connection is not
// counted, and closeAfter is the time until the address may connect again
// (at most ConnectionWindow). An invalid ip (a connection that is not
// TCP) is admitted.
func (m *Manager) AdmitConnection(ip netip.Addr, now time.Time) (refused bool, closeAfter time.Duration) {
	if !m.ipQuotas.Load() || !ip.IsValid() {
		return false, 0
	}
	ip = ip.Unmap()
	m.mu.Lock()
	defer m.mu.Unlock()
	rate, ok := m.mu.ips.limit(ip)
	if !ok {
		return false, 0
	}
	b := m.mu.ips.buckets[ip]
	if b == nil {
		m.mu.ips.prune(now)
		nb := newConnBucket(rate, now)
		b = &nb
		m.mu.ips.buckets[ip] = b
	}
	if rate <= 0 { // the address may not connect at all
		return true, ConnectionWindow
	}
	b.Refill(now)
	if b.Balance() >= 1 {
		b.Take(1)
		return false, 0
	}
	return true, b.Until(1, ConnectionWindow)
}

// ConnectionRate is a listener's max.connection.creation.rate: every
// connection counts, and one over the rate waits. It is safe for
// concurrent use (listeners may share the broker-wide rate).
type ConnectionRate struct {
	mu struct {
		sync.Mutex
		b throttle.Bucket
	}
}

// NewConnectionRate starts a rate of perSecond connections (at least 1),
// with one second of it saved up.
func NewConnectionRate(perSecond float64, now time.Time) *ConnectionRate {
	r := &ConnectionRate{}
	r.mu.b = newConnBucket(max(perSecond, 1), now)
	return r
}

// Record counts a new connection and returns how long the acceptor should
// wait before taking it in (0: within the rate). The balance owes at most
// one second of the rate, so the wait is at most ConnectionWindow.
func (r *ConnectionRate) Record(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &r.mu.b
	b.Refill(now)
	b.Take(1)
	return b.Until(0, ConnectionWindow)
}

// Unrecord gives back a connection Record counted that was then refused
// (over its address's connection_creation_rate), as Kafka un-records it
// from the listener's and the broker's rates.
func (r *ConnectionRate) Unrecord(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.b.Refill(now)
	r.mu.b.Give(1)
}
