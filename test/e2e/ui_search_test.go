package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// The message browser on the admin page (issue 28): search across
// partitions with a JSON field filter, continue a budgeted scan, the
// export link's download, republishing a chosen record, and a group's lag
// over time as a chart.

func TestUISearchExportRepublish(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"orders","partitions":2}`)
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"retry","partitions":1}`)
	var recs []string
	for i := range 20 {
		recs = append(recs, fmt.Sprintf(`{"key":"k%d","partition":%d,"value":{"n":%d,"user":{"id":%d}},"headers":{"src":"ui-%d"}}`, i, i%2, i, i%4, i))
	}
	if st, body := restCall(t, http.MethodPost, node.URL+"/kafka/orders", "application/json", "", `{"records":[`+strings.Join(recs, ",")+`]}`); st != http.StatusOK {
		t.Fatalf("produce: %d %s", st, body)
	}

	// A JSON field search: records 2, 6, 10, 14, 18, newest first.
	b.run("search by a JSON field",
		chromedp.Navigate(node.URL+"/ui/#/search/orders"),
		chromedp.WaitVisible(chromedp.CSS("#search-json")),
		fillIn("#search-json", "$.user.id == 2"),
		chromedp.Click(chromedp.CSS("#search-run")),
		chromedp.WaitVisible(chromedp.CSS("table.search-results tbody tr[data-record]")))
	b.waitText("#search-progress", "Every record in range was scanned")
	if got := eval[string](b, "read the rows", `[...document.querySelectorAll('table.search-results tbody tr')].map(r => r.dataset.record).join(' ')`); got != "0:9 0:7 0:5 0:3 0:1" {
		t.Fatalf("rows (partition:offset) %q, want records 18, 14, 10, 6, 2", got)
	}
	b.screenshot("search")

	// The export link carries the filters; following it downloads JSON
	// lines of those five records and a summary line.
	href := eval[string](b, "read the export link", `document.querySelector('#export-jsonl').href`)
	if !strings.Contains(href, "/kafka/orders/export?") || !strings.Contains(href, "json=%24.user.id+%3D%3D+2") {
		t.Fatalf("export link %s", href)
	}
	got := evalAsync[string](b, `(async () => { const r = await fetch(document.querySelector('#export-jsonl').href);
		return r.headers.get('Content-Disposition') + '\n' + await r.text(); })()`, "%s")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if !strings.HasPrefix(lines[0], `attachment; filename="orders-`) || len(lines) != 7 || !strings.Contains(lines[6], `"done":true`) {
		t.Fatalf("export download:\n%s", got)
	}
	if eval[string](b, "read the CSV link", `document.querySelector('#export-csv').getAttribute('download')`) != "" {
		t.Fatal("the CSV link is not a download")
	}

	// Republish the newest match (record 18) to retry.
	b.run("republish one record",
		chromedp.Click(chromedp.CSS(`tr[data-record="0:9"] input[type=checkbox]`)),
		choose("#republish-target", "retry"),
		chromedp.Click(chromedp.CSS("#republish-run")),
		chromedp.WaitVisible(chromedp.CSS("#republish-result")))
	b.waitText("#republish-result", "Republished 1 record(s) to retry")
	var read struct {
		Records []struct {
			Key     string            `json:"key"`
			Value   json.RawMessage   `json:"value"`
			Headers map[string]string `json:"headers"`
		} `json:"records"`
	}
	uiGetJSON(t, node.URL+"/kafka/retry/partitions/0/records", &read)
	if len(read.Records) != 1 || read.Records[0].Key != "k18" || read.Records[0].Headers["src"] != "ui-18" || !strings.Contains(string(read.Records[0].Value), `"n":18`) {
		t.Fatalf("retry holds %+v", read.Records)
	}
	b.screenshot("republished")

	// A budget of 6 records per request: the scan stops with a cursor and
	// continues where it stopped, until every record was scanned once.
	b.run("search with a small budget",
		fillIn("#search-json", ""),
		fillIn("#search-budget", "6"),
		chromedp.Click(chromedp.CSS("#search-run")))
	b.waitText("#search-progress", "scan budget (records) is spent")
	for i := 0; i < 2; i++ {
		b.run("continue scanning", chromedp.Click(chromedp.CSS("#search-more")))
		b.waitText("#search-progress", fmt.Sprintf("%d match(es) shown", 6*(i+2)))
	}
	b.run("the last page", chromedp.Click(chromedp.CSS("#search-more")))
	b.waitText("#search-progress", "Every record in range was scanned")
	if got := eval[string](b, "read the rows", `(() => { const ids = [...document.querySelectorAll('table.search-results tbody tr')].map(r => r.dataset.record);
		return ids.length + ' ' + new Set(ids).size; })()`); got != "20 20" {
		t.Fatalf("rows after continuing: %s (count, distinct)", got)
	}

	// Only partition 1: the ten odd records.
	b.run("search one partition",
		fillIn("#search-budget", "10000"),
		fillIn("#search-partitions", "1"),
		chromedp.Click(chromedp.CSS("#search-run")))
	b.waitText("#search-progress", "10 match(es) shown")
	if got := eval[string](b, "read the partitions", `[...new Set([...document.querySelectorAll('table.search-results tbody tr')].map(r => r.dataset.record.split(':')[0]))].join()`); got != "1" {
		t.Fatalf("partitions shown: %q", got)
	}

	// A filter the server refuses is shown with its reason.
	b.run("a bad JSON path", fillIn("#search-json", "$.user[=="), chromedp.Click(chromedp.CSS("#search-run")))
	b.waitText("#view .error", "The search failed")
}

