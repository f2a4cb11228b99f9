package kafkascripts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestKafkaTransactionsScript: kafka-transactions.sh with Kafka 3.9's
// options lists an open transaction, describes the partition's producers,
// and aborts the transaction by its start offset (as an operator ends a
// hanging one), after
// which the partition's last stable offset reaches its high watermark.
func TestKafkaTransactionsScript(t *testing.T) {
	node := harness.Start(t)
	node.WaitKafka()
	broker := node.KafkaAddr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	adm := kadm.NewClient(plain)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "hang"); err != nil {
		t.Fatal(err)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID("hanging-tx"), kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "hang", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if out := ok(t, "", "kafka-transactions.sh", "--bootstrap-server", broker, "list"); !strings.Contains(out, "hanging-tx") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("list:\n%s", out)
	}
	// Its coordinator still knows it as ongoing: open, not hanging.
	if out := ok(t, "", "kafka-transactions.sh", "--bootstrap-server", broker, "find-hanging", "--topic", "hang", "--max-transaction-timeout", "0"); !strings.Contains(out, "StartOffset") || strings.Contains(out, "hang ") {
		t.Fatalf("find-hanging:\n%s", out)
	}
	if out := ok(t, "", "kafka-transactions.sh", "--bootstrap-server", broker, "describe-producers", "--topic", "hang", "--partition", "0"); !strings.Contains(out, "CurrentTransactionStartOffset") {
		t.Fatalf("describe-producers:\n%s", out)
	}
	ok(t, "", "kafka-transactions.sh", "--bootstrap-server", broker, "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0")
	harness.WaitFor(t, "the LSO to pass the aborted transaction", 30*time.Second, func() bool {
		lso, err1 := adm.ListCommittedOffsets(ctx, "hang")
		hw, err2 := adm.ListEndOffsets(ctx, "hang")
		if err1 != nil || err2 != nil {
			return false
		}
		l, _ := lso.Lookup("hang", 0)
		h, _ := hw.Lookup("hang", 0)
		return l.Offset == h.Offset && h.Offset == 2
	})
	if res := run(t, "", "kafka-transactions.sh", "--bootstrap-server", broker, "force-terminate", "--transactionalId", "x"); res.code != 1 {
		t.Fatalf("force-terminate: exit %d %q", res.code, res.stderr)
	}
}
