package server

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseProperties reads a Java-style .properties file (Kafka's
// server.properties): key=value or key: value lines, # and ! comments,
// backslash line continuations. Later keys win.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pending strings.Builder
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		pending.WriteString(line)
		full := pending.String()
		pending.Reset()
		i := strings.IndexAny(full, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: %q is not key=value", lineNo, full)
		}
		props[strings.TrimSpace(full[:i])] = strings.TrimSpace(full[i+1:])
	}
	return props, sc.Err()
}

// propertySetters are the broker keys of server.properties ferry honours.
var propertySetters = map[string]func(*Config, string) error{
	"broker.id":                         func(c *Config, v string) error { return setInt32(&c.BrokerID, v) },
	"log.dirs":                          setDataDir,
	"log.dir":                           setDataDir,
	"num.partitions":                    func(c *Config, v string) error { return setInt32(&c.NumPartitions, v) },
	"default.replication.factor":        func(c *Config, v string) error { return setInt16(&c.DefaultReplicationFactor, v) },
	"min.insync.replicas":               func(c *Config, v string) error { return setInt(&c.MinInsyncReplicas, v) },
	"replica.lag.time.max.ms":           func(c *Config, v string) error { return setDuration(&c.ReplicaLagTimeMax, v, time.Millisecond) },
	"replica.fetch.wait.max.ms":         func(c *Config, v string) error { return setDuration(&c.ReplicaFetchWaitMax, v, time.Millisecond) },
	"auto.create.topics.enable":         func(c *Config, v string) error { return setBool(&c.AutoCreateTopics, v) },
	"message.max.bytes":                 func(c *Config, v string) error { return setInt(&c.MessageMaxBytes, v) },
	"max.partitions":                    func(c *Config, v string) error { return setInt(&c.MaxPartitions, v) },
	"ferry.log.open.files.max":          func(c *Config, v string) error { return setInt(&c.MaxOpenLogFiles, v) },
	"log.segment.bytes":                 func(c *Config, v string) error { return setInt64(&c.Log.SegmentBytes, v) },
	"log.roll.ms":                       func(c *Config, v string) error { return setDuration(&c.Log.SegmentMaxAge, v, time.Millisecond) },
	"log.roll.hours":                    func(c *Config, v string) error { return setDuration(&c.Log.SegmentMaxAge, v, time.Hour) },
	"log.retention.bytes":               func(c *Config, v string) error { return setInt64(&c.Log.RetentionBytes, v) },
	"log.retention.check.interval.ms":   func(c *Config, v string) error { return setDuration(&c.RetentionCheckInterval, v, time.Millisecond) },
	"log.flush.interval.messages":       func(c *Config, v string) error { return setInt64(&c.Log.FlushMessages, v) },
	"log.flush.interval.ms":             func(c *Config, v string) error { return setDuration(&c.Log.FlushInterval, v, time.Millisecond) },
	"log.flush.scheduler.interval.ms":   func(c *Config, v string) error { return setDuration(&c.FlushCheckInterval, v, time.Millisecond) },
	"log.index.interval.bytes":          func(c *Config, v string) error { return setInt(&c.Log.IndexIntervalBytes, v) },
	"log.failure.probe.interval.ms":     func(c *Config, v string) error { return setDuration(&c.FailedLogProbeInterval, v, time.Millisecond) },
	"log.message.timestamp.type":        setTimestampType,
	"producer.id.expiration.ms":         func(c *Config, v string) error { return setDuration(&c.ProducerIDExpiration, v, time.Millisecond) },
	"log.retention.ms":                  nil, // resolved together below, as Kafka does
	"log.retention.minutes":             nil,
	"log.retention.hours":               nil,
	"message.timestamp.type":            setTimestampType,
	"log.message.downconversion.enable": nil, // accepted: ferry never down-converts
	"log.cleaner.enable": func(c *Config, v string) error {
		var on bool
		err := setBool(&on, v)
		c.Cleaner.Disabled = !on
		return err
	},
	"log.cleaner.threads":                 func(c *Config, v string) error { return setInt(&c.Cleaner.Threads, v) },
	"log.cleaner.dedupe.buffer.size":      func(c *Config, v string) error { return setInt64(&c.Cleaner.DedupeBufferSize, v) },
	"log.cleaner.io.max.bytes.per.second": func(c *Config, v string) error { return setFloat(&c.Cleaner.IOMaxBytesPerSecond, v) },
	"log.cleaner.backoff.ms":              func(c *Config, v string) error { return setDuration(&c.Cleaner.Backoff, v, time.Millisecond) },
	"log.cleaner.min.cleanable.ratio":     func(c *Config, v string) error { return setFloat(&c.Cleaner.MinCleanableRatio, v) },
	"log.cleaner.delete.retention.ms":     func(c *Config, v string) error { return setDuration(&c.Cleaner.DeleteRetention, v, time.Millisecond) },
	"log.cleaner.min.compaction.lag.ms":   func(c *Config, v string) error { return setDuration(&c.Cleaner.MinCompactionLag, v, time.Millisecond) },
	"log.cleaner.max.compaction.lag.ms":   func(c *Config, v string) error { return setLag(&c.Cleaner.MaxCompactionLag, v) },
}

