package kbench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// IsTerminal reports whether f is a character device, as a terminal is.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress redraws a bar on w every 200ms from a counter, until stop.
type progress struct {
	done chan struct{}
	wait chan struct{}
}

func startProgress(w io.Writer, label string, count *atomic.Int64, target int64, bound time.Duration) *progress {
	p := &progress{done: make(chan struct{}), wait: make(chan struct{})}
	if w == nil {
		close(p.wait)
		return p
	}
	start := time.Now()
	go func() {
		defer close(p.wait)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-tick.C:
				drawBar(w, label, count.Load(), target, time.Since(start), bound)
			}
		}
	}()
	return p
}

// stop erases the bar and waits for its goroutine.
func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	<-p.wait
}

// drawBar shows the fraction done of whichever bound, count or time, is
// nearer.
func drawBar(w io.Writer, label string, n, target int64, elapsed, bound time.Duration) {
	frac := 0.0
	if target > 0 {
		frac = float64(n) / float64(target)
	}
	if bound > 0 {
		frac = max(frac, elapsed.Seconds()/bound.Seconds())
	}
	frac = min(frac, 1)
	const width = 30
	filled := int(frac * width)
	rate := float64(n) / elapsed.Seconds()
	fmt.Fprintf(w, "\r%s [%s%s] %3.0f%% %d records %.0f/s\033[K", label,
		strings.Repeat("#", filled), strings.Repeat(" ", width-filled), frac*100, n, rate)
}
