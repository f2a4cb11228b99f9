package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/test/harness"
)

// TestKafkaIdempotenceSurvivesKill9: a producer's batch retried after the
// broker was killed with SIGKILL and restarted gets its original offset and
// is not appended twice; a gap is still refused; producer ids are not reused.
func TestKafkaIdempotenceSurvivesKill9(t *testing.T) {
	node := kafkaNode(t)
	createTopic(t, node, "durable-idem", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := franz(t, node)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %+v", err, init)
	}
	opts := records.BatchOptions{ProducerID: init.ProducerID, ProducerEpoch: init.ProducerEpoch}
	var last []byte
	for seq := int32(0); seq < 20; seq += 2 {
		opts.BaseSequence = seq
		last = idemBatch(t, opts)
		if p := rawProduce(t, ctx, cl, last); p.ErrorCode != 0 || p.BaseOffset != int64(seq) {
			t.Fatalf("seq %d: %+v", seq, p)
		}
	}
	cl.Close()
	cl = retryAfterKill(t, ctx, node, last, 18, opts, 25)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "durable-idem", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	if resp, err := lo.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].Offset != 20 {
		t.Fatalf("end offset after the retry: %v %+v, want 20 (nothing appended twice)", err, resp)
	}
	again, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || again.ProducerID <= init.ProducerID {
		t.Fatalf("producer id after restart %+v (%v), want above %d", again, err, init.ProducerID)
	}
}

// retryAfterKill kill -9s and restarts node, then checks that the
// idempotent batch last, acknowledged before the kill, is answered with its
// original offset and that a sequence gap (gapSeq) is refused; it answers
// a client of the restarted node.
func retryAfterKill(t *testing.T, ctx context.Context, node *harness.Node, last []byte, offset int64,
	opts records.BatchOptions, gapSeq int32) *kgo.Client {
	t.Helper()
	node.Kill()
	node.Restart()
	node.WaitKafka()
	cl := franz(t, node)
	if p := rawProduce(t, ctx, cl, last); p.ErrorCode != 0 || p.BaseOffset != offset {
		t.Fatalf("retry after kill -9: %+v, want the original offset %d", p, offset)
	}
	opts.BaseSequence = gapSeq
	if p := rawProduce(t, ctx, cl, idemBatch(t, opts)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after kill -9: error %d, want OUT_OF_ORDER_SEQUENCE_NUMBER (45)", p.ErrorCode)
	}
	return cl
}

func idemBatch(t *testing.T, opts records.BatchOptions) []byte {
	t.Helper()
	var b records.Builder
	b.Add(records.Record{Value: []byte("a"), Timestamp: time.Now().UnixMilli()})
	b.Add(records.Record{Value: []byte("b"), Timestamp: time.Now().UnixMilli()})
	data, err := b.AppendBatch(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rawProduce sends one batch to partition 0 with acks=all on broker 0.
func rawProduce(t *testing.T, ctx context.Context, cl *kgo.Client, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "durable-idem",
		Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: append([]byte(nil), batch...)}}}}
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}
