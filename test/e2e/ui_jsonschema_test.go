package e2e

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestUIJSONSchema: the admin page registers a JSON schema (type chosen
// from the types the registry serves), shows its type, checks a candidate
// with JSON Schema's rules and explains the refusal, and the message page
// produces a JSON Schema record and reads it back decoded.
func TestUIJSONSchema(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)

	b.run("register a JSON schema",
		chromedp.Navigate(node.URL+"/ui/#/schemas"),
		chromedp.WaitReady(chromedp.CSS(`#new-schema-type option[value="JSON"]`)),
		chromedp.SendKeys(chromedp.CSS("#new-subject"), "events-value"),
		choose("#new-schema-type", "JSON"),
		chromedp.Click(chromedp.CSS("#register-subject")),
		chromedp.WaitVisible(chromedp.CSS("#schema-text")))
	b.waitText("#subject-type", "JSON Schema")
	b.waitText("#schema-text", `"required": [`)

	// BACKWARD: a required property without a default breaks old data.
	incompatible := `{"type":"object","properties":{"id":{"type":"integer"},"kind":{"type":"string"}},"required":["id","kind"]}`
	b.run("try an incompatible version",
		fillIn("#candidate", incompatible),
		chromedp.Click(chromedp.CSS("#register-version")),
		chromedp.WaitVisible(chromedp.CSS("#not-registered")))
	b.waitText("#verdict", "Incompatible with version 1 under BACKWARD")
	b.waitText("#verdict .reasons", "#/properties/kind")
	b.screenshot("jsonschema-incompatible")

	compatible := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object","properties":{"id":{"type":"number"}},"required":["id"]}`
	b.run("register a compatible version",
		fillIn("#candidate", compatible),
		chromedp.Click(chromedp.CSS("#register-version")))
	b.waitText("#versions-title", "Versions (2)")
	b.waitText("#diff-changes", "TYPE_EXTENDED")

	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"events","partitions":1}`)
	b.run("produce a JSON Schema record",
		chromedp.Navigate(node.URL+"/ui/#/messages/events"),
		chromedp.WaitVisible(chromedp.CSS("#produce-value")),
		choose("#produce-format", "jsonschema"),
		chromedp.WaitReady(chromedp.CSS(`#produce-schema option[value="2"]`)),
		fillIn("#produce-value", `{"id": 4.5}`),
		chromedp.Click(chromedp.CSS("#produce-send")),
		chromedp.WaitVisible(chromedp.CSS("#produce-result")))
	b.waitText("table.records tbody", "Confluent wire format · schema 2")
	b.run("decode JSON Schema", chromedp.Click(chromedp.CSS("#msg-jsonschema")), chromedp.Click(chromedp.CSS("#msg-load")))
	b.waitText("table.records tbody", `"id": 4.5`)
	b.waitText("table.records tbody", "jsonschema · schema 2")
	b.screenshot("messages-jsonschema")
	b.run("a record the schema refuses",
		fillIn("#produce-value", `{"name": "no id"}`),
		chromedp.Click(chromedp.CSS("#produce-send")))
	b.waitText("form .error", "HTTP 422")
	b.waitText("form .error", "id")

	got := evalAsync[string](b, `(await import('./js/schemas.js')).reasonText("{errorType:\"TYPE_CHANGED\", description:\"A type at path '#/x' is different\"}")`, `(async () => String(%s))()`)
	if got != "A type at path '#/x' is different" {
		t.Fatalf("reasonText of a JSON Schema message: %q", got)
	}
}
