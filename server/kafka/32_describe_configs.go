package kafka

// DescribeConfigs (key 32), versions 0–4 (v0 answers IsDefault, not the source).
//
// Topic resources list every topic config Kafka 3.9 defines (and
// confluent.value.schema.validation), or those named in ConfigNames: an
// override has source DYNAMIC_TOPIC_CONFIG, a value the broker's settings
// give (log.retention.ms, message.max.bytes, …) STATIC_BROKER_CONFIG, and
// anything else Kafka's default with DEFAULT_CONFIG and IsDefault.
// The broker resource (name "" or this broker's id) lists the broker's
// settings with source STATIC_BROKER_CONFIG, read-only, but for the
// dynamic ones (KIP-226: the replication throttle rates, the log defaults
// log.retention.*, log.segment.bytes, log.roll.*, and log.cleaner.threads),
// which show DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG where
// set for this broker or for every broker. Synonyms, when asked for, list a topic config's
// override, the broker setting by its broker key (log.retention.ms, …) and
// the default, most specific first, as Kafka does; a broker config's
// synonym is the entry itself. Documentation is not provided (null). Other resource types
// (broker loggers, client metrics, groups) are INVALID_REQUEST.
//
// ACLs: DESCRIBE_CONFIGS on the topic, or on the cluster for a broker.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
)

