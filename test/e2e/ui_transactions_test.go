package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestUITransactions: the admin page lists an open transaction (state,
// partition, start offset), the topic view shows the partition's last
// stable offset held at the transaction's start beside the high
// watermark, and the abort button ends it as kafka-transactions.sh abort
// does: the last stable offset reaches the high watermark.
func TestUITransactions(t *testing.T) {
	b := newBrowser(t)
	node := kafkaNode(t)
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"ledger","partitions":1}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := franz(t, node, kgo.TransactionalID("ui-tx"), kgo.TransactionTimeout(10*time.Minute))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("held")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var topic struct {
		Partitions []struct {
			HighWatermark    int64 `json:"high_watermark"`
			LastStableOffset int64 `json:"last_stable_offset"`
		} `json:"partitions"`
	}
	uiGetJSON(t, node.URL+"/topics/ledger", &topic)
	if len(topic.Partitions) != 1 || topic.Partitions[0].HighWatermark != 1 || topic.Partitions[0].LastStableOffset != 0 {
		t.Fatalf("GET /topics/ledger with an open transaction: %+v", topic)
	}

	b.run("open the transactions page",
		chromedp.Navigate(node.URL+"/ui/#/transactions"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-txn="ui-tx"]`)))
	b.waitText(`tr[data-txn="ui-tx"]`, "Ongoing")
	b.waitText(`tr[data-txn="ui-tx"] li[data-partition="ledger-0"]`, "from offset 0")
	b.screenshot("transactions")

	b.run("open the topic", chromedp.Navigate(node.URL+"/ui/#/topics/ledger"), chromedp.WaitVisible(chromedp.CSS("table.partitions")))
	b.waitText("table.partitions tbody td.lso", "0")

	b.run("abort the transaction",
		chromedp.Navigate(node.URL+"/ui/#/transactions"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-abort="ledger-0"]`)),
		chromedp.Click(chromedp.CSS(`button[data-abort="ledger-0"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#dialog button[type="submit"]`)),
		chromedp.Click(chromedp.CSS(`#dialog button[type="submit"]`)))
	adm := kadm.NewClient(franz(t, node))
	harness.WaitFor(t, "the abort marker to move the last stable offset", 30*time.Second, func() bool {
		lso, err := adm.ListCommittedOffsets(ctx, "ledger")
		if err != nil {
			return false
		}
		o, _ := lso.Lookup("ledger", 0)
		return o.Offset == 2
	})
	b.run("open the topic again", chromedp.Navigate(node.URL+"/ui/#/topics/ledger"), chromedp.WaitVisible(chromedp.CSS("table.partitions")))
	b.waitText("table.partitions tbody td.lso", "2")
	b.screenshot("transactions-aborted")
}