func TestUIGroupLagChart(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t, "--group-lag-sample-interval-ms", "300")
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"lagged","partitions":1}`)
	restCall(t, http.MethodPost, node.URL+"/kafka/lagged", "application/x-ndjson", "", "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n")

	const v2 = "application/vnd.kafka.v2+json"
	if st, body := restCall(t, http.MethodPost, node.URL+"/consumers/lagging", v2, "", `{"name":"c1","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`); st != http.StatusOK {
		t.Fatalf("create consumer: %d %s", st, body)
	}
	base := node.URL + "/consumers/lagging/instances/c1"
	if st, body := restCall(t, http.MethodPost, base+"/subscription", v2, "", `{"topics":["lagged"]}`); st != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", st, body)
	}
	deadline := time.Now().Add(uiTimeout)
	for {
		_, recs := restCall(t, http.MethodGet, base+"/records?timeout=1000", "", "application/vnd.kafka.json.v2+json", "")
		if strings.Contains(string(recs), `"offset"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer read nothing: %s", recs)
		}
	}
	if st, body := restCall(t, http.MethodPost, base+"/offsets", v2, "", `{"offsets":[{"topic":"lagged","partition":0,"offset":0}]}`); st != http.StatusOK {
		t.Fatalf("commit: %d %s", st, body)
	}

	b.run("open the group",
		chromedp.Navigate(node.URL+"/ui/#/groups/lagging"),
		chromedp.WaitVisible(chromedp.CSS("#lag-history svg.lag-chart")))
	b.waitText("#lag-caption", "Now 3") // 4 records, committed 1
	// The caption reads the lag now; the history samples it every 300 ms,
	// so the rise is in it only if a sample of 3 is taken first.
	harness.WaitFor(t, "a lag history sample of 3", uiTimeout, func() bool {
		var h struct {
			Samples []struct {
				Lag int64 `json:"lag"`
			} `json:"samples"`
		}
		uiGetJSON(t, node.URL+"/groups/lagging/lag/history", &h)
		return len(h.Samples) > 0 && h.Samples[len(h.Samples)-1].Lag == 3
	})
	// More records arrive: the chart, refreshed from the samples, shows the lag rise.
	restCall(t, http.MethodPost, node.URL+"/kafka/lagged", "application/x-ndjson", "", "{\"n\":5}\n{\"n\":6}\n{\"n\":7}\n")
	b.waitText("#lag-caption", "Now 6")
	b.run("wait for several samples", chromedp.Poll[chromedp.Void](
		`document.querySelector('#lag-history svg.lag-chart')?.dataset.points >= 4`, chromedp.WithPollingTimeout(uiTimeout)))
	var hist struct {
		IntervalMs int64 `json:"interval_ms"`
		Samples    []struct {
			Lag int64 `json:"lag"`
		} `json:"samples"`
	}
	uiGetJSON(t, node.URL+"/groups/lagging/lag/history", &hist)
	if hist.IntervalMs != 300 || len(hist.Samples) < 3 || hist.Samples[len(hist.Samples)-1].Lag != 6 {
		t.Fatalf("history %+v", hist)
	}
	rose := false
	for i := 1; i < len(hist.Samples); i++ {
		rose = rose || hist.Samples[i-1].Lag == 3 && hist.Samples[i].Lag == 6
	}
	if !rose {
		t.Fatalf("no sample shows the lag rising from 3 to 6: %+v", hist.Samples)
	}
	b.screenshot("lag-chart")
}
