package server

import (
	"fmt"
	"math"
	"time"
)

// CleanerConfig is the log cleaner's broker settings, Kafka's
// log.cleaner.* with Kafka's defaults. The zero value is the defaults.
type CleanerConfig struct {
	// Disabled turns the cleaner off (log.cleaner.enable=false): compacted
	// topics then grow as if no cleaner existed.
	Disabled bool
	// Threads is how many logs are cleaned at once (log.cleaner.threads).
	// Default 1.
	Threads int
	// DedupeBufferSize is the offset maps' memory, split over the threads
	// (log.cleaner.dedupe.buffer.size). Default 128 MiB, allocated on a
	// thread's first pass.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond caps the bytes all threads read and write
	// together (log.cleaner.io.max.bytes.per.second). 0 or Kafka's
	// default Double.MAX_VALUE: no cap.
	IOMaxBytesPerSecond float64
	// Backoff is how long a thread sleeps when no log needs cleaning
	// (log.cleaner.backoff.ms). Default 15 s.
	Backoff time.Duration
	// MinCleanableRatio is min.cleanable.dirty.ratio for topics without
	// it (log.cleaner.min.cleanable.ratio). 0: the default, 0.5.
	MinCleanableRatio float64
	// DeleteRetention is delete.retention.ms for topics without it
	// (log.cleaner.delete.retention.ms). Default 1 day.
	DeleteRetention time.Duration
	// MinCompactionLag (log.cleaner.min.compaction.lag.ms). Default 0.
	MinCompactionLag time.Duration
	// MaxCompactionLag (log.cleaner.max.compaction.lag.ms). 0: never
	// (Kafka's Long.MAX_VALUE).
	MaxCompactionLag time.Duration
}

// Defaults fills zero fields with Kafka's defaults.
func (c *CleanerConfig) Defaults() {
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.DedupeBufferSize == 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.Backoff == 0 {
		c.Backoff = 15 * time.Second
	}
	if c.MinCleanableRatio == 0 {
		c.MinCleanableRatio = 0.5
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = 24 * time.Hour
	}
}

// Validate reports the first invalid field.
func (c *CleanerConfig) Validate() error {
	switch {
	case c.Threads < 1:
		return fmt.Errorf("log.cleaner.threads %d: must be >= 1", c.Threads)
	case c.DedupeBufferSize/int64(c.Threads) < 1<<10:
		return fmt.Errorf("log.cleaner.dedupe.buffer.size %d: too small for %d threads", c.DedupeBufferSize, c.Threads)
	case c.IOMaxBytesPerSecond < 0 || math.IsNaN(c.IOMaxBytesPerSecond):
		return fmt.Errorf("log.cleaner.io.max.bytes.per.second %v: must be >= 0", c.IOMaxBytesPerSecond)
	case c.Backoff <= 0:
		return fmt.Errorf("log.cleaner.backoff.ms: must be > 0")
	case c.MinCleanableRatio < 0 || c.MinCleanableRatio > 1:
		return fmt.Errorf("log.cleaner.min.cleanable.ratio %v: must be in [0, 1]", c.MinCleanableRatio)
	case c.DeleteRetention < 0 || c.MinCompactionLag < 0 || c.MaxCompactionLag < 0:
		return fmt.Errorf("log.cleaner lags and retention must not be negative")
	}
	return nil
}

// throttled reports whether the I/O cap is a real one.
func (c *CleanerConfig) throttled() bool {
	return c.IOMaxBytesPerSecond > 0 && c.IOMaxBytesPerSecond < math.MaxFloat64
}
