package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"

	"github.com/ferry-mq/ferry/test/harness"
)

// testLogger routes broker logs to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func newTestBroker(t testing.TB, mutate ...func(*Config)) *Broker {
	t.Helper()
	cfg := Config{DataDir: t.TempDir(), AutoCreateTopics: true}
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := Open(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("open broker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func reopen(t *testing.T, b *Broker) *Broker {
	t.Helper()
	cfg := b.cfg
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	nb, err := Open(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { nb.Close() })
	return nb
}

func produceValues(t *testing.T, b *Broker, topic string, partition int32, values ...string) []RecordOffset {
	t.Helper()
	req := &ProduceRequest{Topic: topic}
	for _, v := range values {
		req.Records = append(req.Records, ProduceRecord{Partition: partition, Record: records.Record{Value: []byte(v)}})
	}
	res, err := b.Produce(context.Background(), req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return res.Offsets
}

// readValues fetches every visible record of a partition from offset.
func readValues(t *testing.T, b *Broker, topic string, partition int32, offset int64) []string {
	t.Helper()
	res, err := b.Fetch(context.Background(), FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var out []string
	err = records.Decode(res.Data, offset, 1<<20, func(r records.Record) bool {
		out = append(out, string(r.Value))
		return true
	})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out
}

func TestProduceFetchRoundTripAndOffsets(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "orders", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	first := produceValues(t, b, "orders", 1, "a", "b", "c")
	second := produceValues(t, b, "orders", 1, "d")
	want := []RecordOffset{{1, 0}, {1, 1}, {1, 2}}
	if fmt.Sprint(first) != fmt.Sprint(want) || second[0] != (RecordOffset{1, 3}) {
		t.Fatalf("offsets: %v %v", first, second)
	}
	if got := readValues(t, b, "orders", 1, 1); strings.Join(got, "") != "bcd" {
		t.Fatalf("read from 1: %q", got)
	}
	if got := readValues(t, b, "orders", 0, 0); len(got) != 0 {
		t.Fatalf("partition 0 should be empty: %q", got)
	}
}

func TestRecordsAndTopicsSurviveRestart(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "keep", Partitions: 3, Configs: map[string]string{CfgRetentionMs: "-1"}}); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b, "keep", 2, "x", "y")
	b = reopen(t, b)
	info, err := b.DescribeTopic("keep")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Partitions) != 3 || info.Partitions[2].HighWatermark != 2 {
		t.Fatalf("after restart: %+v", info.Partitions)
	}
	if got := readValues(t, b, "keep", 2, 0); strings.Join(got, ",") != "x,y" {
		t.Fatalf("values after restart: %q", got)
	}
	for _, c := range info.Configs {
		if c.Name == CfgRetentionMs && (c.Value != "-1" || c.IsDefault) {
			t.Fatalf("retention.ms after restart: %+v", c)
		}
	}
	if off := produceValues(t, b, "keep", 2, "z"); off[0].Offset != 2 {
		t.Fatalf("offset after restart: %v", off)
	}
}

func TestKeyedRecordsUseKafkaPartitioner(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "keyed", Partitions: 7}); err != nil {
		t.Fatal(err)
	}
	req := &ProduceRequest{Topic: "keyed"}
	keys := []string{"user-1", "user-2", "21", "foobar", "a-little-bit-long-string"}
	for _, k := range keys {
		req.Records = append(req.Records, ProduceRecord{Partition: PartitionAuto, Record: records.Record{Key: []byte(k), Value: []byte("v")}})
	}
	res, err := b.Produce(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if want := records.PartitionForKey([]byte(k), 7); res.Offsets[i].Partition != want {
			t.Fatalf("key %q went to %d, Kafka's partitioner says %d", k, res.Offsets[i].Partition, want)
		}
	}
}

func TestUnkeyedRecordsSpreadAcrossPartitions(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "spread", Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	for i := 0; i < 8; i++ {
		seen[produceValues(t, b, "spread", PartitionAuto, "v", "w")[0].Partition] = true
	}
	if len(seen) != 4 {
		t.Fatalf("8 unkeyed requests reached partitions %v, want all 4", seen)
	}
}