func (s *Server) handleDescribeConfigs(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		if code := s.configDenied(ctx, auth.OpDescribeConfigs, r.ResourceType, r.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		entries, code, err := s.configEntries(r.ResourceType, r.ResourceName)
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = code, errorMessage(err)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		for _, e := range entries {
			if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, e.Name) {
				continue
			}
			rr.Configs = append(rr.Configs, describedConfig(e, req.IncludeSynonyms))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// configEntry is one config as described.
type configEntry struct {
	Name, Value string
	Source      kmsg.ConfigSource
	ReadOnly    bool
	Type        kmsg.ConfigType
	// Synonyms of a topic config; nil: the entry is its own synonym.
	Synonyms []server.ConfigSynonym
}

func describedConfig(e configEntry, synonyms bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	value := e.Value
	c.Name, c.Value, c.Source, c.ReadOnly, c.ConfigType = e.Name, &value, e.Source, e.ReadOnly, e.Type
	c.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	if !synonyms {
		return c
	}
	if e.Synonyms == nil {
		e.Synonyms = []server.ConfigSynonym{{Name: e.Name, Value: e.Value}}
	}
	for _, s := range e.Synonyms {
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name, syn.Value, syn.Source = s.Name, &s.Value, configSource(s.Source)
		if s.Source == "" {
			syn.Source = e.Source
		}
		c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
	}
	return c
}

func (s *Server) configEntries(typ kmsg.ConfigResourceType, name string) ([]configEntry, int16, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		info, err := s.broker.DescribeTopic(name)
		if err != nil {
			return nil, errorCode(err), err
		}
		out := make([]configEntry, 0, len(info.Configs))
		for _, c := range info.Configs {
			out = append(out, configEntry{Name: c.Name, Value: c.Value, Source: configSource(c.Source),
				Type: configType(c.Type), Synonyms: c.Synonyms})
		}
		return out, 0, nil
	case kmsg.ConfigResourceTypeBroker:
		if err := s.checkBrokerResource(name); err != nil {
			return nil, codeInvalidRequest, err
		}
		entries, err := s.brokerConfigs()
		if err != nil {
			return nil, errorCode(err), err
		}
		return entries, 0, nil
	}
	return nil, codeInvalidRequest, fmt.Errorf("resource type %d is not supported; ferry describes topics (2) and the broker (4)", typ)
}

func (s *Server) checkBrokerResource(name string) error {
	if name != "" && name != strconv.Itoa(int(s.broker.BrokerID())) {
		return fmt.Errorf("broker %q: this is broker %d", name, s.broker.BrokerID())
	}
	return nil
}

func configType(t server.ConfigType) kmsg.ConfigType {
	switch t {
	case server.TypeBoolean:
		return kmsg.ConfigTypeBoolean
	case server.TypeString:
		return kmsg.ConfigTypeString
	case server.TypeInt:
		return kmsg.ConfigTypeInt
	case server.TypeDouble:
		return kmsg.ConfigTypeDouble
	case server.TypeList:
		return kmsg.ConfigTypeList
	}
	return kmsg.ConfigTypeLong
}

// brokerConfigs are the broker settings, as Kafka names them: the static
// ones read-only, then the dynamic ones (the replication throttle rates)
// from this broker's or every broker's override, or their default.
func (s *Server) brokerConfigs() ([]configEntry, error) {
	c := s.broker.Config()
	ms := func(d time.Duration) string {
		if d < 0 {
			return "-1"
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	tsType := "CreateTime"
	if c.LogAppendTime {
		tsType = "LogAppendTime"
	}
	entry := func(name, value string, typ kmsg.ConfigType) configEntry {
		return configEntry{Name: name, Value: value, Source: kmsg.ConfigSourceStaticBrokerConfig, ReadOnly: true, Type: typ}
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	dynamic, err := s.broker.DynamicBrokerConfigs()
	if err != nil {
		return nil, err
	}
	set := map[string]server.DynamicBrokerConfig{}
	for _, d := range dynamic {
		set[d.Name] = d
	}
	rate := func(name string) configEntry {
		e := configEntry{Name: name, Value: i64(math.MaxInt64), Source: kmsg.ConfigSourceDefaultConfig, Type: kmsg.ConfigTypeLong}
		if d, ok := set[name]; ok {
			e.Value, e.Source = d.Value, kmsg.ConfigSourceDynamicBrokerConfig
			if d.Default {
				e.Source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
			}
		}
		return e
	}
	entries := []configEntry{
		entry("advertised.listeners", s.listenerList(true), kmsg.ConfigTypeString),
		entry("auto.create.topics.enable", strconv.FormatBool(c.AutoCreateTopics), kmsg.ConfigTypeBoolean),
		entry("broker.id", i64(int64(c.BrokerID)), kmsg.ConfigTypeInt),
		entry("connections.max.idle.ms", ms(s.cfg.IdleTimeout), kmsg.ConfigTypeLong),
		entry("default.replication.factor", i64(int64(c.DefaultReplicationFactor)), kmsg.ConfigTypeInt),
		rate(server.CfgFollowerThrottledRate),
		rate(server.CfgLeaderThrottledRate),
		entry("listeners", s.listenerList(false), kmsg.ConfigTypeString),
		entry("log.dirs", c.DataDir, kmsg.ConfigTypeString),
		entry("log.flush.interval.messages", i64(c.Log.FlushMessages), kmsg.ConfigTypeLong),
		entry("log.flush.interval.ms", ms(c.Log.FlushInterval), kmsg.ConfigTypeLong),
		entry("log.flush.scheduler.interval.ms", ms(c.FlushCheckInterval), kmsg.ConfigTypeLong),
		entry("log.index.interval.bytes", i64(int64(c.Log.IndexIntervalBytes)), kmsg.ConfigTypeInt),
		entry("log.message.timestamp.type", tsType, kmsg.ConfigTypeString),
		entry("log.retention.bytes", i64(c.Log.RetentionBytes), kmsg.ConfigTypeLong),
		entry("log.retention.check.interval.ms", ms(c.RetentionCheckInterval), kmsg.ConfigTypeLong),
		entry("log.retention.ms", ms(c.Log.RetentionTime), kmsg.ConfigTypeLong),
		entry("log.roll.ms", ms(c.Log.SegmentMaxAge), kmsg.ConfigTypeLong),
		entry("log.segment.bytes", i64(c.Log.SegmentBytes), kmsg.ConfigTypeInt),
		entry("message.max.bytes", i64(int64(c.MessageMaxBytes)), kmsg.ConfigTypeInt),
		entry("min.insync.replicas", i64(int64(c.MinInsyncReplicas)), kmsg.ConfigTypeInt),
		entry("num.partitions", i64(int64(c.NumPartitions)), kmsg.ConfigTypeInt),
		entry("producer.id.expiration.ms", ms(c.ProducerIDExpiration), kmsg.ConfigTypeInt),
		entry("socket.request.max.bytes", i64(int64(s.cfg.MaxRequestBytes)), kmsg.ConfigTypeInt),
		entry(server.CfgLogCleanerThreads, i64(int64(c.Cleaner.Threads)), kmsg.ConfigTypeInt),
	}
	// The log defaults and cleaner threads change at run time: their
	// dynamic values, where set, replace server.properties'.
	for i, e := range entries {
		if d, ok := set[e.Name]; ok && e.Source == kmsg.ConfigSourceStaticBrokerConfig {
			entries[i].Value, entries[i].Source, entries[i].ReadOnly = d.Value, kmsg.ConfigSourceDynamicBrokerConfig, false
			if d.Default {
				entries[i].Source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
			}
		}
	}
	// Dynamic configs without a static entry above (log.retention.hours,
	// the cleaner's compaction defaults, …) show where set.
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.Name] = true
	}
	for name := range set {
		if !listed[name] {
			e := rate(name)
			if name == server.CfgCleanerMinCleanRatio {
				e.Type = kmsg.ConfigTypeDouble
			}
			entries = append(entries, e)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries, nil
}

// configDenied is the ACL check of the config APIs: op on the topic
// (TOPIC_AUTHORIZATION_FAILED), or on the cluster for a broker's or its
// loggers' configs (CLUSTER_AUTHORIZATION_FAILED).
func (s *Server) configDenied(ctx context.Context, op auth.Operation, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !s.authorizedTopic(ctx, op, name) {
			return codeTopicAuthFailed
		}
	default:
		if !s.authorizedCluster(ctx, op) {
			return codeClusterAuthFailed
		}
	}
	return 0
}
