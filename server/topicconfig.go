package server

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

// Topic config keys ferry understands, with Kafka's names and meanings.
const (
	CfgRetentionMs        = "retention.ms"
	CfgRetentionBytes     = "retention.bytes"
	CfgSegmentBytes       = "segment.bytes"
	CfgSegmentMs          = "segment.ms"
	CfgMaxMessageBytes    = "max.message.bytes"
	CfgCleanupPolicy      = "cleanup.policy"
	CfgFlushMessages      = "flush.messages"
	CfgFlushMs            = "flush.ms"
	CfgTimestampType      = "message.timestamp.type"
	CfgMinInsyncReplicas  = "min.insync.replicas"
	CfgIndexIntervalBytes = "index.interval.bytes"
)

// topicConfigCheck validates one value; every known key has one.
var topicConfigCheck = map[string]func(string) error{
	CfgRetentionMs:           intAtLeast(-1),
	CfgRetentionBytes:        intAtLeast(-1),
	CfgSegmentBytes:          intBetween(1024, math.MaxInt32),
	CfgSegmentMs:             intAtLeast(1),
	CfgMaxMessageBytes:       intAtLeast(0),
	CfgFlushMessages:         intAtLeast(1),
	CfgFlushMs:               intAtLeast(0),
	CfgMinInsyncReplicas:     intAtLeast(1),
	CfgIndexIntervalBytes:    intAtLeast(0),
	CfgCleanupPolicy:         oneOf("delete", "compact", "compact,delete", "delete,compact"),
	CfgValueSchemaValidation: oneOf("true", "false"),
	CfgTimestampType:         oneOf("CreateTime", "LogAppendTime"),
}

// TopicConfigKeys lists the topic configs ferry accepts, sorted.
func TopicConfigKeys() []string {
	keys := make([]string, 0, len(topicConfigCheck))
	for k := range topicConfigCheck {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func intAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < min {
			return fmt.Errorf("%d is below the minimum %d", n, min)
		}
		return nil
	}
}

func intBetween(min, max int64) func(string) error {
	atLeast := intAtLeast(min)
	return func(v string) error {
		if err := atLeast(v); err != nil {
			return err
		}
		if n, _ := strconv.ParseInt(v, 10, 64); n > max {
			return fmt.Errorf("%d is above the maximum %d", n, max)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %v", v, allowed)
	}
}

// validateTopicConfigs rejects unknown keys and bad values, as Kafka's
// CreateTopics does with INVALID_CONFIG.
func validateTopicConfigs(cfgs map[string]string) error {
	for k, v := range cfgs {
		check, ok := topicConfigCheck[k]
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, k)
		}
		if err := check(v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, k, err)
		}
	}
	return nil
}

// topicSettings is what a topic's configs mean for its partitions, resolved
// against the broker defaults once per config change, not per request.
type topicSettings struct {
	log             storage.Config
	maxMessageBytes int
	logAppendTime   bool
	// syncAppends acknowledges only after fsync (flush.messages=1).
	syncAppends bool
	// validateValues: every value must be Confluent wire format with a
	// schema of <topic>-value and decode with it.
	validateValues bool
}

func (b *Broker) resolveSettings(cfgs map[string]string) topicSettings {
	s := topicSettings{
		log:             b.cfg.Log,
		maxMessageBytes: b.cfg.MessageMaxBytes,
		logAppendTime:   b.cfg.LogAppendTime,
	}
	num := func(k string) (int64, bool) {
		v, ok := cfgs[k]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	if n, ok := num(CfgRetentionMs); ok {
		s.log.RetentionTime = msDuration(n)
	}
	if n, ok := num(CfgRetentionBytes); ok {
		s.log.RetentionBytes = n
	}
	if n, ok := num(CfgSegmentBytes); ok {
		s.log.SegmentBytes = n
	}
	if n, ok := num(CfgSegmentMs); ok {
		s.log.SegmentMaxAge = msDuration(n)
	}
	if n, ok := num(CfgMaxMessageBytes); ok {
		s.maxMessageBytes = int(n)
	}
	if n, ok := num(CfgFlushMessages); ok {
		s.log.FlushMessages = n
	}
	if n, ok := num(CfgFlushMs); ok {
		s.log.FlushInterval = msDuration(n)
	}
	if n, ok := num(CfgIndexIntervalBytes); ok && n > 0 {
		s.log.IndexIntervalBytes = int(n)
	}
	if v, ok := cfgs[CfgTimestampType]; ok {
		s.logAppendTime = v == "LogAppendTime"
	}
	if p, ok := cfgs[CfgCleanupPolicy]; ok && p == "compact" {
		// Compaction is not implemented yet; a compact-only topic must not
		// lose keys to time or size retention meanwhile.
		s.log.RetentionTime = -1
		s.log.RetentionBytes = -1
	}
	s.syncAppends = s.log.FlushMessages == 1
	s.validateValues = cfgs[CfgValueSchemaValidation] == "true"
	s.log.MaxBatchBytes = s.maxMessageBytes
	return s
}

// msDuration turns a Kafka millisecond setting into a Duration; negative
// values keep their "unlimited" meaning.
func msDuration(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64 // Kafka writes "never" as Long.MAX_VALUE ms
	}
	return time.Duration(ms) * time.Millisecond
}

// ConfigEntry is one topic config as described to users: the topic's own
// override, or the broker default (IsDefault).
type ConfigEntry struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	IsDefault bool   `json:"is_default"`
}

func (b *Broker) describeConfigs(cfgs map[string]string) []ConfigEntry {
	def := b.resolveSettings(nil)
	defaults := map[string]string{
		CfgRetentionMs:           strconv.FormatInt(durationMs(def.log.RetentionTime), 10),
		CfgRetentionBytes:        strconv.FormatInt(def.log.RetentionBytes, 10),
		CfgSegmentBytes:          strconv.FormatInt(def.log.SegmentBytes, 10),
		CfgSegmentMs:             strconv.FormatInt(durationMs(def.log.SegmentMaxAge), 10),
		CfgMaxMessageBytes:       strconv.Itoa(def.maxMessageBytes),
		CfgCleanupPolicy:         "delete",
		CfgFlushMessages:         strconv.FormatInt(flushMessagesDefault(def.log.FlushMessages), 10),
		CfgFlushMs:               strconv.FormatInt(flushMsShown(def.log.FlushInterval), 10),
		CfgTimestampType:         map[bool]string{false: "CreateTime", true: "LogAppendTime"}[def.logAppendTime],
		CfgMinInsyncReplicas:     "1",
		CfgIndexIntervalBytes:    strconv.Itoa(def.log.IndexIntervalBytes),
		CfgValueSchemaValidation: "false",
	}
	out := make([]ConfigEntry, 0, len(defaults))
	for _, k := range TopicConfigKeys() {
		if v, ok := cfgs[k]; ok {
			out = append(out, ConfigEntry{Name: k, Value: v})
			continue
		}
		out = append(out, ConfigEntry{Name: k, Value: defaults[k], IsDefault: true})
	}
	return out
}

func durationMs(d time.Duration) int64 {
	switch {
	case d < 0:
		return -1
	case d == math.MaxInt64:
		return math.MaxInt64
	}
	return d.Milliseconds()
}

// flushMsShown is how flush.ms reads: 0 in ferry means "never by time",
// which Kafka spells Long.MAX_VALUE.
func flushMsShown(d time.Duration) int64 {
	if d <= 0 {
		return math.MaxInt64
	}
	return durationMs(d)
}

func flushMessagesDefault(n int64) int64 {
	if n <= 0 {
		return math.MaxInt64 // Kafka's "never by count"
	}
	return n
}
