package server

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/replication/isr"
	"github.com/ferry-mq/ferry/replication/throttle"
	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
)

// Topic config keys ferry's code refers to, with Kafka's names and meanings.
// Every key Kafka 3.9 defines (LogConfig) is accepted: see topicConfigDefs.
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
	CfgCompressionType    = "compression.type"
	CfgTimestampBeforeMax = "message.timestamp.before.max.ms"
	CfgTimestampAfterMax  = "message.timestamp.after.max.ms"
	CfgTimestampDiffMax   = "message.timestamp.difference.max.ms"

	CfgLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	CfgFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ConfigType is a config's type as Kafka's DescribeConfigs names it.
type ConfigType string

// The types of topic configs.
const (
	TypeBoolean ConfigType = "BOOLEAN"
	TypeString  ConfigType = "STRING"
	TypeInt     ConfigType = "INT"
	TypeLong    ConfigType = "LONG"
	TypeDouble  ConfigType = "DOUBLE"
	TypeList    ConfigType = "LIST"
)

// Config sources, as Kafka's DescribeConfigs names them.
const (
	SourceTopic   = "DYNAMIC_TOPIC_CONFIG"
	SourceBroker  = "STATIC_BROKER_CONFIG"
	SourceDefault = "DEFAULT_CONFIG"
	// SourceDynamicBroker and SourceDynamicDefaultBroker are a broker
	// setting changed at run time for this broker or for every broker
	// (dynamicconfigs.go).
	SourceDynamicBroker        = "DYNAMIC_BROKER_CONFIG"
	SourceDynamicDefaultBroker = "DYNAMIC_DEFAULT_BROKER_CONFIG"
)

// topicConfigDef is one topic config: Kafka's type, default and validator.
type topicConfigDef struct {
	typ   ConfigType
	def   string
	check func(string) error
}

const maxLong = "9223372036854775807"

// topicConfigDefs holds every topic config of Kafka 3.9's LogConfig (and
// ferry's schema-validation switch), with Kafka's defaults and ranges.
// Deviation: segment.bytes starts at 1024 (Kafka: 14), below which ferry's
// segments cannot hold a batch header and its index entries usefully.
var topicConfigDefs = map[string]topicConfigDef{
	CfgCleanupPolicy:                 {TypeList, "delete", cleanupPolicy},
	CfgCompressionType:               {TypeString, "producer", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	"compression.gzip.level":         {TypeInt, "-1", gzipLevel},
	"compression.lz4.level":          {TypeInt, "9", intBetween(1, 17)},
	"compression.zstd.level":         {TypeInt, "3", intBetween(-131072, 22)},
	"delete.retention.ms":            {TypeLong, "86400000", longAtLeast(0)},
	"file.delete.delay.ms":           {TypeLong, "60000", longAtLeast(0)},
	CfgFlushMessages:                 {TypeLong, maxLong, longAtLeast(1)},
	CfgFlushMs:                       {TypeLong, maxLong, longAtLeast(0)},
	CfgFollowerThrottledReplicas:     {TypeList, "", throttledReplicas},
	CfgIndexIntervalBytes:            {TypeInt, "4096", intBetween(0, math.MaxInt32)},
	CfgLeaderThrottledReplicas:       {TypeList, "", throttledReplicas},
	"local.retention.bytes":          {TypeLong, "-2", longAtLeast(-2)},
	"local.retention.ms":             {TypeLong, "-2", longAtLeast(-2)},
	"max.compaction.lag.ms":          {TypeLong, maxLong, longAtLeast(1)},
	CfgMaxMessageBytes:               {TypeInt, "1048588", intBetween(0, math.MaxInt32)},
	"message.downconversion.enable":  {TypeBoolean, "true", boolean},
	"message.format.version":         {TypeString, "3.0-IV1", messageFormatVersion},
	CfgTimestampAfterMax:             {TypeLong, maxLong, longAtLeast(0)},
	CfgTimestampBeforeMax:            {TypeLong, maxLong, longAtLeast(0)},
	CfgTimestampDiffMax:              {TypeLong, maxLong, longAtLeast(0)},
	CfgTimestampType:                 {TypeString, "CreateTime", oneOf("CreateTime", "LogAppendTime")},
	"min.cleanable.dirty.ratio":      {TypeDouble, "0.5", doubleBetween(0, 1)},
	"min.compaction.lag.ms":          {TypeLong, "0", longAtLeast(0)},
	CfgMinInsyncReplicas:             {TypeInt, "1", intBetween(1, math.MaxInt32)},
	"preallocate":                    {TypeBoolean, "false", boolean},
	"remote.log.copy.disable":        {TypeBoolean, "false", boolean},
	"remote.log.delete.on.disable":   {TypeBoolean, "false", boolean},
	"remote.storage.enable":          {TypeBoolean, "false", boolean},
	CfgRetentionBytes:                {TypeLong, "-1", longAtLeast(math.MinInt64)},
	CfgRetentionMs:                   {TypeLong, "604800000", longAtLeast(-1)},
	CfgSegmentBytes:                  {TypeInt, "1073741824", intBetween(1024, math.MaxInt32)},
	"segment.index.bytes":            {TypeInt, "10485760", intBetween(4, math.MaxInt32)},
	"segment.jitter.ms":              {TypeLong, "0", longAtLeast(0)},
	CfgSegmentMs:                     {TypeLong, "604800000", longAtLeast(1)},
	"unclean.leader.election.enable": {TypeBoolean, "false", boolean},
	CfgValueSchemaValidation:         {TypeBoolean, "false", oneOf("true", "false")},
	CfgKeySchemaValidation:           {TypeBoolean, "false", oneOf("true", "false")},
}

// TopicConfigKeys lists the topic configs ferry accepts, sorted.
func TopicConfigKeys() []string {
	keys := make([]string, 0, len(topicConfigDefs))
	for k := range topicConfigDefs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TopicConfigType is a known topic config's type ("" for unknown keys).
func TopicConfigType(name string) ConfigType { return topicConfigDefs[name].typ }

func parseLong(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a long", v)
	}
	return n, nil
}

func longAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := parseLong(v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("%d is below the minimum %d", n, min)
		}
		return nil
	}
}

