package api

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func decodeForTest(body []byte, format bodyFormat) (*produceState, error) {
	st := new(produceState)
	st.reset("t")
	st.body.Write(body)
	return st, st.decode(format)
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	valid := []string{
		`1`, `-0.5e+3`, `"a\"b\u00e9\ud83d\ude00"`, `[ 1 , { "a" : [ ] } ]`, `{"records":{"not":"an array"}}`,
		`{"x":1}`, `true`, `null`, "\t\"x\"\n",
	}
	for _, body := range valid {
		st, err := decodeForTest([]byte(body), formatJSON)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		var want bytes.Buffer
		json.Compact(&want, []byte(body))
		if got := st.req.Records[0].Record.Value; !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q compacts to %q, encoding/json says %q", body, got, want.Bytes())
		}
	}
	invalid := []string{
		`{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `-`, `"\x"`, "\"\x01\"", `tru`, `nul`, `[1 2]`, `{"a" 1}`, `1 2`,
		`{"records":[1]}`, `{"records":[{"partition":1.5}]}`, `{"records":[{"headers":{"h":1}}]}`,
		string(bytes.Repeat([]byte("["), maxDepth+10)),
	}
	for _, body := range invalid {
		if _, err := decodeForTest([]byte(body), formatJSON); err == nil {
			t.Fatalf("%q was accepted", body)
		}
	}
}

func TestScannerUnescapesStringKeys(t *testing.T) {
	st, err := decodeForTest([]byte(`{"records":[{"key":"a\tb\u00e9\ud83d\ude00\/","value":1}]}`), formatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(st.req.Records[0].Record.Key); got != "a\tbé😀/" {
		t.Fatalf("key %q", got)
	}
}

// FuzzScanBody checks the produce-body scanner against encoding/json: it
// never accepts invalid JSON, never panics, and stores values exactly as
// json.Compact would.
func FuzzScanBody(f *testing.F) {
	for _, seed := range []string{
		`{"records":[{"key":"k","value":{"a":[1,2,{"b":null}]},"partition":0,"headers":{"h":"v"},"timestamp":5}]}`,
		`{"records":[{"value":" spaced \" string "}, {"key":{"k":1},"value":[ 1 , 2 ]}]}`,
		`[1, "x", {"y": false}]`, `"\ud800"`, `{"a": {"records": 1}}`, `-1.5E-7`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := decodeForTest(body, formatJSON)
		valid := json.Valid(body)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		trimmed := bytes.TrimSpace(body)
		if valid && len(trimmed) > 0 && trimmed[0] != '{' {
			if err != nil {
				t.Fatalf("rejected valid JSON %q: %v", body, err)
			}
			var want bytes.Buffer
			json.Compact(&want, body)
			if !bytes.Equal(st.req.Records[0].Record.Value, want.Bytes()) {
				t.Fatalf("%q stored as %q, want %q", body, st.req.Records[0].Record.Value, want.Bytes())
			}
		}
		if err != nil {
			return
		}
		for _, r := range st.req.Records {
			if r.Record.Value == nil {
				continue
			}
			var want bytes.Buffer
			if json.Compact(&want, r.Record.Value) != nil || !bytes.Equal(want.Bytes(), r.Record.Value) {
				t.Fatalf("value %q is not compact JSON", r.Record.Value)
			}
			if utf8.Valid(body) && r.Record.Key != nil && !utf8.Valid(r.Record.Key) {
				t.Fatalf("key %q from valid UTF-8 is not UTF-8", r.Record.Key)
			}
		}
	})
}

func TestMediaTypeMatchesParseMediaType(t *testing.T) {
	for ct, want := range map[string]string{
		"application/json":                   "application/json",
		"application/json; charset=utf-8":    "application/json",
		"Application/JSON":                   "application/json",
		"application/vnd.kafka.json.v2+json": "application/vnd.kafka.json.v2+json",
		"application/":                       "",
		"/json":                              "",
		"application json":                   "",
	} {
		got, err := mediaType(ct)
		if (err != nil) != (want == "") || (err == nil && got != want) {
			t.Fatalf("%q: %q %v, want %q", ct, got, err, want)
		}
	}
}

// BenchmarkDecodeProduceBody is the scanner's share of
// BenchmarkProduceHandler: the bench script's body of 10 records.
func BenchmarkDecodeProduceBody(b *testing.B) {
	body := []byte(benchBody())
	st := new(produceState)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		st.reset("t")
		st.body.Write(body)
		if err := st.decode(formatJSON); err != nil {
			b.Fatal(err)
		}
	}
}
