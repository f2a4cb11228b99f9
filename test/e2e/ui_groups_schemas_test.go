package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// uiGroupDetail is the part of GET /groups/{g} the tests check.
type uiGroupDetail struct {
	State   string `json:"state"`
	Offsets []struct {
		Partition int32 `json:"partition"`
		Committed int64 `json:"committed_offset"`
		Lag       int64 `json:"lag"`
	} `json:"offsets"`
}

func TestUIConsumerGroup(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"events","partitions":1}`)
	restCall(t, http.MethodPost, node.URL+"/kafka/events", "application/x-ndjson", "", "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n")

	// An HTTP consumer in group billing reads and commits up to offset 1.
	const v2 = "application/vnd.kafka.v2+json"
	st, body := restCall(t, http.MethodPost, node.URL+"/consumers/billing", v2, "", `{"name":"c1","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false"}`)
	if st != http.StatusOK {
		t.Fatalf("create consumer: %d %s", st, body)
	}
	base := node.URL + "/consumers/billing/instances/c1"
	if st, body := restCall(t, http.MethodPost, base+"/subscription", v2, "", `{"topics":["events"]}`); st != http.StatusNoContent {
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
	if st, body := restCall(t, http.MethodPost, base+"/offsets", v2, "", `{"offsets":[{"topic":"events","partition":0,"offset":1}]}`); st != http.StatusOK {
		t.Fatalf("commit: %d %s", st, body)
	}

	b.run("open the groups list",
		chromedp.Navigate(node.URL+"/ui/#/groups"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-group="billing"]`)))
	b.waitText(`tr[data-group="billing"]`, "Stable")
	b.screenshot("groups")
	b.run("open the group", chromedp.Click(chromedp.CSS(`tr[data-group="billing"] a`)), chromedp.WaitVisible(chromedp.CSS("#group-stats")))
	b.waitText("#group-stats", "Stable")
	b.waitText("table.group-offsets tbody", "events")
	b.waitText("table.group-offsets tbody td:nth-child(3)", "2") // committed: the next offset to read
	b.waitText("table.group-offsets tbody td.lso", "5")          // no open transaction: the high watermark
	b.waitText("table.group-offsets tbody td:nth-child(6)", "3") // lag: 5 - 2
	b.waitText("#reset-blocked", "only while the group is Empty")
	if !eval[bool](b, "read the reset button", `document.querySelector('#reset-submit').disabled`) {
		t.Fatal("reset is offered for a Stable group")
	}
	b.screenshot("group-detail")

	// Once the consumer leaves, the group is Empty and its offsets can be reset.
	if st, body := restCall(t, http.MethodDelete, base, v2, "", ""); st != http.StatusNoContent {
		t.Fatalf("delete consumer: %d %s", st, body)
	}
	b.run("refresh", chromedp.Click(chromedp.Search(`//button[text()="Refresh"]`)))
	b.waitText("#group-stats", "Empty")
	b.run("preview a reset to earliest",
		choose("#reset-to", "earliest"),
		chromedp.Click(chromedp.CSS("#reset-preview")),
		chromedp.WaitVisible(chromedp.CSS("#reset-result")))
	b.waitText("#reset-result", "nothing is committed yet")
	var g uiGroupDetail
	uiGetJSON(t, node.URL+"/groups/billing", &g)
	if len(g.Offsets) != 1 || g.Offsets[0].Committed != 2 {
		t.Fatalf("the preview committed: %+v", g)
	}
	b.run("reset to earliest", chromedp.Click(chromedp.CSS("#reset-submit")))
	b.waitText("table.group-offsets tbody td:nth-child(6)", "5") // lag from offset 0
	uiGetJSON(t, node.URL+"/groups/billing", &g)
	if g.State != "Empty" || len(g.Offsets) != 1 || g.Offsets[0].Committed != 0 || g.Offsets[0].Lag != 5 {
		t.Fatalf("after the reset: %+v", g)
	}
	b.screenshot("group-reset")
}

