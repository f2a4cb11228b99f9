package quota

import (
	"context"
	"testing"
	"time"
)

// A client that sends its next request as soon as its throttle time has
// passed uses its share of one handler thread and no more, whatever its
// requests cost; one without a quota is never throttled.
func TestRequestTimeHoldsTheShare(t *testing.T) {
	for _, tc := range []struct {
		percentage float64
		cost       time.Duration
	}{
		{1, 50 * time.Microsecond}, // cheap Metadata requests at 1%
		{10, 2 * time.Millisecond},
		{80, 30 * time.Millisecond},
		{50, 400 * time.Millisecond}, // each request near a window's share
	} {
		m := NewManager()
		m.Set(Entity{Client: Named("busy")}, Quotas{RequestPercentage: tc.percentage})
		start := time.Unix(1000, 0)
		now, used, throttled := start, time.Duration(0), 0
		for now.Before(start.Add(60 * time.Second)) {
			now = now.Add(tc.cost) // the handler runs
			used += tc.cost
			th := m.RecordRequest("ANONYMOUS", "busy", tc.cost, now)
			if !th.Quota || th.Entity != (Entity{Client: Named("busy")}) || th.Delay > RequestWindow {
				t.Fatalf("%v%%: throttle %+v", tc.percentage, th)
			}
			if th.Delay > 0 {
				throttled++
			}
			now = now.Add(th.Delay)
		}
		share := used.Seconds() / now.Sub(start).Seconds()
		want := tc.percentage / 100
		if share < 0.95*want || share > 1.05*want {
			t.Errorf("%v%% with %v requests: used %.4f of a thread, want %.4f ±5%%", tc.percentage, tc.cost, share, want)
		}
		if throttled == 0 {
			t.Errorf("%v%%: never throttled", tc.percentage)
		}
		if th := m.RecordRequest("ANONYMOUS", "idle", time.Hour, now); th.Quota || th.Delay != 0 {
			t.Errorf("a client id without a quota was throttled: %+v", th)
		}
	}
}

// A request far over the share earns one window's throttle, not its whole
// cost; the debt it leaves is bounded, so the entity is within its share
// again after two windows.
func TestRequestThrottleIsBoundedByTheWindow(t *testing.T) {
	m := NewManager()
	m.Set(Entity{Client: Named("c")}, Quotas{RequestPercentage: 1})
	now := time.Unix(0, 0)
	if d := m.RecordRequest("u", "c", 5*time.Second, now).Delay; d != RequestWindow {
		t.Fatalf("a 5 s request at 1%%: throttled %v, want %v", d, RequestWindow)
	}
	if d := m.RecordRequest("u", "c", 0, now.Add(RequestWindow/2)).Delay; d != RequestWindow/2 {
		t.Fatalf("half a window later: %v, want %v", d, RequestWindow/2)
	}
	if d := m.RecordRequest("u", "c", 0, now.Add(2*RequestWindow)).Delay; d != 0 {
		t.Fatalf("two windows later: still throttled %v", d)
	}
	// Idle, it saves up at most one window's share: 10 ms at 1%.
	later := now.Add(time.Hour)
	if d := m.RecordRequest("u", "c", 10*time.Millisecond, later).Delay; d != 0 {
		t.Fatalf("10 ms after an idle hour at 1%%: throttled %v", d)
	}
	if d := m.RecordRequest("u", "c", 10*time.Millisecond, later).Delay; d != time.Second {
		t.Fatalf("10 ms more: throttled %v, want 1s (10 ms is a second of 1%%)", d)
	}
}

// request_percentage follows the byte rates' precedence: a user's quota is
// shared by the user's client ids; a user with no quota of their own falls
// to the client id's.
func TestRequestTimePrecedence(t *testing.T) {
	m := NewManager()
	m.Set(Entity{User: Named("alice")}, Quotas{RequestPercentage: 50, ProducerByteRate: 1 << 20})
	m.Set(Entity{Client: DefaultComponent}, Quotas{RequestPercentage: 100})
	now := time.Unix(0, 0)
	m.RecordRequest("alice", "a", 100*time.Millisecond, now)
	th := m.RecordRequest("alice", "b", 100*time.Millisecond, now)
	if th.Entity != (Entity{User: Named("alice")}) || th.Delay != 400*time.Millisecond {
		t.Fatalf("alice's second client id: %+v, want 400ms against users/alice", th)
	}
	th = m.RecordRequest("bob", "b", 100*time.Millisecond, now)
	if th.Entity != (Entity{Client: Named("b")}) || th.Delay != 100*time.Millisecond {
		t.Fatalf("bob: %+v, want 100ms against clients/b (the default, per client id)", th)
	}
	// The byte rate of the same entity is its own.
	// 1 KiB at 1 MiB/s, rounded up to the nanosecond.
	if d := m.Record(ProducerByteRate, "alice", "a", 1<<10, now).Delay; d != time.Second/1024+1 {
		t.Fatalf("alice's bytes: %v", d)
	}
}

