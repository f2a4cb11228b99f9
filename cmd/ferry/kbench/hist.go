package kbench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBuckets is the count of linear buckets per power of two: latencies
// are kept to within 1/16 (6%) of their value.
const subBuckets = 16

// histogram counts durations in log-linear microsecond buckets; Record is
// safe for concurrent use and does not allocate.
type histogram struct {
	counts [64 * subBuckets]atomic.Int64
}

func bucketOf(us uint64) int {
	if us < subBuckets {
		return int(us)
	}
	exp := bits.Len64(us) - 1 // us in [2^exp, 2^(exp+1))
	shift := exp - 4          // keep the 4 bits after the leading one
	return (exp-3)*subBuckets + int(us>>shift)&(subBuckets-1)
}

// lowerBound is the smallest duration in microseconds that lands in bucket b.
func lowerBound(b int) uint64 {
	if b < subBuckets {
		return uint64(b)
	}
	exp := b/subBuckets + 3
	sub := uint64(b % subBuckets)
	return (1 << exp) | sub<<(exp-4)
}

func (h *histogram) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.counts[bucketOf(uint64(us))].Add(1)
}

// Quantile returns the duration at quantile q (0 < q ≤ 1), 0 when empty.
func (h *histogram) Quantile(q float64) time.Duration {
	var total int64
	for i := range h.counts {
		total += h.counts[i].Load()
	}
	if total == 0 {
		return 0
	}
	rank := int64(q*float64(total) + 0.5)
	var seen int64
	for i := range h.counts {
		if seen += h.counts[i].Load(); seen >= rank && seen > 0 {
			return time.Duration(lowerBound(i)) * time.Microsecond
		}
	}
	return 0
}
