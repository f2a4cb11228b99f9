package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// validTopicConfigs holds a valid, non-default value for every topic config
// Kafka 3.9 defines.
var validTopicConfigs = map[string]string{
	"cleanup.policy":                          "compact,delete",
	"compression.type":                        "lz4",
	"compression.gzip.level":                  "6",
	"compression.lz4.level":                   "10",
	"compression.zstd.level":                  "-5",
	"delete.retention.ms":                     "900",
	"file.delete.delay.ms":                    "1000",
	"flush.messages":                          "1000",
	"flush.ms":                                "5000",
	"follower.replication.throttled.replicas": "0:0,1:0",
	"index.interval.bytes":                    "8192",
	"leader.replication.throttled.replicas":   "*",
	"local.retention.bytes":                   "-2",
	"local.retention.ms":                      "3600000",
	"max.compaction.lag.ms":                   "86400000",
	"max.message.bytes":                       "2000000",
	"message.downconversion.enable":           "false",
	"message.format.version":                  "3.0-IV1",
	"message.timestamp.after.max.ms":          "3600000",
	"message.timestamp.before.max.ms":         "86400000",
	"message.timestamp.difference.max.ms":     "86400000",
	"message.timestamp.type":                  "CreateTime",
	"min.cleanable.dirty.ratio":               "0.25",
	"min.compaction.lag.ms":                   "1000",
	"min.insync.replicas":                     "1",
	"preallocate":                             "true",
	"remote.log.copy.disable":                 "false",
	"remote.log.delete.on.disable":            "false",
	"remote.storage.enable":                   "false",
	"retention.bytes":                         "1073741824",
	"retention.ms":                            "86400000",
	"segment.bytes":                           "104857600",
	"segment.index.bytes":                     "1048576",
	"segment.jitter.ms":                       "100",
	"segment.ms":                              "3600000",
	"unclean.leader.election.enable":          "true",
}

var invalidTopicConfigs = map[string]string{
	"cleanup.policy":                        "compact,shred",
	"compression.type":                      "brotli",
	"compression.gzip.level":                "0",
	"compression.lz4.level":                 "18",
	"compression.zstd.level":                "23",
	"delete.retention.ms":                   "-1",
	"flush.messages":                        "0",
	"leader.replication.throttled.replicas": "0-1",
	"local.retention.ms":                    "-3",
	"max.compaction.lag.ms":                 "0",
	"max.message.bytes":                     "3000000000",
	"message.downconversion.enable":         "yes",
	"message.timestamp.type":                "WallClock",
	"min.cleanable.dirty.ratio":             "1.5",
	"min.insync.replicas":                   "0",
	"retention.ms":                          "-2",
	"segment.index.bytes":                   "3",
	"segment.ms":                            "0",
}

func strPtrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

func TestEveryKafkaTopicConfig(t *testing.T) {
	node := harness.Start(t, "--config", writeProps(t, "log.retention.ms=3600000\n"))
	node.WaitKafka()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))

	res, err := adm.CreateTopic(ctx, 1, 1, strPtrs(validTopicConfigs), "every")
	if err != nil || res.Err != nil {
		t.Fatalf("create with every config: %v %v %v", err, res.Err, res.ErrMessage)
	}
	for k, v := range invalidTopicConfigs {
		res, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{k: &v}, "bad-"+strings.ReplaceAll(k, ".", "-"))
		if !isKafkaCode(res.Err, 40) || !strings.Contains(res.ErrMessage, k) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG naming it", k, v, res.Err, res.ErrMessage)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "every", "plain")
	if err != nil {
		t.Fatal(err)
	}
	every, _ := rcs.On("every", nil)
	plain, _ := rcs.On("plain", nil)
	for k, v := range validTopicConfigs {
		c := configNamed(every.Configs, k)
		if c.Value == nil || *c.Value != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("every: %s = %v source %v, want %s DYNAMIC_TOPIC_CONFIG", k, c.MaybeValue(), c.Source, v)
		}
	}
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"delete.retention.ms":    {"86400000", kmsg.ConfigSourceDefaultConfig},
		"compression.type":       {"producer", kmsg.ConfigSourceDefaultConfig},
		"min.compaction.lag.ms":  {"0", kmsg.ConfigSourceDefaultConfig},
		"message.format.version": {"3.0-IV1", kmsg.ConfigSourceDefaultConfig},
		"retention.ms":           {"3600000", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		c := configNamed(plain.Configs, name)
		if c.MaybeValue() != want.value || c.Source != want.source {
			t.Errorf("plain: %s = %q source %v, want %q %v", name, c.MaybeValue(), c.Source, want.value, want.source)
		}
	}
	syn := configNamed(plain.Configs, "retention.ms").Synonyms
	if len(syn) != 2 || syn[0].Key != "log.retention.ms" || syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig ||
		syn[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms synonyms: %+v, want log.retention.ms STATIC_BROKER_CONFIG then the default", syn)
	}
	if n := len(plain.Configs); n < len(validTopicConfigs) {
		t.Errorf("DescribeConfigs lists %d topic configs, want at least %d", n, len(validTopicConfigs))
	}
}

func configNamed(cs []kadm.Config, name string) *kadm.Config {
	for i := range cs {
		if cs[i].Key == name {
			return &cs[i]
		}
	}
	return &kadm.Config{Key: name}
}