func TestProduceRejectsWithoutWriting(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.AutoCreateTopics = false; c.MessageMaxBytes = 1000 })
	if err := b.CreateTopic(TopicSpec{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  ProduceRequest
		want error
	}{
		{"unknown topic", ProduceRequest{Topic: "nope", Records: []ProduceRecord{{Partition: 0}}}, ErrUnknownTopic},
		{"bad partition after good", ProduceRequest{Topic: "t", Records: []ProduceRecord{
			{Partition: 0, Record: records.Record{Value: []byte("ok")}}, {Partition: 5}}}, ErrUnknownPartition},
		{"too large", ProduceRequest{Topic: "t", Records: []ProduceRecord{
			{Partition: 1, Record: records.Record{Value: []byte("ok")}},
			{Partition: 0, Record: records.Record{Value: make([]byte, 2000)}}}}, ErrRecordTooLarge},
		{"empty", ProduceRequest{Topic: "t"}, ErrInvalidRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Produce(context.Background(), &tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	for p := int32(0); p < 2; p++ {
		if hw, _, _ := b.ListOffset("t", p, OffsetLatest); hw != 0 {
			t.Fatalf("partition %d has %d records after rejected requests", p, hw)
		}
	}
	if got := b.Topics(); len(got) != 1 {
		t.Fatalf("auto-create is off but topics are %v", got)
	}
}

func TestAutoCreateUsesNumPartitions(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.NumPartitions = 3 })
	produceValues(t, b, "fresh", PartitionAuto, "v")
	if n, err := b.PartitionCount("fresh"); err != nil || n != 3 {
		t.Fatalf("auto-created with %d partitions, err %v", n, err)
	}
}

func TestConcurrentAutoCreateAndProduce(t *testing.T) {
	b := newTestBroker(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Produce(context.Background(), &ProduceRequest{Topic: "race", Records: []ProduceRecord{{Partition: 0, Record: records.Record{Value: []byte("v")}}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if hw, _, _ := b.ListOffset("race", 0, OffsetLatest); hw != 8 {
		t.Fatalf("high watermark %d, want 8", hw)
	}
}

func TestTopicAdmin(t *testing.T) {
	b := newTestBroker(t)
	for _, bad := range []TopicSpec{
		{Name: ""}, {Name: "."}, {Name: ".."}, {Name: "has space"}, {Name: strings.Repeat("x", 250)},
	} {
		if err := b.CreateTopic(bad); !errors.Is(err, ErrInvalidTopic) {
			t.Fatalf("create %q: %v", bad.Name, err)
		}
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok", Partitions: -7}); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("negative partitions: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok", ReplicationFactor: 3}); !errors.Is(err, ErrInvalidReplicas) {
		t.Fatalf("rf 3 on one node: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok", Configs: map[string]string{"retention.ms": "soon"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok", Configs: map[string]string{"no.such.key": "1"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("unknown config: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok.topic_1-x", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "ok.topic_1-x"}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := b.CreatePartitions("ok.topic_1-x", 1); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("shrink: %v", err)
	}
	if err := b.CreatePartitions("ok.topic_1-x", 4); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b, "ok.topic_1-x", 3, "in new partition")
	if err := b.AlterTopicConfigs("ok.topic_1-x", map[string]string{CfgRetentionBytes: "1048576"}, nil, false); err != nil {
		t.Fatal(err)
	}
	b = reopen(t, b)
	info, err := b.DescribeTopic("ok.topic_1-x")
	if err != nil || len(info.Partitions) != 4 || info.Partitions[3].HighWatermark != 1 {
		t.Fatalf("after add partitions and restart: %+v %v", info, err)
	}
	if err := b.DeleteTopic("ok.topic_1-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DescribeTopic("ok.topic_1-x"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("describe deleted: %v", err)
	}
	// Re-creating the name starts empty: the old records are gone.
	if err := b.CreateTopic(TopicSpec{Name: "ok.topic_1-x", Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	if hw, _, _ := b.ListOffset("ok.topic_1-x", 3, OffsetLatest); hw != 0 {
		t.Fatalf("recreated topic has hw %d", hw)
	}
	b = reopen(t, b)
	harness.WaitFor(t, "the deleted partitions' directories to go", 10*time.Second, func() bool {
		matches, _ := filepath.Glob(filepath.Join(b.cfg.DataDir, "*"+deleteSuffix))
		return len(matches) == 0
	})
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "poll"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		res, err := b.Fetch(context.Background(), FetchRequest{Topic: "poll", Offset: 0, MaxBytes: 1 << 20, MaxWait: 20 * time.Second}, nil)
		if err != nil {
			t.Error(err)
		}
		got <- res.Data
	}()
	time.Sleep(50 * time.Millisecond) // let the fetch start waiting; correctness does not depend on it
	produceValues(t, b, "poll", 0, "wake")
	select {
	case data := <-got:
		if len(data) == 0 {
			t.Fatal("long poll returned no data")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake on produce")
	}
	// A poll with nothing new returns empty once the wait passes.
	res, err := b.Fetch(context.Background(), FetchRequest{Topic: "poll", Offset: 1, MaxBytes: 1 << 20, MaxWait: 30 * time.Millisecond}, nil)
	if err != nil || len(res.Data) != 0 || res.HighWatermark != 1 {
		t.Fatalf("empty poll: %d bytes hw %d err %v", len(res.Data), res.HighWatermark, err)
	}
}

func TestFetchOutOfRange(t *testing.T) {
	b := newTestBroker(t)
	produceValues(t, b, "r", 0, "a")
	for _, off := range []int64{2, -1} {
		if _, err := b.Fetch(context.Background(), FetchRequest{Topic: "r", Offset: off, MaxBytes: 100}, nil); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
	if _, err := b.Fetch(context.Background(), FetchRequest{Topic: "r", Partition: 9, MaxBytes: 100}, nil); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("partition 9: %v", err)
	}
}

func TestListOffsetsByTimestamp(t *testing.T) {
	b := newTestBroker(t)
	req := &ProduceRequest{Topic: "ts"}
	for i, ts := range []int64{1000, 2000, 3000} {
		req.Records = append(req.Records, ProduceRecord{Partition: 0, Record: records.Record{Timestamp: ts, Value: []byte{byte(i)}}})
	}
	if _, err := b.Produce(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b, "ts", 0, "now") // a second batch, timestamped now
	cases := []struct{ ts, offset, found int64 }{
		{0, 0, 1000}, {1000, 0, 1000}, {1500, 1, 2000}, {3000, 2, 3000}, {3001, 3, -2},
		{time.Now().Add(time.Hour).UnixMilli(), -1, -1},
	}
	for _, c := range cases {
		off, ts, err := b.ListOffset("ts", 0, c.ts)
		if err != nil || off != c.offset || (c.found != -2 && ts != c.found) {
			t.Fatalf("ts %d: offset %d ts %d err %v; want %d", c.ts, off, ts, err, c.offset)
		}
	}
	if off, _, _ := b.ListOffset("ts", 0, OffsetEarliest); off != 0 {
		t.Fatalf("earliest %d", off)
	}
	if off, _, _ := b.ListOffset("ts", 0, OffsetLatest); off != 4 {
		t.Fatalf("latest %d", off)
	}
}

func TestRetentionMovesLogStart(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.RetentionCheckInterval = 20 * time.Millisecond })
	err := b.CreateTopic(TopicSpec{Name: "short", Configs: map[string]string{CfgSegmentBytes: "1024", CfgRetentionBytes: "2048"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		produceValues(t, b, "short", 0, strings.Repeat("r", 200))
	}
	harness.WaitFor(t, "retention to move the log start", 10*time.Second, func() bool {
		start, _, _ := b.ListOffset("short", 0, OffsetEarliest)
		return start > 0
	})
	start, _, _ := b.ListOffset("short", 0, OffsetEarliest)
	if got := readValues(t, b, "short", 0, start); len(got) == 0 || int64(len(got)) > 40-start {
		t.Fatalf("after retention start %d, %d records readable", start, len(got))
	}
	if _, err := b.Fetch(context.Background(), FetchRequest{Topic: "short", Offset: 0, MaxBytes: 100}, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
}

func TestSyncTopicAcknowledgesAfterFsync(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "durable", Configs: map[string]string{CfgFlushMessages: "1"}}); err != nil {
		t.Fatal(err)
	}
	produceValues(t, b, "durable", 0, "a", "b")
	p, _ := b.partition("durable", 0)
	if flushed := p.FlushedOffset(); flushed < 2 {
		t.Fatalf("acknowledged 2 records but flushed offset is %d", flushed)
	}
}

func TestKafkaCodes(t *testing.T) {
	cases := map[error]int16{
		nil: 0, ErrUnknownTopic: 3, ErrRecordTooLarge: 10, ErrOffsetOutOfRange: 1,
		ErrInvalidTopic: 17, ErrTopicExists: 36, ErrInvalidConfig: 40, errors.New("x"): -1,
		fmt.Errorf("wrapped: %w", ErrCorruptMessage): 2,
	}
	for err, want := range cases {
		if got := KafkaCode(err); got != want {
			t.Fatalf("%v: %d, want %d", err, got, want)
		}
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

func TestProduceSpanningManyPartitionsKeepsRequestOrder(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "wide", Partitions: 12}); err != nil {
		t.Fatal(err)
	}
	req := &ProduceRequest{Topic: "wide"}
	for i := 0; i < 36; i++ {
		p := int32((i * 5) % 12) // visits all 12 partitions, out of order, three times each
		req.Records = append(req.Records, ProduceRecord{Partition: p, Record: records.Record{Value: []byte(fmt.Sprint(i))}})
	}
	res, err := b.Produce(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	for i, o := range res.Offsets {
		if o.Partition != req.Records[i].Partition || o.Offset != next[o.Partition] {
			t.Fatalf("record %d: %+v, want partition %d offset %d", i, o, req.Records[i].Partition, next[o.Partition])
		}
		next[o.Partition]++
		if got := readValues(t, b, "wide", o.Partition, o.Offset); got[0] != fmt.Sprint(i) {
			t.Fatalf("record %d read back as %q", i, got[0])
		}
	}
}

func TestSchemaEnforcedTopicWithoutRegistryRefusesValues(t *testing.T) {
	b := newTestBroker(t)
	err := b.CreateTopic(TopicSpec{Name: "strict", Configs: map[string]string{CfgValueSchemaValidation: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Produce(context.Background(), &ProduceRequest{Topic: "strict", Records: []ProduceRecord{{Record: records.Record{Value: []byte("x")}}}})
	if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), "no schema registry") {
		t.Fatalf("got %v", err)
	}
	// A tombstone carries no schema and passes.
	if _, err := b.Produce(context.Background(), &ProduceRequest{Topic: "strict", Records: []ProduceRecord{{}}}); err != nil {
		t.Fatalf("tombstone: %v", err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "bad", Configs: map[string]string{CfgValueSchemaValidation: "yes"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("value yes: %v", err)
	}
}
