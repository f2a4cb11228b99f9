package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// Swagger UI still renders under the CSP /docs now shares with /ui/ (a
// blocked script or style would leave no operations and a console error).
func TestDocsRenderUnderTheirCSP(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	b.run("open /docs", chromedp.Navigate(node.URL+"/docs"), chromedp.WaitVisible(chromedp.CSS(".opblock")))
	if n := eval[float64](b, "count operations", `document.querySelectorAll('.opblock').length`); n < 20 {
		t.Fatalf("Swagger UI shows %v operations", n)
	}
}
