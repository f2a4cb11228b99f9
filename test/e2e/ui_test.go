package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// Browser tests of the admin page (/ui/) against a real `ferry serve`:
// every step goes through the page as a person would, and what the page
// claims is checked against the HTTP API.

func uiGetJSON(t *testing.T, url string, v any) int {
	t.Helper()
	status, body := restCall(t, http.MethodGet, url, "", "", "")
	if v != nil && status == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, body)
		}
	}
	return status
}

func TestUITopicsAndMessages(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)

	b.run("open the overview",
		chromedp.Navigate(node.URL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#overview-stats")))
	b.waitText("#overview-stats", "Brokers")
	b.screenshot("overview")

	// Create a topic from the form: a bad name is refused inline first.
	b.run("open the create form",
		chromedp.Click(chromedp.CSS(`a[data-nav="topics"]`)),
		chromedp.WaitVisible(chromedp.CSS("#new-topic")),
		chromedp.Click(chromedp.CSS("#new-topic")),
		chromedp.WaitVisible(chromedp.CSS("#topic-name")),
		chromedp.SendKeys(chromedp.CSS("#topic-name"), "bad name!"))
	b.waitText("#topic-name-msg", `remove the space, "!"`)
	b.screenshot("topics-create-invalid")
	b.run("fill the create form",
		fillIn("#topic-name", ""),
		chromedp.SendKeys(chromedp.CSS("#topic-name"), "orders-ui"),
		fillIn("#topic-partitions", "3"),
		chromedp.Click(chromedp.Search(`//button[text()="Add config"]`)),
		chromedp.SendKeys(chromedp.CSS(".kv-row .cfg-key"), "retention.ms"),
		chromedp.SendKeys(chromedp.CSS(".kv-row .cfg-value"), "3600000"),
		chromedp.Click(chromedp.CSS("#create-topic")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="orders-ui"]`)))
	var topic struct {
		Partitions []struct{} `json:"partitions"`
		Configs    []struct {
			Name, Value string
			IsDefault   bool `json:"is_default"`
		} `json:"configs"`
	}
	if st := uiGetJSON(t, node.URL+"/topics/orders-ui", &topic); st != http.StatusOK || len(topic.Partitions) != 3 {
		t.Fatalf("after the form: GET /topics/orders-ui = %d with %d partitions, want 200 with 3", st, len(topic.Partitions))
	}
	for _, c := range topic.Configs {
		if c.Name == "retention.ms" && (c.Value != "3600000" || c.IsDefault) {
			t.Fatalf("retention.ms = %+v, want the override 3600000", c)
		}
	}
	b.waitText(`tr[data-topic="orders-ui"]`, "3")
	b.screenshot("topics")

	// The server's refusal is shown in words: the topic exists already.
	b.run("create the same topic again",
		chromedp.Click(chromedp.CSS("#new-topic")),
		chromedp.WaitVisible(chromedp.CSS("#topic-name")),
		chromedp.SendKeys(chromedp.CSS("#topic-name"), "orders-ui"),
		chromedp.Click(chromedp.CSS("#create-topic")))
	b.waitText("form .error", "already exists")
	b.waitText("form .error", "HTTP 409")

	// Topic detail: partitions with leader, replicas, ISR and offsets.
	b.run("open the topic detail",
		chromedp.Navigate(node.URL+"/ui/#/topics/orders-ui"),
		chromedp.WaitVisible(chromedp.CSS("table.partitions")))
	b.waitText("table.partitions tbody", "0")
	b.screenshot("topic-detail")
	b.run("add a partition",
		fillIn("#partition-total", "4"),
		chromedp.Click(chromedp.Search(`//button[text()="Add partitions"]`)))
	b.waitText("#flash", "now has 4 partitions")
	b.run("edit retention.ms",
		fillIn(`input[data-config="retention.ms"]`, "7200000"),
		chromedp.Click(chromedp.CSS("#save-configs")))
	b.waitText("#flash", "Saved retention.ms")
	b.run("reject a bad config value",
		fillIn(`input[data-config="retention.ms"]`, "soon"),
		chromedp.Click(chromedp.CSS("#save-configs")))
	b.waitText("form .error", "ferry refused the config change")
	b.waitText("form .error", "HTTP 422")
	if st := uiGetJSON(t, node.URL+"/topics/orders-ui", &topic); st != http.StatusOK || len(topic.Partitions) != 4 {
		t.Fatalf("after adding a partition: %d partitions, want 4", len(topic.Partitions))
	}
	for _, c := range topic.Configs {
		if c.Name == "retention.ms" && c.Value != "7200000" {
			t.Fatalf("retention.ms = %q after the edit, want 7200000", c.Value)
		}
	}

	// Produce a record from the form and see it in the message browser.
	b.run("produce from the form",
		chromedp.Navigate(node.URL+"/ui/#/messages/orders-ui?partition=1"),
		chromedp.WaitVisible(chromedp.CSS("#produce-value")),
		choose("#produce-partition", "current"),
		chromedp.SendKeys(chromedp.CSS("#produce-key"), "k1"),
		fillIn("#produce-value", `{"greeting":"hello from the form","n":7}`),
		chromedp.Click(chromedp.CSS("#produce-send")),
		chromedp.WaitVisible(chromedp.CSS("#produce-result")))
	b.waitText("#produce-result", "partition 1 at offset 0")
	b.waitText("table.records tbody", `"greeting": "hello from the form"`)
	b.waitText("table.records tbody", "k1")
	var read struct {
		Records []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"records"`
	}
	uiGetJSON(t, node.URL+"/kafka/orders-ui/partitions/1/records?offset=0", &read)
	if len(read.Records) != 1 || read.Records[0].Key != "k1" || !strings.Contains(string(read.Records[0].Value), "hello from the form") {
		t.Fatalf("partition 1 after the form: %+v", read.Records)
	}
	b.screenshot("messages")

	// Live tail: a record produced elsewhere appears without reloading.
	b.run("start the live tail", chromedp.Click(chromedp.CSS("#msg-live")))
	b.waitText("p.live", "waiting")
	restCall(t, http.MethodPost, node.URL+"/kafka/orders-ui", "application/json",
		"", `{"records":[{"partition":1,"value":{"tail":"arrived live"}}]}`)
	b.waitText("table.records tbody", "arrived live")
	b.run("stop the live tail", chromedp.Click(chromedp.CSS("#msg-live")))

	// Bytes render as hex on request.
	b.run("show values as hex", choose("#msg-show", "hex"))
	b.waitText("table.records tbody", "7b 22") // {"

	// Browse from a point in time: both records are newer than the epoch.
	b.run("browse from a time",
		choose("#msg-show", "auto"),
		choose("#msg-from", "timestamp"),
		chromedp.WaitVisible(chromedp.CSS("#msg-time")),
		fillIn("#msg-time", "2001-01-01T00:00:00"),
		chromedp.Click(chromedp.CSS("#msg-load")))
	b.waitText("table.records caption", "2 message(s) from partition 1")

	// Delete through the confirmation that asks for the name.
	b.run("open the delete confirmation",
		chromedp.Navigate(node.URL+"/ui/#/topics"),
		chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Delete topic orders-ui"]`)),
		chromedp.Click(chromedp.CSS(`button[aria-label="Delete topic orders-ui"]`)),
		chromedp.WaitVisible(chromedp.CSS("dialog[open] input")),
		chromedp.SendKeys(chromedp.CSS("dialog[open] input"), "orders"))
	if !eval[bool](b, "read the delete button", `document.querySelector('dialog[open] button.danger').disabled`) {
		t.Fatal("the delete button is enabled before the full topic name is typed")
	}
	b.run("type the rest of the name", chromedp.SendKeys(chromedp.CSS("dialog[open] input"), "-ui"))
	b.screenshot("topics-delete-confirm")
	b.run("confirm the delete",
		chromedp.Click(chromedp.CSS("dialog[open] button.danger")),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-topic="orders-ui"]`)))
	if st := uiGetJSON(t, node.URL+"/topics/orders-ui", nil); st != http.StatusNotFound {
		t.Fatalf("GET /topics/orders-ui after delete = %d, want 404", st)
	}

	// The overview turns ferry's byte counters (/metrics) into rates; it
	// refreshes every 5 s, so the second sample gives a figure.
	b.run("open the overview again", chromedp.Navigate(node.URL+"/ui/#/"), chromedp.WaitVisible(chromedp.CSS("#overview-stats")))
	b.waitText("#overview-stats .rate", "/s")
	restCall(t, http.MethodPost, node.URL+"/kafka/rates", "application/json", "", `{"payload":"`+strings.Repeat("x", 4000)+`"}`)
	b.run("wait for a bytes-in rate above zero", chromedp.Poll[chromedp.Void](
		`/[1-9]/.test(document.querySelector('#overview-stats .rate .stat-value').textContent)`,
		chromedp.WithPollingTimeout(uiTimeout)))
	b.screenshot("overview-rates")
}

// TestUIModules runs the page's pure functions in the browser, where they run.
func TestUIModules(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	b.run("open the page", chromedp.Navigate(node.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#overview-stats")))
	cases := []struct{ expr, want string }{
		{`(await import('./js/topics.js')).validateTopicName('orders.v1_a-b')`, ``},
		{`(await import('./js/topics.js')).validateTopicName('')`, `Enter a topic name.`},
		{`(await import('./js/topics.js')).validateTopicName('..')`, `A topic cannot be named "." or "..".`},
		{`(await import('./js/topics.js')).validateTopicName('x'.repeat(250))`, `A topic name has at most 249 characters; this one has 250.`},
		{`(await import('./js/topics.js')).validateTopicName('a/b c')`, `Only letters, digits, ".", "_" and "-" are allowed; remove "/", the space.`},
		{`(await import('./js/topics.js')).validateTopicName('x'.repeat(249))`, ``},
		{`JSON.stringify((await import('./js/topics.js')).topicStats({partitions: [
			{leader: 0, replicas: [0, 1], isr: [0], log_start_offset: 2, high_watermark: 10, size_bytes: 100},
			{leader: -1, replicas: [1], isr: [], log_start_offset: 0, high_watermark: 0, size_bytes: 0}]}))`,
			`{"partitions":2,"size":100,"messages":8,"under":2,"offline":1}`},
		{`JSON.stringify((await import('./js/overview.js')).byteTotals((await import('./js/overview.js')).parseMetrics(
			'# TYPE ferry_topic_bytes_in_total counter\nferry_topic_bytes_in_total{topic="a"} 10\nferry_topic_bytes_in_total{topic="b"} 5 1700000000\nferry_topic_bytes_out_total{topic="a"} 7\n')))`,
			`{"inBytes":15,"outBytes":7}`},
		{`JSON.stringify((await import('./js/overview.js')).byteTotals((await import('./js/overview.js')).parseMetrics('go_goroutines 7\n')))`,
			`{"inBytes":null,"outBytes":null}`},
		{`(await import('./js/topics.js')).replicaList({replicas: [0, 1, 2], isr: [0, 2]}).querySelector('.oos').textContent`, `1 (out of sync)`},
		{`(await import('./js/topics.js')).replicaList({replicas: [0, 1], isr: [0, 1]}).querySelectorAll('.oos').length`, `0`},
		{`(await import('./js/messages.js')).toHex((await import('./js/messages.js')).bytesOf('AAH/', 'base64'))`, `00 01 ff`},
		{`(await import('./js/messages.js')).toBase64((await import('./js/messages.js')).bytesOf('hi', 'string'))`, `aGk=`},
		{`(await import('./js/messages.js')).toHex((await import('./js/messages.js')).bytesOf({"a":1}, ''))`, `7b 22 61 22 3a 31 7d`},
		{`(await import('./js/messages.js')).renderBytes('AAH/', 'base64', 'auto').textContent`, `00 01 ff binary · hex`},
		{`(await import('./js/messages.js')).renderBytes({"a":[1]}, '', 'auto').textContent`, "{\n  \"a\": [\n    1\n  ]\n}"},
		{`(await import('./js/schemas.js')).reasonText("{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'the field has no default', path:'/fields/x'}")`, `the field has no default`},
		{`(await import('./js/schemas.js')).reasonText("{oldSchemaVersion: 1}")`, ``},
		{`(await import('./js/schemas.js')).lineDiff(['a','b','c'], ['a','x','c','d']).map((r) => r.kind).join(' ')`, `same change same add`},
		{`(await import('./js/schemas.js')).lineDiff(['a','b'], []).map((r) => r.kind).join(' ')`, `del del`},
		{`(await import('./js/app.js')).parseHash('#/messages/a%2Fb?partition=2').segments.join('|')`, `messages|a/b`},
	}
	for _, c := range cases {
		got := evalAsync[string](b, c.expr, `(async () => String(%s))()`)
		if got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.expr, got, c.want)
		}
	}
}

// TestUIKeyboardAndProgress: the main flow works from the keyboard with a
// visible focus, Escape cancels the confirmation, and a slow call shows
// progress until it ends.
func TestUIKeyboardAndProgress(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(node.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Fatalf("GET /ui: %d Location %q, want 301 to /ui/", res.StatusCode, res.Header.Get("Location"))
	}

	b.run("open the topics page", chromedp.Navigate(node.URL+"/ui/#/topics"), chromedp.WaitVisible(chromedp.CSS("#new-topic")))
	for i := 0; ; i++ {
		if eval[string](b, "read the focus", `document.activeElement.id`) == "new-topic" {
			break
		}
		if i == 40 {
			t.Fatal("Tab never reached the New topic button")
		}
		b.run("press Tab", chromedp.KeyEvent("\t"))
	}
	if outline := eval[string](b, "read the focus style", `getComputedStyle(document.activeElement).outlineStyle`); outline == "none" {
		t.Fatal("the focused button shows no outline")
	}
	b.run("open the form with Enter and type a name", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS("#topic-name")))
	if id := eval[string](b, "read the focus", `document.activeElement.id`); id != "topic-name" {
		t.Fatalf("focus is on %q after opening the form, want the name field", id)
	}
	b.run("create with Enter",
		chromedp.KeyEvent("kb-topic"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="kb-topic"]`)))

	b.run("open the delete confirmation from the keyboard",
		chromedp.Focus(chromedp.CSS(`button[aria-label="Delete topic kb-topic"]`)), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("dialog[open] input")))
	if id := eval[string](b, "read the focus", `document.activeElement.closest('dialog') ? 'dialog' : document.activeElement.id`); id != "dialog" {
		t.Fatalf("focus is on %q with the dialog open", id)
	}
	b.run("cancel with Escape", chromedp.KeyEvent("\x1b"), chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	if st := uiGetJSON(t, node.URL+"/topics/kb-topic", nil); st != http.StatusOK {
		t.Fatalf("the topic is gone after Escape: %d", st)
	}

	// A call that takes a while (a 3 s long poll) shows the progress bar and
	// "Working…" after 250 ms, and hides them when it ends.
	b.run("start a slow call", chromedp.Evaluate[chromedp.Void](
		`import('./js/api.js').then((m) => { window.slowCall = m.get('/kafka/kb-topic/partitions/0/records?offset=latest&timeout_ms=3000'); })`,
		chromedp.EvalAwaitPromise),
		chromedp.WaitVisible(chromedp.CSS("#progress")))
	b.waitText("#busy", "Working")
	b.run("wait for the end of the slow call", chromedp.WaitNotVisible(chromedp.CSS("#progress")))
	if busy := eval[string](b, "read the status", `document.querySelector('#busy').textContent`); busy != "" {
		t.Fatalf("status still says %q", busy)
	}

	// The filter narrows the list and says so.
	b.run("filter the list", chromedp.SendKeys(chromedp.CSS("#topic-filter"), "nothing-like-this"))
	b.waitText("#view", "No topic matches the filter.")
	b.waitText("#view", "0 of 2 topics match")
}
