package e2e

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestUIProtobuf: the admin page registers a Protobuf schema, shows its
// type, checks a candidate with Confluent's Protobuf rules and explains the
// refusal, lists the semantic changes between versions, and the message
// page produces a Protobuf record and reads it back decoded.
func TestUIProtobuf(t *testing.T) {
	b := newBrowser(t)
	node := harness.Start(t)

	b.run("register a Protobuf schema",
		chromedp.Navigate(node.URL+"/ui/#/schemas"),
		chromedp.WaitReady(chromedp.CSS(`#new-schema-type option[value="PROTOBUF"]`)),
		chromedp.SendKeys(chromedp.CSS("#new-subject"), "orders-value"),
		choose("#new-schema-type", "PROTOBUF"),
		chromedp.Click(chromedp.CSS("#register-subject")),
		chromedp.WaitVisible(chromedp.CSS("#schema-text")))
	b.waitText("#subject-type", "Protobuf")
	b.waitText("#schema-text", "message Order {")

	// BACKWARD: int64 → string is another wire kind (FIELD_SCALAR_KIND_CHANGED).
	incompatible := "syntax = \"proto3\";\npackage com.example;\n\nmessage Order {\n  string id = 1;\n}\n"
	b.run("try an incompatible version",
		fillIn("#candidate", incompatible),
		chromedp.Click(chromedp.CSS("#register-version")),
		chromedp.WaitVisible(chromedp.CSS("#not-registered")))
	b.waitText("#verdict", "Incompatible with version 1 under BACKWARD")
	b.waitText("#verdict .reasons", "#/Order/1")
	b.waitText("#verdict", "FIELD_SCALAR_KIND_CHANGED")
	b.screenshot("protobuf-incompatible")

	compatible := "syntax = \"proto3\";\npackage com.example;\n\nmessage Order {\n  int64 id = 1;\n  string note = 2;\n}\n"
	b.run("register a compatible version",
		fillIn("#candidate", compatible),
		chromedp.Click(chromedp.CSS("#register-version")))
	b.waitText("#versions-title", "Versions (2)")
	b.waitText("#diff-changes", "FIELD_ADDED")
	b.waitText("#diff-changes", "#/Order/2")
	b.waitText("#schema-diff", "string note = 2;")

	restCall(t, http.MethodPost, node.URL+"/topics", "application/json", "", `{"name":"orders","partitions":1}`)
	b.run("produce a Protobuf record",
		chromedp.Navigate(node.URL+"/ui/#/messages/orders"),
		chromedp.WaitVisible(chromedp.CSS("#produce-value")),
		choose("#produce-format", "protobuf"),
		chromedp.WaitReady(chromedp.CSS(`#produce-schema option[value="2"]`)),
		fillIn("#produce-value", `{"id": "7", "note": "gift"}`),
		chromedp.Click(chromedp.CSS("#produce-send")),
		chromedp.WaitVisible(chromedp.CSS("#produce-result")))
	b.waitText("table.records tbody", "Confluent wire format · schema 2")
	b.run("decode Protobuf", chromedp.Click(chromedp.CSS("#msg-protobuf")), chromedp.Click(chromedp.CSS("#msg-load")))
	b.waitText("table.records tbody", `"note": "gift"`)
	b.waitText("table.records tbody", "protobuf · schema 2")
	b.screenshot("messages-protobuf")
	b.run("a record the schema refuses",
		fillIn("#produce-value", `{"nope": 1}`),
		chromedp.Click(chromedp.CSS("#produce-send")))
	b.waitText("form .error", "HTTP 422")
	b.waitText("form .error", "nope")

	// A schema importing another subject's file, registered with references.
	status, body := restCall(t, http.MethodPost, node.URL+"/subjects/money/versions", "application/vnd.schemaregistry.v1+json", "",
		`{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";\npackage shop;\nmessage Money { string currency = 1; int64 units = 2; }\n"}`)
	if status != http.StatusOK {
		t.Fatalf("register money: %d %s", status, body)
	}
	b.run("references that are not a list are refused in the form",
		chromedp.Navigate(node.URL+"/ui/#/schemas"),
		chromedp.WaitReady(chromedp.CSS(`#new-schema-type option[value="PROTOBUF"]`)),
		chromedp.SendKeys(chromedp.CSS("#new-subject"), "invoices-value"),
		choose("#new-schema-type", "PROTOBUF"),
		fillIn("#new-schema", "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\n\nmessage Invoice {\n  Money total = 1;\n}\n"),
		fillIn("#new-references", `{"name": "shop/money.proto"}`),
		chromedp.Click(chromedp.CSS("#register-subject")))
	b.waitText("#new-references-msg", "JSON array")
	b.run("register with a reference",
		fillIn("#new-references", `[{"name": "shop/money.proto", "subject": "money", "version": 1}]`),
		chromedp.Click(chromedp.CSS("#register-subject")),
		chromedp.WaitVisible(chromedp.CSS("#schema-text")))
	b.waitText("#subject-type", "Protobuf")
	b.waitText("#versions-title", "Versions (1)")
	b.waitText("main", "references shop/money.proto → money v1")
}
