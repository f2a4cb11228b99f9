package kbench

import (
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	for us := uint64(0); us < 1<<20; us += 1 + us/50 {
		b := bucketOf(us)
		if lo := lowerBound(b); lo > us || (b+1 < 64*subBuckets && lowerBound(b+1) <= us) {
			t.Fatalf("us=%d bucket %d [%d, %d)", us, b, lo, lowerBound(b+1))
		}
	}
}

func TestQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}} {
		got := h.Quantile(c.q)
		if got > c.want || got < c.want*15/16 {
			t.Errorf("q%.2f = %v, want within 1/16 below %v", c.q, got, c.want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { h.Record(time.Millisecond) }); allocs != 0 {
		t.Errorf("Record allocates %v times", allocs)
	}
}
