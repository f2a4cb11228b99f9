package throttle

import (
	"testing"
	"time"
)

// Over a long run the rate copies the bound per second, overshooting by
// at most what one fetch took past the balance.
func TestRateHoldsTheBound(t *testing.T) {
	var r Rate
	start := time.Unix(1000, 0)
	r.SetLimit(1000, start)
	now, copied := start, 0
	const fetch = 300
	for now.Before(start.Add(60 * time.Second)) {
		if d := r.Delay(now); d > 0 {
			now = now.Add(d)
			continue
		}
		r.Record(fetch, now)
		copied += fetch
		now = now.Add(time.Millisecond) // a fetch's round trip
	}
	want := 60 * 1000
	if copied < want || copied > want+fetch {
		t.Fatalf("copied %d bytes in 60 s at 1000 B/s; want %d..%d", copied, want, want+fetch)
	}
}

func TestRateUnlimitedAndLifted(t *testing.T) {
	var r Rate
	now := time.Unix(0, 0)
	r.Record(1<<30, now)
	if r.Exceeded(now) || r.Limit() != Unlimited {
		t.Fatal("a rate with no bound is never exceeded")
	}
	r.SetLimit(100, now)
	r.Record(500, now)
	if got := r.Delay(now); got != 5*time.Second {
		t.Fatalf("delay after 500 B at 100 B/s: %v, want 5s", got)
	}
	if !r.Exceeded(now.Add(4 * time.Second)) {
		t.Fatal("not exceeded 4 s after 500 B at 100 B/s")
	}
	if r.Exceeded(now.Add(5 * time.Second)) {
		t.Fatal("still exceeded 5 s after 500 B at 100 B/s")
	}
	r.SetLimit(Unlimited, now)
	r.Record(1<<20, now)
	if r.Exceeded(now) {
		t.Fatal("exceeded after the bound was lifted")
	}
}

// An idle throttle saves up at most one second of its bound.
func TestRateSavesAtMostOneSecond(t *testing.T) {
	var r Rate
	now := time.Unix(0, 0)
	r.SetLimit(100, now)
	now = now.Add(time.Hour)
	r.Record(150, now)
	if got := r.Delay(now); got != 500*time.Millisecond {
		t.Fatalf("delay after an idle hour and 150 B at 100 B/s: %v, want 500ms", got)
	}
}

func TestParseReplicas(t *testing.T) {
	for _, tc := range []struct {
		in   string
		has  [][2]int32
		not  [][2]int32
		fail bool
	}{
		{in: "", not: [][2]int32{{0, 1}}},
		{in: "*", has: [][2]int32{{0, 1}, {7, 3}}},
		{in: "0:1, 0:2,3:4", has: [][2]int32{{0, 1}, {0, 2}, {3, 4}}, not: [][2]int32{{1, 1}, {0, 3}}},
		{in: "0:x", fail: true},
		{in: "0", fail: true},
		{in: "-1:2", fail: true},
		{in: "*,0:1", fail: true},
	} {
		r, err := ParseReplicas(tc.in)
		if (err != nil) != tc.fail {
			t.Errorf("ParseReplicas(%q) error %v, want failure %v", tc.in, err, tc.fail)
			continue
		}
		for _, p := range tc.has {
			if !r.Has(p[0], p[1]) {
				t.Errorf("%q: %d:%d not throttled", tc.in, p[0], p[1])
			}
		}
		for _, p := range tc.not {
			if r.Has(p[0], p[1]) {
				t.Errorf("%q: %d:%d throttled", tc.in, p[0], p[1])
			}
		}
	}
	if got := Format([][2]int32{{0, 1}, {2, 3}}); got != "0:1,2:3" {
		t.Fatalf("Format: %q", got)
	}
}
