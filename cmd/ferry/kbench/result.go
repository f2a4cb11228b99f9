package kbench

import (
	"fmt"
	"io"
	"time"
)

// Result is what one run measured.
type Result struct {
	Op      string // "produce", "consume" or "e2e"
	Records int64
	Bytes   int64 // value bytes
	Elapsed time.Duration
	// P50, P99 and P999 are latencies: produce to acknowledgement for
	// produce, Produce called to record polled for e2e; 0 for consume.
	P50, P99, P999 time.Duration
}

// RecordsPerSec is the throughput in records.
func (r Result) RecordsPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }

// MBPerSec is the throughput in value bytes (10^6 bytes per MB).
func (r Result) MBPerSec() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// WriteText prints the result for a person, then a RESULT line for scripts.
func (r Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %d records in %.2fs: %.0f records/s, %.1f MB/s",
		r.Op, r.Records, r.Elapsed.Seconds(), r.RecordsPerSec(), r.MBPerSec())
	if r.Op != "consume" {
		fmt.Fprintf(w, ", latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms", ms(r.P50), ms(r.P99), ms(r.P999))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "RESULT op=%s records=%d bytes=%d elapsed_us=%d records_per_sec=%.0f mb_per_sec=%.2f p50_us=%d p99_us=%d p999_us=%d\n",
		r.Op, r.Records, r.Bytes, r.Elapsed.Microseconds(), r.RecordsPerSec(), r.MBPerSec(),
		r.P50.Microseconds(), r.P99.Microseconds(), r.P999.Microseconds())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