// setFloat parses a Java double (Kafka's io.max.bytes.per.second default
// is Double.MAX_VALUE, 1.7976931348623157E308).
func setFloat(dst *float64, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return err
	}
	*dst = f
	return nil
}

// setLag parses max.compaction.lag.ms, whose Long.MAX_VALUE default
// means never (0 here).
func setLag(dst *time.Duration, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil:
		return err
	case n < 1:
		return fmt.Errorf("must be at least 1")
	case n > int64(math.MaxInt64/time.Millisecond):
		*dst = 0
	default:
		*dst = time.Duration(n) * time.Millisecond
	}
	return nil
}

// ApplyProperties sets the broker fields named by Kafka keys in props and
// returns the keys it does not know, for the caller to handle or warn about.
func (c *Config) ApplyProperties(props map[string]string) (unknown []string, err error) {
	for k, v := range props {
		set, known := propertySetters[k]
		if !known {
			unknown = append(unknown, k)
			continue
		}
		if set == nil {
			continue
		}
		if err := set(c, v); err != nil {
			return nil, fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	return unknown, c.applyRetentionTime(props)
}

// applyRetentionTime: log.retention.ms wins over .minutes over .hours.
func (c *Config) applyRetentionTime(props map[string]string) error {
	for _, k := range []struct {
		key  string
		unit time.Duration
	}{{"log.retention.ms", time.Millisecond}, {"log.retention.minutes", time.Minute}, {"log.retention.hours", time.Hour}} {
		if v, ok := props[k.key]; ok {
			if err := setDuration(&c.Log.RetentionTime, v, k.unit); err != nil {
				return fmt.Errorf("%s=%s: %w", k.key, v, err)
			}
			return nil
		}
	}
	return nil
}

func setDataDir(c *Config, v string) error {
	dirs := strings.Split(v, ",")
	if strings.TrimSpace(dirs[0]) == "" {
		return fmt.Errorf("empty directory")
	}
	c.DataDir = strings.TrimSpace(dirs[0])
	if len(dirs) > 1 {
		return fmt.Errorf("ferry uses one data directory; got %d", len(dirs))
	}
	return nil
}

func setTimestampType(c *Config, v string) error {
	switch v {
	case "CreateTime":
		c.LogAppendTime = false
	case "LogAppendTime":
		c.LogAppendTime = true
	default:
		return fmt.Errorf("want CreateTime or LogAppendTime")
	}
	return nil
}

func setInt32(dst *int32, v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	*dst = int32(n)
	return err
}

func setInt16(dst *int16, v string) error {
	n, err := strconv.ParseInt(v, 10, 16)
	*dst = int16(n)
	return err
}

func setInt(dst *int, v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	*dst = int(n)
	return err
}

func setInt64(dst *int64, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	*dst = n
	return err
}

func setBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	*dst = b
	return err
}

// setDuration reads an integer count of unit; negative means "unlimited".
func setDuration(dst *time.Duration, v string, unit time.Duration) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return err
	}
	switch {
	case n < 0:
		*dst = -1
	case n > int64(1<<63-1)/int64(unit):
		*dst = 1<<63 - 1
	default:
		*dst = time.Duration(n) * unit
	}
	return nil
}