// The listener times requests only while some entity has a
// request_percentage quota.
func TestLimitsRequestsFollowsTheTable(t *testing.T) {
	m := NewManager()
	now := time.Unix(0, 0)
	e := Entity{User: Named("alice")}
	m.Set(e, Quotas{ProducerByteRate: 100})
	if m.LimitsRequests() {
		t.Fatal("limits requests with only a byte rate set")
	}
	m.Set(e, Quotas{ProducerByteRate: 100, RequestPercentage: 5})
	if !m.LimitsRequests() {
		t.Fatal("does not limit requests with request_percentage set")
	}
	m.RecordRequest("alice", "x", time.Second, now)
	// A changed quota starts the rates afresh.
	m.Set(e, Quotas{RequestPercentage: 10})
	if d := m.RecordRequest("alice", "x", 0, now).Delay; d != 0 {
		t.Fatalf("after a change: owes %v", d)
	}
	m.Set(e, nil)
	if m.LimitsRequests() {
		t.Fatal("limits requests after the quota was removed")
	}
	if th := m.RecordRequest("alice", "x", time.Hour, now); th.Quota {
		t.Fatalf("throttled with no quota: %+v", th)
	}
	m.Replace(Table{{Client: Named("c")}: {RequestPercentage: 1}})
	if !m.LimitsRequests() {
		t.Fatal("Replace with request_percentage: not limiting")
	}
	m.Replace(Table{})
	if m.LimitsRequests() {
		t.Fatal("Replace with nothing: still limiting")
	}
}

func TestRequestRatesAreBounded(t *testing.T) {
	m := NewManager()
	m.Set(Entity{Client: DefaultComponent}, Quotas{RequestPercentage: 1, ProducerByteRate: 1000})
	now := time.Unix(0, 0)
	for i := range 2 * maxBuckets {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		m.RecordRequest("u", id, time.Millisecond, now)
		m.Record(ProducerByteRate, "u", id, 10, now)
	}
	m.mu.Lock()
	n := m.ratesLocked()
	m.mu.Unlock()
	if n > maxBuckets {
		t.Fatalf("%d rates kept, want at most %d", n, maxBuckets)
	}
}

func TestParkedCountsOnlyWhereAsked(t *testing.T) {
	Park(context.Background()).End() // no Parked: nothing to count, no panic
	var p Parked
	ctx := WithParked(context.Background(), &p)
	w := Park(ctx)
	w.from = w.from.Add(-300 * time.Millisecond) // as if it began 300 ms ago
	w.End()
	if p.Total() < 300*time.Millisecond || p.Total() > time.Second {
		t.Fatalf("parked %v, want about 300ms", p.Total())
	}
	p.Reset()
	if p.Total() != 0 {
		t.Fatalf("after Reset: %v", p.Total())
	}
}

// The accounting allocates nothing per request, with or without a quota.
func TestRecordRequestDoesNotAllocate(t *testing.T) {
	m := NewManager()
	now := time.Unix(0, 0)
	if n := testing.AllocsPerRun(1000, func() { m.RecordRequest("u", "c", time.Microsecond, now) }); n != 0 {
		t.Fatalf("no quota: %v allocations per request", n)
	}
	m.Set(Entity{Client: Named("c")}, Quotas{RequestPercentage: 1})
	m.RecordRequest("u", "c", 0, now) // the bucket's one allocation
	if n := testing.AllocsPerRun(1000, func() { m.RecordRequest("u", "c", time.Microsecond, now) }); n != 0 {
		t.Fatalf("with a quota: %v allocations per request", n)
	}
	var p Parked
	ctx := WithParked(context.Background(), &p)
	if n := testing.AllocsPerRun(1000, func() { Park(ctx).End() }); n != 0 {
		t.Fatalf("Park: %v allocations", n)
	}
}

// BenchmarkRecordRequest is the accounting's cost per request: none when no
// entity has a request quota (one atomic load), a lock and a resolve when
// another entity has one, and the bucket's arithmetic when this one has.
func BenchmarkRecordRequest(b *testing.B) {
	for _, bc := range []struct {
		name  string
		table Table
	}{
		{"no-quota", Table{}},
		{"other-entity", Table{{Client: Named("other")}: {RequestPercentage: 1}}},
		{"quota", Table{{Client: Named("c")}: {RequestPercentage: 1e6}}},
		{"user-default-quota", Table{{User: DefaultComponent}: {RequestPercentage: 1e6}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := NewManager()
			m.Replace(bc.table)
			now := time.Unix(0, 0)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Microsecond)
				m.RecordRequest("alice", "c", time.Microsecond, now)
			}
		})
	}
}
