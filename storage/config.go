package storage

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// Kafka's defaults for the settings of Config.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMaxAge      = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultRetentionTime      = 7 * 24 * time.Hour
)

// Defaults returns c with every zero field set to Kafka's default.
// RetentionBytes 0 means "no limit" (-1) as its default, since a zero byte
// limit is never what a caller means; FlushMessages, FlushInterval and
// MaxBatchBytes keep 0 (disabled).
func (c Config) Defaults() Config {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMaxAge == 0 {
		c.SegmentMaxAge = DefaultSegmentMaxAge
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.RetentionTime == 0 {
		c.RetentionTime = DefaultRetentionTime
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	return c
}

// Validate reports settings the log cannot work with. Call it on a config
// that went through Defaults.
func (c Config) Validate() error {
	var errs []error
	if c.SegmentBytes < recordbatch.HeaderSize || c.SegmentBytes > math.MaxInt32 {
		// Index positions are 32-bit, as in Kafka.
		errs = append(errs, fmt.Errorf("segment bytes %d not in [%d, %d]", c.SegmentBytes, recordbatch.HeaderSize, math.MaxInt32))
	}
	if c.SegmentMaxAge <= 0 {
		errs = append(errs, fmt.Errorf("segment max age %v must be positive", c.SegmentMaxAge))
	}
	if c.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("index interval bytes %d is negative", c.IndexIntervalBytes))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush interval %v is negative", c.FlushInterval))
	}
	if c.MaxBatchBytes < 0 {
		errs = append(errs, fmt.Errorf("max batch bytes %d is negative", c.MaxBatchBytes))
	}
	if cp := c.Compaction; cp.MinCleanableRatio < 0 || cp.MinCleanableRatio > 1 || cp.MinLag < 0 || cp.MaxLag < 0 || cp.DeleteRetention < 0 {
		errs = append(errs, fmt.Errorf("compaction settings %+v out of range", cp))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage config: %w", err)
	}
	return nil
}
