// Package metricstest measures what metrics cost on a noisy machine.
package metricstest

import (
	"slices"
	"testing"
	"time"
)

// blockOps is how many operations run back to back before switching
// sides: long enough to time, short enough that a neighbour's burst of
// load hits both sides alike.
const blockOps = 64

// Paired runs off and on (the same operation with metrics off and on)
// b.N times each, interleaved in blocks of blockOps whose order alternates,
// and reports off-ns/op, on-ns/op and cost-%: the median over block pairs
// of on/off time, minus one. Pairing cancels the load changes of a shared
// machine that make two separate benchmarks differ by more than the
// effect being measured.
func Paired(b *testing.B, off, on func()) {
	var ratios []float64
	var tOff, tOn time.Duration
	timeBlock := func(f func(), k int) time.Duration {
		start := time.Now()
		for range k {
			f()
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for done, pair := 0, 0; done < b.N; pair++ {
		k := min(blockOps, b.N-done)
		var dOff, dOn time.Duration
		if pair%2 == 0 {
			dOff = timeBlock(off, k)
			dOn = timeBlock(on, k)
		} else {
			dOn = timeBlock(on, k)
			dOff = timeBlock(off, k)
		}
		tOff, tOn = tOff+dOff, tOn+dOn
		ratios = append(ratios, float64(dOn)/float64(dOff))
		done += k
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "off-ns/op")
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "on-ns/op")
	b.ReportMetric((ratios[len(ratios)/2]-1)*100, "cost-%")
}
