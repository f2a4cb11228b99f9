package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

func TestCreateTopicWithZeroCountsIs422(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"z","partitions":0}`).wantError(t, 422, codeInvalidPartitions)
	e.do(t, "POST", "/topics", typeJSON, `{"name":"z","replication_factor":0}`).wantError(t, 422, codeInvalidReplication)
	if a := e.do(t, "GET", "/topics/z", "", ""); a.status != 404 {
		t.Fatalf("z exists after refused creates: %d %s", a.status, a.body)
	}
	for _, body := range []string{`{"name":"d1"}`, `{"name":"d2","partitions":-1,"replication_factor":-1}`} {
		if a := e.do(t, "POST", "/topics", typeJSON, body); a.status != 201 {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
}

func TestReadRecordsAlwaysHaveHeaders(t *testing.T) {
	e := newTestEnv(t)
	e.do(t, "POST", "/kafka/h", typeJSON, `{"records":[{"value":1},{"value":2,"headers":{"k":"v"}}]}`)
	a := e.do(t, "GET", "/kafka/h/partitions/0/records", "", "")
	var ans struct{ Records []map[string]json.RawMessage }
	a.decode(t, &ans)
	if len(ans.Records) != 2 {
		t.Fatalf("%s", a.body)
	}
	if h, ok := ans.Records[0]["headers"]; !ok || string(h) != "{}" {
		t.Errorf("record without headers: headers %q present %v; want {}", h, ok)
	}
	if h := ans.Records[1]["headers"]; string(h) != `{"k":"v"}` {
		t.Errorf("headers %s", h)
	}
}

// JSON-looking bytes holding invalid UTF-8 must not be echoed raw: the
// answer would not be UTF-8 (and so not JSON) any more.
func TestInvalidUTF8IsNotEchoedRaw(t *testing.T) {
	e := newTestEnv(t)
	value := []byte("\"\xff\xfe\"")
	_, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "u",
		Records: []server.ProduceRecord{{Partition: 0, Record: records.Record{Key: []byte("k\xff"), Value: value}}}})
	if err != nil {
		t.Fatal(err)
	}
	a := e.do(t, "GET", "/kafka/u/partitions/0/records", "", "")
	if !utf8.Valid(a.body) {
		t.Fatalf("answer is not UTF-8: %q", a.body)
	}
	var ans readAnswer
	a.decode(t, &ans)
	rec := ans.Records[0]
	if rec.ValueEncoding != encodingBase64 || rec.KeyEncoding != encodingBase64 {
		t.Errorf("encodings %q/%q, want base64: %s", rec.KeyEncoding, rec.ValueEncoding, a.body)
	}
	if raw, _ := renderedBytes(rec.Value, rec.ValueEncoding); string(raw) != string(value) {
		t.Errorf("value round trip: %q", raw)
	}
}

func TestAnswerThatFailsToEncodeIsAnError(t *testing.T) {
	rec := &bufferedResponse{header: map[string][]string{}, status: 200}
	writeJSON(rec, 200, typeJSON, map[string]any{"bad": json.RawMessage("{not json")})
	if rec.status != 500 || !strings.Contains(rec.body.String(), `"error_code":50001`) {
		t.Errorf("%d %s; want a 500 error body", rec.status, rec.body.String())
	}
}
