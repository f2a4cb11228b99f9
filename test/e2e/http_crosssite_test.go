package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// A page on another site posts to the node as a browser lets any page do
// without CORS (no-cors fetch with a form content type): nothing changes.
func TestCrossSitePageCannotChangeState(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<!DOCTYPE html><title>elsewhere</title>")
	}))
	defer attacker.Close()
	// localhost vs 127.0.0.1: another site, not only another origin.
	page := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
	b.run("open the other site", chromedp.Navigate(page))
	script := fmt.Sprintf(`(async () => {
		const form = {'Content-Type': 'application/x-www-form-urlencoded'};
		await fetch(%[1]q + '/topics', {method: 'POST', mode: 'no-cors', headers: form, body: '{"name":"evil1","partitions":1}'});
		await fetch(%[1]q + '/kafka/evil2', {method: 'POST', mode: 'no-cors', headers: form, body: '{"x":1}'});
		await fetch(%[1]q + '/kafka/evil3', {method: 'POST', mode: 'no-cors', body: '{"x":1}'});
		return 'sent';
	})()`, node.URL)
	if got := evalAsync[string](b, script, "%s"); got != "sent" {
		t.Fatalf("script: %q", got)
	}
	for _, topic := range []string{"evil1", "evil2", "evil3"} {
		res, err := http.Get(node.URL + "/topics/" + topic)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("topic %s: %d; a cross-site page created it", topic, res.StatusCode)
		}
	}
	// The node's own page still works.
	b.run("open /ui/", chromedp.Navigate(node.URL+"/ui/"))
	same := `(async () => (await fetch('/topics', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"name":"mine","partitions":1}'})).status)()`
	if got := evalAsync[float64](b, same, "%s"); got != 201 {
		t.Errorf("same-origin create from /ui/: %v", got)
	}
}
