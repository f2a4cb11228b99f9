package main

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Java client properties the console tools and perf tests honour
// (from --producer-property, --consumer-property, --producer-props and
// the config files), turned into franz-go options. Security settings are
// read by applyClientProperties; others Kafka's clients know are ignored.

// clientProperties are the flags a tool takes its client's properties
// from: a config file (--command-config of the admin tools,
// --producer.config, --consumer.config) and, for the producing and
// consuming tools, properties given one by one (--producer-property,
// --consumer-property, --producer-props), which win over the file's.
type clientProperties struct {
	file  string
	props stringList
}

// clientPropertyFlags adds the config file flag and, when listFlag is not
// empty, the flag of properties given one by one.
func (t *kafkaTool) clientPropertyFlags(listFlag, listMeta, listUsage, fileFlag, fileMeta, fileUsage string) *clientProperties {
	c := &clientProperties{}
	if listFlag != "" {
		t.list(&c.props, listFlag, listMeta, listUsage)
	}
	t.str(&c.file, fileFlag, fileMeta, fileUsage)
	return c
}

// read merges the properties, applies their security settings and finds
// the bootstrap servers: --bootstrap-server, else fallback's (--broker-list,
// a bootstrap.servers property), else the brokers --zookeeper names. When
// missing is given and neither of the first two names a server, it is the
// usage error.
func (c *clientProperties) read(t *kafkaTool, fallback func(props map[string]string) string, missing string) (props map[string]string, bootstrap string, err error) {
	if props, err = loadClientProperties(c.file); err != nil {
		return nil, "", err
	}
	given, err := propertyMap(c.props)
	if err != nil {
		return nil, "", err
	}
	maps.Copy(props, given)
	bootstrap = t.bootstrap
	if bootstrap == "" && fallback != nil {
		bootstrap = fallback(props)
	}
	if bootstrap == "" && missing != "" {
		return nil, "", t.usage("%s", missing)
	}
	if bootstrap, err = t.bootstrapFrom(props, bootstrap); err != nil {
		return nil, "", err
	}
	return props, bootstrap, nil
}

// brokerList is the fallback of the tools that still take Kafka 0.8's
// --broker-list.
func brokerList(list *string) func(map[string]string) string {
	return func(map[string]string) string { return *list }
}

func propInt(props map[string]string, key string) (int64, bool, error) {
	v, ok := props[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q: want a number", key, v)
	}
	return n, true, nil
}

// producerPropertyOpts maps client.id, linger.ms, batch.size,
// request.timeout.ms, retries, max.request.size and
// enable.idempotence=false.
func producerPropertyOpts(props map[string]string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	for _, m := range []struct {
		key string
		opt func(int64) kgo.Opt
		min int64
	}{
		{"linger.ms", func(n int64) kgo.Opt { return kgo.ProducerLinger(time.Duration(n) * time.Millisecond) }, 0},
		{"batch.size", func(n int64) kgo.Opt { return kgo.ProducerBatchMaxBytes(int32(min(n, 1<<30))) }, 1},
		{"max.request.size", func(n int64) kgo.Opt { return kgo.BrokerMaxWriteBytes(int32(min(max(n, 1<<20), 1<<30))) }, 1},
		{"request.timeout.ms", func(n int64) kgo.Opt { return kgo.ProduceRequestTimeout(time.Duration(n) * time.Millisecond) }, 1},
		{"retries", func(n int64) kgo.Opt { return kgo.RecordRetries(int(min(n, 1<<30))) }, 0},
	} {
		n, ok, err := propInt(props, m.key)
		if err != nil {
			return nil, err
		}
		if ok {
			if n < m.min {
				return nil, fmt.Errorf("%s=%d: below the minimum %d", m.key, n, m.min)
			}
			opts = append(opts, m.opt(n))
		}
	}
	if strings.EqualFold(props["enable.idempotence"], "false") {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts, nil
}

// consumerPropertyOpts maps client.id, isolation.level, fetch.max.bytes
// and max.partition.fetch.bytes; auto.offset.reset is the caller's.
func consumerPropertyOpts(props map[string]string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	switch strings.ToLower(props["isolation.level"]) {
	case "", "read_uncommitted":
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return nil, fmt.Errorf("isolation.level=%q: want read_committed or read_uncommitted", props["isolation.level"])
	}
	for _, m := range []struct {
		key string
		opt func(int32) kgo.Opt
	}{
		{"fetch.max.bytes", func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) }},
		{"max.partition.fetch.bytes", func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) }},
	} {
		n, ok, err := propInt(props, m.key)
		if err != nil {
			return nil, err
		}
		if ok {
			if n < 1 {
				return nil, fmt.Errorf("%s=%d: want a positive number", m.key, n)
			}
			opts = append(opts, m.opt(int32(min(n, 1<<30))))
		}
	}
	return opts, nil
}
