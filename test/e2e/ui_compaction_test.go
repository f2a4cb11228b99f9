package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestUICompactionState: a compacted topic's page shows each replica's
// cleaner state (dirty share, cleaned-to offset, last pass); a topic
// that is not compacted has no such section.
func TestUICompactionState(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"table-ui","partitions":2,"configs":{"cleanup.policy":"compact"}}`, 201)
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"plain-ui","partitions":1}`, 201)

	b.run("open the compacted topic",
		chromedp.Navigate(node.URL+"/ui/#/topics/table-ui"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-cleaner="1"]`)))
	b.waitText("#compaction-title", "Compaction")
	b.waitText(`tr[data-cleaner="0"]`, "none yet")
	b.screenshot("topic-compaction")

	b.run("open the plain topic",
		chromedp.Navigate(node.URL+"/ui/#/topics/plain-ui"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-partition="0"]`)))
	b.waitText("#view", "plain-ui")
	if sections := eval[int](b, "count compaction sections", `document.querySelectorAll("#compaction-title").length`); sections != 0 {
		t.Fatalf("a topic that is not compacted shows %d compaction sections", sections)
	}
}
