package kcli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An open transaction as the operator sees it: listed, described at its
// coordinator, visible in the partition's producers, and ended by an
// operator's abort marker.
func TestTransactionsOperatorView(t *testing.T) {
	bootstrap, adm := newCluster(t)
	ctx := testContext(t)
	if err := CreateTopic(ctx, adm, TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.TransactionalID("etl-1"),
		kgo.DefaultProduceTopic("orders"), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	txns, err := ListTransactions(ctx, adm, []string{"Ongoing"}, nil)
	if err != nil || len(txns) != 1 || txns[0].TxnID != "etl-1" {
		t.Fatalf("list: %+v %v", txns, err)
	}
	var out bytes.Buffer
	WriteListedTransactions(&out, txns)
	if !strings.Contains(out.String(), "etl-1") || !strings.Contains(out.String(), "Ongoing") {
		t.Fatalf("list output:\n%s", out.String())
	}
	d, err := DescribeTransaction(ctx, adm, "etl-1")
	if err != nil || d.State != "Ongoing" {
		t.Fatalf("describe: %+v %v", d, err)
	}
	out.Reset()
	WriteDescribedTransaction(&out, d, time.Now())
	if !strings.Contains(out.String(), "orders-0") {
		t.Fatalf("describe output:\n%s", out.String())
	}
	if _, err := DescribeTransaction(ctx, adm, "nobody"); err == nil {
		t.Fatal("an unknown id was described")
	}

	producers, err := DescribeProducers(ctx, adm, "orders", 0)
	if err != nil || len(producers) != 1 || producers[0].ProducerID != d.ProducerID || producers[0].CurrentTxnStartOffset != 0 {
		t.Fatalf("producers: %+v %v", producers, err)
	}
	hanging, err := FindHanging(ctx, adm, []string{"orders"}, 0, time.Now().Add(time.Hour))
	if err != nil || len(hanging) != 0 {
		t.Fatalf("a transaction its coordinator holds open was called hanging: %+v %v", hanging, err)
	}

	spec, err := AbortSpecFromStart(ctx, adm, "orders", 0, 0)
	if err != nil || spec.ProducerID != d.ProducerID {
		t.Fatalf("abort spec: %+v %v", spec, err)
	}
	if _, err := AbortSpecFromStart(ctx, adm, "orders", 0, 99); err == nil {
		t.Fatal("found a transaction starting at an offset none starts at")
	}
	// kfake writes the marker but keeps reporting the transaction open
	// (its producer view follows its coordinator): the answer is checked.
	if err := AbortTransaction(ctx, adm, spec); err != nil {
		t.Fatal(err)
	}
	spec.Topic = "missing"
	if err := AbortTransaction(ctx, adm, spec); err == nil {
		t.Fatal("an abort on a missing topic succeeded")
	}
}