func TestUISchemaRegistry(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)

	// Register version 1 from the new-subject form.
	b.run("register a schema",
		chromedp.Navigate(node.URL+"/ui/#/schemas"),
		chromedp.WaitVisible(chromedp.CSS("#new-subject")),
		chromedp.SendKeys(chromedp.CSS("#new-subject"), "orders-value"),
		chromedp.Click(chromedp.CSS("#register-subject")),
		chromedp.WaitVisible(chromedp.CSS("#schema-text")))
	b.waitText("#schema-text", `"name": "Order"`)

	// An incompatible candidate (a new field without a default, under
	// BACKWARD) gets the registry's verdict with the reason, and is not saved.
	incompatible := `{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string"}]}`
	b.run("try an incompatible version",
		fillIn("#candidate", incompatible),
		chromedp.Click(chromedp.CSS("#register-version")),
		chromedp.WaitVisible(chromedp.CSS("#not-registered")))
	b.waitText("#verdict", "Incompatible with version 1 under BACKWARD")
	b.waitText("#verdict .reasons", "customer")
	b.screenshot("schema-incompatible")
	var versions []int
	uiGetJSON(t, node.URL+"/subjects/orders-value/versions", &versions)
	if len(versions) != 1 {
		t.Fatalf("versions after the refused candidate: %v, want [1]", versions)
	}

	// The registry's own refusal is shown in words too: the same schema
	// through the register form, which does not check first.
	b.run("register the incompatible schema directly",
		chromedp.Navigate(node.URL+"/ui/#/schemas"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-subject="orders-value"]`)),
		chromedp.SendKeys(chromedp.CSS("#new-subject"), "orders-value"),
		fillIn("#new-schema", incompatible),
		chromedp.Click(chromedp.CSS("#register-subject")))
	b.waitText("form .error", "The registry refused the schema")
	b.waitText("form .error", "HTTP 409")
	b.waitText("form .error", "customer")
	b.screenshot("schemas")

	// A compatible version (the field has a default) is registered, and the
	// diff lists the change side by side.
	compatible := `{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string","default":"anonymous"}]}`
	b.run("register a compatible version",
		chromedp.Navigate(node.URL+"/ui/#/schemas/orders-value"),
		chromedp.WaitVisible(chromedp.CSS("#candidate")),
		fillIn("#candidate", compatible),
		chromedp.Click(chromedp.CSS("#check-compat")))
	b.waitText("#verdict", "Compatible with version 1 under BACKWARD")
	b.run("save it", chromedp.Click(chromedp.CSS("#register-version")))
	b.waitText("#versions-title", "Versions (2)")
	b.waitText("#diff-changes", "FIELD_ADDED")
	b.waitText("#schema-diff", `"default": "anonymous"`)
	uiGetJSON(t, node.URL+"/subjects/orders-value/versions", &versions)
	if len(versions) != 2 {
		t.Fatalf("versions: %v, want [1 2]", versions)
	}
	b.run("scroll to the diff", chromedp.Evaluate[chromedp.Void](`document.querySelector('#diff-title').scrollIntoView()`))
	b.screenshot("schema-diff")

	// Produce an Avro record with the registered schema from the message
	// form, and read it back decoded through the registry.
	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"orders","partitions":1}`)
	b.run("produce an Avro record",
		chromedp.Navigate(node.URL+"/ui/#/messages/orders"),
		chromedp.WaitVisible(chromedp.CSS("#produce-value")),
		choose("#produce-format", "avro"),
		chromedp.WaitReady(chromedp.CSS(`#produce-schema option[value="2"]`)),
		fillIn("#produce-value", `{"id": 42, "customer": "ada"}`),
		chromedp.Click(chromedp.CSS("#produce-send")),
		chromedp.WaitVisible(chromedp.CSS("#produce-result")))
	b.waitText("#produce-result", "partition 0 at offset 0")
	b.waitText("table.records tbody", "Confluent wire format · schema 2") // without decoding: the bytes, in hex
	b.run("decode Avro", chromedp.Click(chromedp.CSS("#msg-avro")), chromedp.Click(chromedp.CSS("#msg-load")))
	b.waitText("table.records tbody", `"customer": "ada"`)
	b.waitText("table.records tbody", "avro · schema 2")
	b.screenshot("messages-avro")
	b.run("an Avro record that does not match the schema",
		fillIn("#produce-value", `{"id": "not a long"}`),
		chromedp.Click(chromedp.CSS("#produce-send")))
	b.waitText("form .error", "ferry refused the record")
	b.waitText("form .error", "HTTP 422")

	// Change the subject's compatibility level.
	b.run("back to the subject", chromedp.Navigate(node.URL+"/ui/#/schemas/orders-value"), chromedp.WaitVisible(chromedp.CSS("#subject-level")))
	b.run("change the level", choose("#subject-level", "NONE"), chromedp.Click(chromedp.CSS("#save-level")))
	b.waitText("#flash", "now checks NONE compatibility")
	var cfg struct {
		Level string `json:"compatibilityLevel"`
	}
	_, raw := restCall(t, http.MethodGet, node.URL+"/config/orders-value", "", "", "")
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.Level != "NONE" {
		t.Fatalf("GET /config/orders-value = %s", raw)
	}
}