func intBetween(min, max int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not a 32-bit integer", v)
		}
		if n < min || n > max {
			return fmt.Errorf("%d is not in [%d, %d]", n, min, max)
		}
		return nil
	}
}

func doubleBetween(min, max float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("%q is not a number", v)
		}
		if f < min || f > max {
			return fmt.Errorf("%v is not in [%v, %v]", f, min, max)
		}
		return nil
	}
}

func boolean(v string) error {
	if t := strings.TrimSpace(v); strings.EqualFold(t, "true") || strings.EqualFold(t, "false") {
		return nil
	}
	return fmt.Errorf("%q is not true or false", v)
}

func gzipLevel(v string) error {
	if err := intBetween(-1, 9)(v); err != nil {
		return err
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(v)); n == 0 {
		return fmt.Errorf("0 is not a gzip level; use -1 (default) or 1..9")
	}
	return nil
}

var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?$`)

func messageFormatVersion(v string) error {
	if !versionPattern.MatchString(strings.TrimSpace(v)) {
		return fmt.Errorf("%q is not a version such as 3.0-IV1 or 2.8", v)
	}
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(allowed, v) {
			return nil
		}
		return fmt.Errorf("%q is not one of %v", v, allowed)
	}
}

// splitList reads a Kafka LIST value: comma-separated, items trimmed,
// empty for "".
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

func cleanupPolicy(v string) error {
	for _, p := range splitList(v) {
		if p != "delete" && p != "compact" {
			return fmt.Errorf("%q is not delete or compact", p)
		}
	}
	return nil
}

// throttledReplicas is Kafka's ThrottledReplicaListValidator: "*" or
// partition:broker pairs.
func throttledReplicas(v string) error {
	_, err := throttle.ParseReplicas(v)
	return err
}

// validateTopicConfigs rejects unknown keys and bad values, as Kafka's
// CreateTopics does with INVALID_CONFIG.
func validateTopicConfigs(cfgs map[string]string) error {
	for k, v := range cfgs {
		def, ok := topicConfigDefs[k]
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, k)
		}
		if err := def.check(v); err != nil {
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
	// validateKeys: the same for keys, with <topic>-key.
	validateKeys bool
	// compact: cleanup.policy holds compact, so every record needs a key.
	compact bool
	// recompress: compression.type names a codec (or uncompressed), and
	// the broker stores every batch with codec, as Kafka does.
	recompress bool
	codec      records.Codec
	level      int // compression.<codec>.level; 0: the codec's default
	// noDownConversion: message.downconversion.enable=false, so fetches
	// at versions that need an older message format get UNSUPPORTED_VERSION.
	noDownConversion bool
	// tsBeforeMs and tsAfterMs bound CreateTime timestamps around the
	// broker's clock (math.MaxInt64: unbounded).
	tsBeforeMs, tsAfterMs int64
	// minISR is min.insync.replicas: an acks=all produce needs that many
	// in-sync replicas.
	minISR int
	// leaderThrottled and followerThrottled are the throttled-replica
	// lists: the replicas whose copying the broker throttles as a leader
	// serving them, and as a follower fetching them.
	leaderThrottled, followerThrottled throttle.Replicas
}

// replication is the partition leader's settings from the topic's.
func (s *topicSettings) replication(lagTimeMax time.Duration) isr.Config {
	return isr.Config{MinInsyncReplicas: s.minISR, ReplicaLagTimeMax: lagTimeMax}
}

// checkRecords reports whether produced records need a per-record check.
func (s *topicSettings) checkRecords() bool {
	return s.compact || !s.logAppendTime && (s.tsBeforeMs != math.MaxInt64 || s.tsAfterMs != math.MaxInt64)
}

func (b *Broker) resolveSettings(cfgs map[string]string) topicSettings {
	s := topicSettings{
		log:             b.logDefaults(),
		maxMessageBytes: b.cfg.MessageMaxBytes,
		logAppendTime:   b.cfg.LogAppendTime,
		minISR:          b.minISRDefault(),
	}
	num := func(k string) (int64, bool) {
		v, ok := cfgs[k]
		if !ok {
			return 0, false
		}
		n, err := parseLong(v)
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
	if p, ok := cfgs[CfgCleanupPolicy]; ok {
		policy := splitList(p)
		s.compact = slices.Contains(policy, "compact")
		if !slices.Contains(policy, "delete") {
			// Only compact: the cleaner removes what is superseded, and
			// time or size retention deletes nothing (compact,delete has both).
			s.log.RetentionTime = -1
			s.log.RetentionBytes = -1
		}
	}
	s.log.Compaction = b.compaction(s.compact, cfgs)
	if mx := s.log.Compaction.MaxLag; s.compact && mx > 0 && (s.log.SegmentMaxAge == 0 || mx < s.log.SegmentMaxAge) {
		// KIP-354: the active segment, which is never cleaned, rolls
		// within max.compaction.lag.ms too.
		s.log.SegmentMaxAge = mx
	}
	s.recompress, s.codec = brokerCodec(cfgs[CfgCompressionType])
	if n, ok := num("compression." + s.codec.String() + ".level"); ok && n != -1 {
		s.level = int(n)
	}
	s.tsBeforeMs, s.tsAfterMs = timestampBounds(num)
	if n, ok := num(CfgMinInsyncReplicas); ok && n > 0 {
		s.minISR = int(min(n, math.MaxInt32))
	}
	s.noDownConversion = strings.EqualFold(strings.TrimSpace(cfgs["message.downconversion.enable"]), "false")
	s.syncAppends = s.log.FlushMessages == 1
	s.validateValues = cfgs[CfgValueSchemaValidation] == "true"
	s.validateKeys = cfgs[CfgKeySchemaValidation] == "true"
	s.log.MaxBatchBytes = s.maxMessageBytes
	// validateTopicConfigs has checked them; a value stored by an older
	// writer that does not parse throttles nothing.
	s.leaderThrottled, _ = throttle.ParseReplicas(cfgs[CfgLeaderThrottledReplicas])
	s.followerThrottled, _ = throttle.ParseReplicas(cfgs[CfgFollowerThrottledReplicas])
	return s
}

// brokerCodec reads compression.type: producer (or unset) keeps what the
// producer sent.
func brokerCodec(v string) (bool, records.Codec) {
	switch v {
	case "uncompressed":
		return true, records.None
	case "gzip":
		return true, records.Gzip
	case "snappy":
		return true, records.Snappy
	case "lz4":
		return true, records.LZ4
	case "zstd":
		return true, records.Zstd
	}
	return false, records.None
}

// timestampBounds: before/after.max.ms, falling back to the deprecated
// difference.max.ms for a bound not set, as Kafka 3.6+ does.
func timestampBounds(num func(string) (int64, bool)) (before, after int64) {
	before, after = math.MaxInt64, math.MaxInt64
	if d, ok := num(CfgTimestampDiffMax); ok {
		before, after = d, d
	}
	if n, ok := num(CfgTimestampBeforeMax); ok {
		before = n
	}
	if n, ok := num(CfgTimestampAfterMax); ok {
		after = n
	}
	return before, after
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
// override (source DYNAMIC_TOPIC_CONFIG), the broker's setting
// (STATIC_BROKER_CONFIG) or Kafka's default (DEFAULT_CONFIG). IsDefault is
// true for anything that is not a topic override.
type ConfigEntry struct {
	Name      string     `json:"name"`
	Value     string     `json:"value"`
	IsDefault bool       `json:"is_default"`
	Source    string     `json:"source"`
	Type      ConfigType `json:"-"`
	// Synonyms are where the value could come from, most specific first,
	// as Kafka's DescribeConfigs synonyms: the override, the broker
	// setting (by its broker key), Kafka's default.
	Synonyms []ConfigSynonym `json:"-"`
}

// ConfigSynonym is one source of a config's value.
type ConfigSynonym struct {
	Name, Value, Source string
}

// brokerKeys name the broker settings that give topic configs their
// values, as Kafka's LogConfig synonyms.
var brokerKeys = map[string]string{
	CfgRetentionMs:        "log.retention.ms",
	CfgRetentionBytes:     "log.retention.bytes",
	CfgSegmentBytes:       "log.segment.bytes",
	CfgSegmentMs:          "log.roll.ms",
	CfgMaxMessageBytes:    "message.max.bytes",
	CfgFlushMessages:      "log.flush.interval.messages",
	CfgFlushMs:            "log.flush.interval.ms",
	CfgIndexIntervalBytes: "log.index.interval.bytes",
	CfgTimestampType:      "log.message.timestamp.type",
	CfgMinInsyncReplicas:  "min.insync.replicas",
}

// brokerTopicValues are the topic configs the broker's own settings give a
// value, as Kafka would show them.
func (b *Broker) brokerTopicValues() map[string]string {
	def := b.resolveSettings(nil)
	return map[string]string{
		CfgRetentionMs:        strconv.FormatInt(durationMs(def.log.RetentionTime), 10),
		CfgRetentionBytes:     strconv.FormatInt(def.log.RetentionBytes, 10),
		CfgSegmentBytes:       strconv.FormatInt(def.log.SegmentBytes, 10),
		CfgSegmentMs:          strconv.FormatInt(durationMs(def.log.SegmentMaxAge), 10),
		CfgMaxMessageBytes:    strconv.Itoa(def.maxMessageBytes),
		CfgFlushMessages:      strconv.FormatInt(flushMessagesDefault(def.log.FlushMessages), 10),
		CfgFlushMs:            strconv.FormatInt(flushMsShown(def.log.FlushInterval), 10),
		CfgTimestampType:      map[bool]string{false: "CreateTime", true: "LogAppendTime"}[def.logAppendTime],
		CfgIndexIntervalBytes: strconv.Itoa(def.log.IndexIntervalBytes),
		CfgMinInsyncReplicas:  strconv.Itoa(def.minISR),
	}
}

func (b *Broker) describeConfigs(cfgs map[string]string) []ConfigEntry {
	broker := b.brokerTopicValues()
	dynamic := b.dynamicLogSources()
	keys := TopicConfigKeys()
	out := make([]ConfigEntry, 0, len(keys))
	for _, k := range keys {
		def := topicConfigDefs[k]
		e := ConfigEntry{Name: k, Type: def.typ}
		if v, ok := cfgs[k]; ok {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{k, v, SourceTopic})
		}
		key, hasKey := brokerKeys[k]
		if v, ok := broker[k]; ok && dynamic[key] != "" {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{key, v, dynamic[key]})
		} else if ok && v != def.def {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{key, v, SourceBroker})
		}
		if !hasKey {
			key = k
		}
		e.Synonyms = append(e.Synonyms, ConfigSynonym{key, def.def, SourceDefault})
		e.Value, e.Source = e.Synonyms[0].Value, e.Synonyms[0].Source
		e.IsDefault = e.Source != SourceTopic
		out = append(out, e)
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

// compaction resolves a topic's compaction settings over the broker's
// log.cleaner.* defaults.
func (b *Broker) compaction(enabled bool, cfgs map[string]string) storage.Compaction {
	cc := b.cleanerDefaults()
	c := storage.Compaction{Enabled: enabled, MinCleanableRatio: cc.MinCleanableRatio,
		MinLag: cc.MinCompactionLag, MaxLag: cc.MaxCompactionLag, DeleteRetention: cc.DeleteRetention}
	ms := func(k string, dst *time.Duration) {
		if n, err := parseLong(cfgs[k]); err == nil && n >= 0 {
			*dst = msDuration(n)
		}
	}
	ms("min.compaction.lag.ms", &c.MinLag)
	ms("delete.retention.ms", &c.DeleteRetention)
	if n, err := parseLong(cfgs["max.compaction.lag.ms"]); err == nil && n > 0 {
		c.MaxLag = msDuration(n)
		if n == math.MaxInt64 {
			c.MaxLag = 0 // Kafka's default: never forced
		}
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(cfgs["min.cleanable.dirty.ratio"]), 64); err == nil && f >= 0 && f <= 1 {
		c.MinCleanableRatio = f
	}
	return c
}
