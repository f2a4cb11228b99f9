package kbench

import (
	"fmt"
	"io"
	"time"
)

// Result is what one run measured.
type Result struct {
	Op       string // "produce" or "consume"
	Records  int64
	Bytes    int64 // value bytes
	Elapsed  time.Duration
	P50, P99 time.Duration // produce-to-acknowledgement latency; 0 for consume
}

// RecordsPerSec is the throughput in records.
func (r Result) RecordsPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }

// MBPerSec is the throughput in value bytes (10^6 bytes per MB).
func (r Result) MBPerSec() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// WriteText prints the result for a person, then a RESULT line for scripts.
func (r Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %d records in %.2fs: %.0f records/s, %.1f MB/s",
		r.Op, r.Records, r.Elapsed.Seconds(), r.RecordsPerSec(), r.MBPerSec())
	if r.Op == "produce" {
		fmt.Fprintf(w, ", latency p50 %.2f ms, p99 %.2f ms", ms(r.P50), ms(r.P99))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "RESULT op=%s records=%d bytes=%d elapsed_us=%d records_per_sec=%.0f mb_per_sec=%.2f p50_us=%d p99_us=%d\n",
		r.Op, r.Records, r.Bytes, r.Elapsed.Microseconds(), r.RecordsPerSec(), r.MBPerSec(),
		r.P50.Microseconds(), r.P99.Microseconds())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
