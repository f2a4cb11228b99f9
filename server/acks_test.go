package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"

	"github.com/ferry-mq/ferry/test/harness"
)

func oneBatch(t *testing.T, value string) []byte {
	t.Helper()
	var b records.Builder
	b.Add(records.Record{Value: []byte(value), Timestamp: time.Now().UnixMilli()})
	data, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// min.insync.replicas above the in-sync replicas refuses acks=all before
// anything is written, on both produce paths; acks=1 is still served.
func TestAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "isr", Partitions: 1, Configs: map[string]string{CfgMinInsyncReplicas: "2"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := b.produceBatch(ctx, BatchProduce{Topic: "isr", Batches: oneBatch(t, "a"), Acks: AcksAll})
	if !errors.Is(err, ErrNotEnoughReplicas) || KafkaCode(err) != KafkaNotEnoughReplicas {
		t.Fatalf("acks=all with 1 of 2 in-sync replicas: %v (code %d)", err, KafkaCode(err))
	}
	_, err = b.Produce(ctx, &ProduceRequest{Topic: "isr", Records: []ProduceRecord{{Partition: 0, Record: records.Record{Value: []byte("b")}}}})
	if !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("HTTP-path produce: %v", err)
	}
	if p, _ := b.Partition("isr", 0); p.LogEndOffset() != 0 {
		t.Fatalf("log end %d after two refusals, want 0", p.LogEndOffset())
	}
	res, err := b.produceBatch(ctx, BatchProduce{Topic: "isr", Batches: oneBatch(t, "c"), Acks: AcksLeader})
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("acks=1: offset %d, %v", res.BaseOffset, err)
	}
}

// A request appends first and waits once; a partition whose high
// watermark does not reach its records in time answers REQUEST_TIMED_OUT,
// one that is deleted meanwhile NOT_LEADER_OR_FOLLOWER, and the others
// are acknowledged.
func TestWaitAcksAnswersEachPartition(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "acks", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done, err := b.AppendBatch(ctx, BatchProduce{Topic: "acks", Partition: 0, Batches: oneBatch(t, "a"), Acks: AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := b.partition("acks", 1)
	// Records the high watermark has not reached (one replica never lags,
	// so the wait is given offsets beyond the log end).
	ahead := Appended{AppendResult: storage.AppendResult{BaseOffset: 5, LastOffset: 6}, partition: p1, acks: AcksAll}
	leader := Appended{AppendResult: storage.AppendResult{BaseOffset: 9, LastOffset: 9}, partition: p1, acks: AcksLeader}
	errs := b.WaitAcks(ctx, []Appended{done, ahead, leader}, 20*time.Millisecond)
	if errs[0] != nil || !errors.Is(errs[1], ErrRequestTimedOut) || errs[2] != nil {
		t.Fatalf("answers %v, want [nil, timed out, nil]", errs)
	}
	if KafkaCode(errs[1]) != KafkaRequestTimedOut {
		t.Fatalf("code %d for %v", KafkaCode(errs[1]), errs[1])
	}

	waited := make(chan error, 1)
	go func() { waited <- b.WaitAcks(ctx, []Appended{ahead}, time.Minute)[0] }()
	harness.WaitFor(t, "the acks wait to register", 10*time.Second, func() bool { return b.WaitingFetches("acks", 1) == 1 })
	if err := b.DeleteTopic("acks"); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait on a deleted partition: %v", err)
	}
}

// A wait cut short by its context (the Kafka listener shutting down)
// answers BROKER_NOT_AVAILABLE, not REQUEST_TIMED_OUT: the latter says
// this broker still leads and the client would retry here.
func TestWaitAcksCutShortAnswersBrokerNotAvailable(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "cut", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	p, _ := b.partition("cut", 0)
	ahead := Appended{AppendResult: storage.AppendResult{BaseOffset: 5, LastOffset: 6}, partition: p, acks: AcksAll}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- b.WaitAcks(ctx, []Appended{ahead}, time.Minute)[0] }()
	harness.WaitFor(t, "the acks wait to register", 10*time.Second, func() bool { return b.WaitingFetches("cut", 0) == 1 })
	cancel()
	if err := <-waited; !errors.Is(err, ErrShuttingDown) || KafkaCode(err) != KafkaBrokerNotAvailable {
		t.Fatalf("a cancelled wait: %v (code %d)", err, KafkaCode(err))
	}
}

// The broker-wide min.insync.replicas and default.replication.factor are
// the defaults of topics that do not override them.
func TestBrokerReplicationDefaults(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.MinInsyncReplicas = 2 })
	if err := b.CreateTopic(TopicSpec{Name: "dflt", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := b.produceBatch(context.Background(), BatchProduce{Topic: "dflt", Batches: oneBatch(t, "a"), Acks: AcksAll})
	if !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all under the broker's min.insync.replicas=2: %v", err)
	}
	if err := b.AlterTopicConfigs("dflt", map[string]string{CfgMinInsyncReplicas: "1"}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.produceBatch(context.Background(), BatchProduce{Topic: "dflt", Batches: oneBatch(t, "a"), Acks: AcksAll}); err != nil {
		t.Fatalf("acks=all with the topic's override 1: %v", err)
	}

	three := newTestBroker(t, func(c *Config) { c.DefaultReplicationFactor = 3 })
	err = three.CreateTopic(TopicSpec{Name: "rf"})
	if !errors.Is(err, ErrInvalidReplicas) || !strings.Contains(err.Error(), "3") || !strings.Contains(err.Error(), "available brokers: 1") {
		t.Fatalf("default.replication.factor 3 on one broker: %v", err)
	}
}

// OnAppended is called once the request's records are in the log, before
// the acknowledgement, and not for a request refused before it appended.
func TestProduceOnAppendedBeforeTheAcknowledgement(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "hook", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(TopicSpec{Name: "hook-isr", Partitions: 1, Configs: map[string]string{CfgMinInsyncReplicas: "2"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var calls int
	var endAtCall int64
	req := &ProduceRequest{Topic: "hook", Records: []ProduceRecord{
		{Partition: 0, Record: records.Record{Value: []byte("a")}},
		{Partition: 1, Record: records.Record{Value: []byte("b")}},
	}, OnAppended: func() {
		calls++
		p, _ := b.Partition("hook", 1)
		endAtCall = p.LogEndOffset()
	}}
	if _, err := b.Produce(ctx, req); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || endAtCall != 1 {
		t.Fatalf("OnAppended called %d times, log end %d then; want once, with both records appended", calls, endAtCall)
	}
	calls = 0
	refused := &ProduceRequest{Topic: "hook-isr", Records: []ProduceRecord{{Partition: 0, Record: records.Record{Value: []byte("c")}}},
		OnAppended: func() { calls++ }}
	if _, err := b.Produce(ctx, refused); !errors.Is(err, ErrNotEnoughReplicas) || calls != 0 {
		t.Fatalf("refused append: %v, OnAppended called %d times", err, calls)
	}
}