func TestIncrementalAlterListConfigs(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	createTopic(t, node, "lists", 1)
	step := func(op kadm.IncrementalOp, name, value, want string) {
		t.Helper()
		res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: name, Value: &value}}, "lists")
		if err != nil || res[0].Err != nil {
			t.Fatalf("%v %s %s: %v %v %s", op, name, value, err, res[0].Err, res[0].ErrMessage)
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, "lists")
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := rcs.On("lists", nil)
		if got := configNamed(rc.Configs, name).MaybeValue(); got != want {
			t.Fatalf("after %v %s: %s = %q, want %q", op, value, name, got, want)
		}
	}
	step(kadm.AppendConfig, "cleanup.policy", "compact", "delete,compact")
	step(kadm.AppendConfig, "cleanup.policy", "compact", "delete,compact")
	step(kadm.SubtractConfig, "cleanup.policy", "delete", "compact")
	step(kadm.SetConfig, "cleanup.policy", "delete", "delete")
	step(kadm.AppendConfig, "leader.replication.throttled.replicas", "0:0", "0:0")
	v := "1000"
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: &v}}, "lists")
	if err != nil {
		t.Fatal(err)
	}
	if !isKafkaCode(res[0].Err, 40) {
		t.Fatalf("APPEND to a LONG config: %v, want INVALID_CONFIG", res[0].Err)
	}
	bad := "shred"
	res, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: &bad}}, "lists")
	if !isKafkaCode(res[0].Err, 40) {
		t.Fatalf("APPEND of an invalid item: %v, want INVALID_CONFIG", res[0].Err)
	}
}

// fetchBatches reads the raw stored batches of partition 0. The topic is
// named by both name and id: the client picks the newest Fetch version,
// and from v13 Kafka names topics by id only.
func fetchBatches(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []byte {
	t.Helper()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, topics[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: error %d", p.ErrorCode)
	}
	return p.RecordBatches
}

// An lz4 topic stores lz4 batches whatever the producer sent, with the
// idempotent producer's offsets and sequence numbers intact.
func TestCompressionTypeRecompresses(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	lz4 := "lz4"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"compression.type": &lz4}, "packed"); err != nil {
		t.Fatal(err)
	}
	cl := franz(t, node, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("packed"))
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	mustPost(t, node.URL+"/kafka/packed", "application/json", `{"via":"http"}`, 200)
	data := fetchBatches(t, ctx, cl, "packed")
	n := 0
	for len(data) >= 61 {
		codec, err := records.BatchCodec(data)
		if err != nil {
			t.Fatal(err)
		}
		if codec != records.LZ4 {
			t.Fatalf("batch %d stored as %v, want lz4", n, codec)
		}
		size := 12 + int(uint32(data[8])<<24|uint32(data[9])<<16|uint32(data[10])<<8|uint32(data[11]))
		data = data[size:]
		n++
	}
	if n != 4 {
		t.Fatalf("%d batches, want 4", n)
	}
	got := consumeFranz(t, node, "packed", 0, 4)
	for i, r := range got[:3] {
		if string(r.Value) != fmt.Sprintf("v%d", i) || r.Offset != int64(i) {
			t.Fatalf("record %d: %q at %d", i, r.Value, r.Offset)
		}
	}
}

// A keyless record on a compacted topic is INVALID_RECORD on Kafka and
// 422 42205 over HTTP, and writes nothing.
func TestCompactedTopicNeedsKeys(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "keyed"); err != nil {
		t.Fatal(err)
	}
	cl := franz(t, node, kgo.DefaultProduceTopic("keyed"), kgo.RecordRetries(0))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !isKafkaCode(err, 87) {
		t.Fatalf("keyless Kafka produce: %v, want INVALID_RECORD", err)
	}
	if status, code := httpErrorCode(t, node, http.MethodPost, "/kafka/keyed", `{"records":[{"value":1}]}`); status != 422 || code != 42205 {
		t.Fatalf("keyless HTTP produce: %d %d, want 422 42205", status, code)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("keyed produce: %v", err)
	}
	mustPost(t, node.URL+"/kafka/keyed", "application/json", `{"records":[{"key":"k","value":1}]}`, 200)
	offs, err := adm.ListEndOffsets(ctx, "keyed")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("keyed", 0); o.Offset != 2 {
		t.Fatalf("end offset %d, want 2 (the keyless records wrote nothing)", o.Offset)
	}
}

// One timestamp rule for both listeners: negative timestamps are judged by
// message.timestamp.before/after.max.ms (unbounded by default), -1 means
// "no timestamp" and is always accepted.
func TestTimestampRuleBothListeners(t *testing.T) {
	node := kafkaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(franz(t, node))
	createTopic(t, node, "anytime", 1)
	produce := func(topic string, ts int64) error {
		cl := franz(t, node, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0))
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Timestamp: time.UnixMilli(ts)}).FirstErr()
	}
	if err := produce("anytime", -5); err != nil {
		t.Fatalf("Kafka produce at -5: %v", err)
	}
	mustPost(t, node.URL+"/kafka/anytime", "application/json", `{"records":[{"value":1,"timestamp":-5}]}`, 200)
	before := "60000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.before.max.ms": &before}, "recent"); err != nil {
		t.Fatal(err)
	}
	if err := produce("recent", 1000); err == nil || !strings.Contains(err.Error(), "INVALID_TIMESTAMP") {
		t.Fatalf("Kafka produce of an old timestamp: %v, want INVALID_TIMESTAMP", err)
	}
	if status, code := httpErrorCode(t, node, http.MethodPost, "/kafka/recent", `{"records":[{"value":1,"timestamp":1000}]}`); status != 422 || code != 42206 {
		t.Fatalf("HTTP produce of an old timestamp: %d %d, want 422 42206", status, code)
	}
	if err := produce("recent", -1); err != nil {
		t.Fatalf("Kafka produce without a timestamp (-1): %v", err)
	}
	mustPost(t, node.URL+"/kafka/recent", "application/json", `{"records":[{"value":1,"timestamp":-1}]}`, 200)
}
