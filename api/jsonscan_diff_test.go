package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/records"
)

// referenceRecords decodes a POST /kafka/{topic} JSON body with
// encoding/json, the general path the scanner (jsonscan.go) replaces: the
// records the scanner must produce for the same body, or an error where
// it must refuse it. Bodies whose top-level object repeats a key are
// outside it (ok false): which occurrence wins is the scanner's own rule.
func referenceRecords(body []byte) (recs []server.ProduceRecord, ok bool, err error) {
	if !json.Valid(body) {
		return nil, true, errors.New("invalid JSON")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, true, errors.New("empty")
	}
	var top map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &top) != nil {
		return singleRecord(trimmed), true, nil
	}
	if n, err := topLevelKeys(trimmed); err != nil || n != len(top) {
		return nil, false, nil
	}
	raw, found := top["records"]
	if !found || raw[0] != '[' {
		return singleRecord(trimmed), true, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, true, err
	}
	if len(items) == 0 {
		return nil, true, errors.New("records is empty")
	}
	for i, item := range items {
		rec, err := referenceRecord(item)
		if err != nil {
			return nil, true, fmt.Errorf("records[%d]: %v", i, err)
		}
		recs = append(recs, rec)
	}
	return recs, true, nil
}

func singleRecord(value []byte) []server.ProduceRecord {
	return []server.ProduceRecord{{Partition: server.PartitionAuto, Record: records.Record{Value: compacted(value)}}}
}

func compacted(v []byte) []byte {
	var b bytes.Buffer
	json.Compact(&b, v)
	return b.Bytes()
}

// topLevelKeys counts the keys of a top-level object, repeats included.
func topLevelKeys(body []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return 0, err
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return 0, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

func referenceRecord(item json.RawMessage) (server.ProduceRecord, error) {
	rec := server.ProduceRecord{Partition: server.PartitionAuto}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil {
		return rec, err
	}
	isNull := func(v json.RawMessage) bool { return string(v) == "null" }
	if v, ok := fields["key"]; ok && !isNull(v) {
		var s string
		if v[0] == '"' && json.Unmarshal(v, &s) == nil {
			rec.Record.Key = []byte(s)
		} else {
			rec.Record.Key = compacted(v)
		}
	}
	if v, ok := fields["value"]; ok && !isNull(v) {
		rec.Record.Value = compacted(v)
	}
	if v, ok := fields["partition"]; ok && !isNull(v) {
		var p int64
		if err := json.Unmarshal(v, &p); err != nil || p < 0 || p > math.MaxInt32 {
			return rec, fmt.Errorf("partition %s", v)
		}
		rec.Partition = int32(p)
	}
	if v, ok := fields["timestamp"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &rec.Record.Timestamp); err != nil {
			return rec, err
		}
	}
	if v, ok := fields["headers"]; ok && !isNull(v) {
		hs, err := referenceHeaders(v)
		if err != nil {
			return rec, err
		}
		rec.Record.Headers = hs
	}
	return rec, nil
}

// referenceHeaders keeps the headers in body order, repeats included.
func referenceHeaders(v json.RawMessage) ([]records.Header, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("headers are an object")
	}
	var hs []records.Header
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var value string
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		hs = append(hs, records.Header{Key: k.(string), Value: []byte(value)})
	}
	return hs, nil
}

// normalized makes empty and nil byte slices and header lists compare
// by content.
func normalized(recs []server.ProduceRecord) []server.ProduceRecord {
	out := make([]server.ProduceRecord, len(recs))
	for i, r := range recs {
		out[i] = r
		if r.Record.Key != nil {
			out[i].Record.Key = append([]byte{}, r.Record.Key...)
		}
		if r.Record.Value != nil {
			out[i].Record.Value = append([]byte{}, r.Record.Value...)
		}
		if len(r.Record.Headers) == 0 {
			out[i].Record.Headers = nil
		}
		for j := range out[i].Record.Headers {
			if out[i].Record.Headers[j].Value == nil {
				out[i].Record.Headers[j].Value = []byte{}
			}
		}
	}
	return out
}

// checkAgainstReference fails t when the scanner and encoding/json
// disagree on body: one accepts what the other refuses, or they read
// different records.
func checkAgainstReference(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) {
		return // encoding/json replaces invalid UTF-8 in strings; the scanner stores bytes as sent
	}
	want, ok, wantErr := referenceRecords(body)
	if !ok {
		return
	}
	st, err := decodeForTest(body, formatJSON)
	switch {
	case err != nil && wantErr == nil:
		t.Fatalf("%q: the scanner refused what encoding/json reads: %v", body, err)
	case err == nil && wantErr != nil:
		t.Fatalf("%q: the scanner accepted what encoding/json refuses (%v): %+v", body, wantErr, st.req.Records)
	case err != nil:
		return
	}
	if got := normalized(st.req.Records); !reflect.DeepEqual(got, normalized(want)) {
		t.Fatalf("%q:\nscanner       %+v\nencoding/json %+v", body, got, normalized(want))
	}
}

func TestScannerRecordsMatchEncodingJSON(t *testing.T) {
	for _, body := range []string{
		benchBody(),
		`{"records":[{"key":"k","value":{"a":[1,2,{"b":null}]},"partition":0,"headers":{"h":"v","h":"w"},"timestamp":5}]}`,
		`{ "records" : [ { "key" : { "k" : 1 } , "value" : [ 1 , 2 ] , "partition" : null } ] , "key_schema" : "x" }`,
		`{"records":[{"key":"a\tb\u00e9\ud83d\ude00\/","value":"\"q\""},{"value":null,"key":null,"headers":null}]}`,
		`{"records":[{"value":1,"partition":2147483647,"timestamp":-9223372036854775808}]}`,
		`{"records":[{"value":1,"other":{"deep":[[[]]]}}]}`,
		`{"records":{"not":"an array"}}`, `{"id":1}`, `[1,2]`, `"text"`,
		// refused by both
		`{"records":[]}`, `{"records":[1]}`, `{"records":[{"partition":-1}]}`, `{"records":[{"partition":2147483648}]}`,
		`{"records":[{"partition":1.5}]}`, `{"records":[{"timestamp":1e3}]}`, `{"records":[{"headers":{"h":1}}]}`,
		`{"records":[{"headers":[]}]}`, `{"records":[{"value":1},]}`, `{"records":[{"value":1}`, `{"records":[{"value":01}]}`,
	} {
		checkAgainstReference(t, []byte(body))
	}
}

// FuzzScanRecords is the differential fuzz test of the produce-body
// scanner: on every body both read, it reads the records encoding/json
// reads, and it refuses what encoding/json refuses.
func FuzzScanRecords(f *testing.F) {
	f.Add([]byte(benchBody()))
	f.Add([]byte(`{"records":[{"key":"k","value":{"a":[1,2,{"b":null}]},"partition":0,"headers":{"h":"v"},"timestamp":5}]}`))
	f.Add([]byte(`{"records":[{"key":{"k":1},"value":[ 1 , 2 ]},{"key":"\u00e9","value":" s "}]}`))
	f.Add([]byte(`{"records":[{"partition":1.5}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgainstReference(t, body)
	})
}
