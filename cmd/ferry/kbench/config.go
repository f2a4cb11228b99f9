package kbench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// Config is one benchmark run. The zero value is not valid: use
// RegisterFlags (or set every field) and call Validate.
type Config struct {
	Bootstrap   string
	Topic       string
	RecordSize  int           // value bytes per record
	Records     int64         // records to produce or consume; 0: until Duration
	Partitions  int           // partitions of the topic if Produce creates it
	Acks        string        // 0, 1 or all
	Compression string        // none, gzip, snappy, lz4, zstd
	Duration    time.Duration // upper bound of the run; 0: none
	Buffered    int           // records the producer buffers before Produce blocks
	Linger      time.Duration // how long a partition's batch waits to fill
	Progress    io.Writer     // progress bar, e.g. a terminal's stderr; nil: none
	Rate        int           // records/s the end-to-end benchmark produces at
}

// RegisterFlags adds the benchmark flags (all but --bootstrap) to fs with
// their defaults, filling c when fs is parsed.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Topic, "topic", "ferry-bench", "topic to produce to or consume from (created if missing)")
	fs.IntVar(&c.RecordSize, "record-size", 100, "value bytes per record")
	fs.Int64Var(&c.Records, "records", 1_000_000, "records to produce or consume (0: until --duration)")
	fs.IntVar(&c.Partitions, "partitions", 1, "partitions of the topic when it is created")
	fs.StringVar(&c.Acks, "acks", "1", "produce acknowledgements: 0, 1 or all")
	fs.StringVar(&c.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "stop after this long even if --records are not done (0: no bound)")
	fs.IntVar(&c.Buffered, "buffered-records", 32<<10, "records the producer buffers before it blocks (bounds latency measured from Produce)")
	fs.IntVar(&c.Rate, "rate", 10_000, "records/s produced by the end-to-end latency benchmark (bench e2e)")
	fs.DurationVar(&c.Linger, "linger", 5*time.Millisecond, "how long a batch waits to fill (producer linger)")
}

// Validate checks that the run is bounded and well formed.
func (c *Config) Validate() error {
	switch {
	case c.Topic == "":
		return errors.New("--topic is empty")
	case c.RecordSize < 0:
		return fmt.Errorf("--record-size %d is negative", c.RecordSize)
	case c.Partitions < 1:
		return fmt.Errorf("--partitions %d: want at least 1", c.Partitions)
	case c.Buffered < 1:
		return fmt.Errorf("--buffered-records %d: want at least 1", c.Buffered)
	case c.Records < 0 || c.Duration < 0 || c.Linger < 0:
		return errors.New("--records, --duration and --linger must not be negative")
	case c.Records == 0 && c.Duration == 0:
		return errors.New("give --records or --duration: the run must be bounded")
	}
	return nil
}
