package quota

import (
	"net/netip"
	"testing"
	"time"
)

var (
	ipA = netip.MustParseAddr("127.0.0.1")
	ipB = netip.MustParseAddr("127.0.0.2")
)

// admitted counts the connections admitted from ip when one is attempted
// every step for the whole of d, and returns the last refusal's delay.
func admitted(m *Manager, ip netip.Addr, from time.Time, d, step time.Duration) (n int, lastDelay time.Duration) {
	for at := from; at.Before(from.Add(d)); at = at.Add(step) {
		refused, delay := m.AdmitConnection(ip, at)
		if !refused {
			n++
		} else {
			lastDelay = delay
		}
	}
	return n, lastDelay
}

// An address's rate lets one second of it in at once, then the rate; a
// refused attempt is not counted, so hammering does not lock an address out
// for longer, and it is told when it may connect again. Other addresses
// are not held, and without ip quotas nothing is.
func TestConnectionRatePerIP(t *testing.T) {
	m := NewManager()
	if m.LimitsConnections() {
		t.Fatal("a new manager limits connections")
	}
	if refused, _ := m.AdmitConnection(ipA, time.Unix(0, 0)); refused {
		t.Fatal("refused with no ip quota")
	}
	m.Set(Entity{IP: Named("127.0.0.1")}, Quotas{ConnectionCreationRate: 2})
	start := time.Unix(100, 0)
	// 1000 attempts a second for 10 s: the 2 saved up, then 2 a second.
	n, last := admitted(m, ipA, start, 10*time.Second, time.Millisecond)
	if n < 20 || n > 22 {
		t.Fatalf("admitted %d of 10000 attempts in 10 s at 2/s, want 20–22", n)
	}
	if last <= 0 || last > 500*time.Millisecond {
		t.Fatalf("a refusal's delay %v, want within one token's time (500 ms)", last)
	}
	if n, _ := admitted(m, ipB, start, 10*time.Second, time.Millisecond); n != 10000 {
		t.Fatalf("127.0.0.2 admitted %d of 10000, want all: no quota of its own and no default", n)
	}
	// Right after a refusal, waiting its delay is enough.
	now := start.Add(20 * time.Second)
	admitted(m, ipA, now, 10*time.Millisecond, time.Millisecond) // spend the burst
	refused, delay := m.AdmitConnection(ipA, now.Add(10*time.Millisecond))
	if !refused {
		t.Fatal("not refused after the burst")
	}
	if refused, _ := m.AdmitConnection(ipA, now.Add(10*time.Millisecond+delay)); refused {
		t.Fatalf("refused after waiting the delay %v", delay)
	}
	// An IPv4-mapped address is its IPv4 address.
	if refused, _ := m.AdmitConnection(netip.MustParseAddr("::ffff:127.0.0.1"), now.Add(10*time.Millisecond+delay)); !refused {
		t.Fatal("::ffff:127.0.0.1 escaped 127.0.0.1's rate")
	}
}

// The <default> ip gives every address its own rate; an address's own
// quota wins over it; 0 refuses every connection, each held a window.
func TestConnectionRateDefaultAndZero(t *testing.T) {
	m := NewManager()
	m.Replace(Table{{IP: DefaultComponent}: {ConnectionCreationRate: 5}, {IP: Named("127.0.0.2")}: {ConnectionCreationRate: 0}})
	start := time.Unix(0, 0)
	for i := range 3 {
		ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})
		if n, _ := admitted(m, ip, start, 2*time.Second, time.Millisecond); n < 10 || n > 16 {
			t.Fatalf("%s admitted %d in 2 s at the default 5/s, want 10–16", ip, n)
		}
	}
	n, last := admitted(m, ipB, start, 2*time.Second, time.Millisecond)
	if n != 0 || last != ConnectionWindow {
		t.Fatalf("rate 0: admitted %d, delay %v; want none, each held %v", n, last, ConnectionWindow)
	}
	// Removing the quotas lifts them at once.
	m.Set(Entity{IP: DefaultComponent}, nil)
	m.Set(Entity{IP: Named("127.0.0.2")}, nil)
	if m.LimitsConnections() {
		t.Fatal("still limits with no ip quota")
	}
	if n, _ := admitted(m, ipB, start.Add(3*time.Second), time.Second, time.Millisecond); n != 1000 {
		t.Fatalf("after removal admitted %d of 1000", n)
	}
}

// A change of a user's quota leaves the addresses' rates alone.
func TestUserQuotaChangeKeepsIPRates(t *testing.T) {
	m := NewManager()
	m.Set(Entity{IP: Named("127.0.0.1")}, Quotas{ConnectionCreationRate: 1})
	now := time.Unix(0, 0)
	if refused, _ := m.AdmitConnection(ipA, now); refused {
		t.Fatal("first connection refused")
	}
	m.Set(Entity{User: Named("alice")}, Quotas{ProducerByteRate: 100})
	if refused, _ := m.AdmitConnection(ipA, now); !refused {
		t.Fatal("a user quota change reset 127.0.0.1's rate")
	}
}

func TestIPRatesAreBounded(t *testing.T) {
	m := NewManager()
	m.Set(Entity{IP: DefaultComponent}, Quotas{ConnectionCreationRate: 1})
	now := time.Unix(0, 0)
	for i := range 3 * maxIPBuckets {
		m.AdmitConnection(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
	}
	m.mu.Lock()
	n := len(m.mu.ips.buckets)
	m.mu.Unlock()
	if n > maxIPBuckets {
		t.Fatalf("%d address rates kept, want at most %d", n, maxIPBuckets)
	}
}

// A listener's rate admits every connection but makes the acceptor wait:
// an acceptor that waits each delay out takes connections in at the rate,
// never waiting more than a window; a refused connection given back
// costs nothing.
func TestListenerConnectionRate(t *testing.T) {
	start := time.Unix(0, 0)
	r := NewConnectionRate(10, start)
	now, accepted := start, 0
	for now.Before(start.Add(10 * time.Second)) {
		d := r.Record(now)
		if d < 0 || d > ConnectionWindow {
			t.Fatalf("wait %v", d)
		}
		now = now.Add(d)
		accepted++
	}
	if accepted < 100 || accepted > 111 {
		t.Fatalf("accepted %d in 10 s at 10/s, want 100–111", accepted)
	}
	// Given back, a connection leaves the balance as it was.
	r2 := NewConnectionRate(1, start)
	if d := r2.Record(start); d != 0 {
		t.Fatalf("first connection waits %v", d)
	}
	r2.Unrecord(start)
	if d := r2.Record(start); d != 0 {
		t.Fatalf("after Unrecord the next waits %v", d)
	}
	// Many at once owe at most a window.
	for range 100 {
		r2.Record(start)
	}
	if d := r2.Record(start); d != ConnectionWindow {
		t.Fatalf("a flood waits %v, want capped at %v", d, ConnectionWindow)
	}
}
