package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/server/records"
)

// The reference the rendered answers are checked against: readRecord
// values (toReadRecord, browse.go) marshalled by encoding/json, as the
// read handler did before.

// renderedSize is about what out adds to the JSON answer.
func renderedSize(out readRecord) int {
	n := len(out.Topic) + len(out.Key) + len(out.Value) + 160 // field names, numbers
	for k, v := range out.Headers {
		n += len(k) + len(v) + 6
	}
	return n
}

// tricky holds keys, values and header parts that exercise every branch:
// JSON (with spaces, HTML characters, U+2028), text that is not JSON
// (control characters, quotes, invalid-JSON-but-valid-UTF-8), bytes that
// are not UTF-8, null and empty.
var tricky = [][]byte{
	nil, {}, []byte(`{"a": 1, "b" : [true, null, "<&>"]}`), []byte(" 42 "), []byte(`"str\u2028"`),
	[]byte("plain text"), []byte("tab\tnl\ncr\r\b\f\x00\x1f\x7f \"q\" \\ </script>&"),
	[]byte("line\u2028para\u2029é☃𝄞"), []byte("{not json"), []byte{0xff, 0xfe, 'a'}, []byte("a\xc3"),
	[]byte(`{"deep":{"x":[1,2,{"y":"z"}]}}`), []byte("\u2028"), []byte("   "), []byte("tru"), []byte("-"),
	[]byte("\t[1, 2]\n"), []byte("user-1"),
}

func TestRenderedAnswerMatchesEncodingJSON(t *testing.T) {
	var recs []records.Record
	for i, k := range tricky {
		for j, v := range tricky {
			rec := records.Record{Key: k, Value: v, Offset: int64(i*100 + j), Timestamp: int64(j) - 1, TimestampType: int8(j % 2)}
			switch j % 4 {
			case 1:
				rec.Headers = []records.Header{{Key: "h", Value: v}}
			case 2:
				rec.Headers = []records.Header{{Key: "z", Value: []byte("1")}, {Key: "a\xff<", Value: k},
					{Key: "z", Value: []byte("2")}, {Key: "m", Value: nil}, {Key: "a\xff<", Value: []byte("last")}}
			case 3:
				rec.Headers = []records.Header{{Key: "", Value: []byte("e")}, {Key: "\u2028", Value: []byte("\x01")}}
			}
			recs = append(recs, rec)
		}
	}
	for _, topic := range []string{"t", "orders.v1-x_y"} {
		want := readAnswer{Topic: topic, Partition: 3, Records: []readRecord{}, NextOffset: 77, HighWatermark: 99, LogStartOffset: 5}
		rr := getReadRenderer()
		b := appendAnswerHead(nil, topic, 3)
		for i, rec := range recs {
			out := toReadRecord(topic, 3, rec)
			want.Records = append(want.Records, out)
			if i > 0 {
				b = append(b, ',')
			}
			var size int
			b, size = rr.appendRecord(b, topic, 3, rec)
			if ref := renderedSize(out); size != ref {
				t.Fatalf("record %d: size %d, renderedSize %d", i, size, ref)
			}
		}
		b = appendAnswerTail(b, 77, 99, 5)
		ref, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		ref = append(ref, '\n')
		if string(b) != string(ref) {
			for i := range min(len(b), len(ref)) {
				if b[i] != ref[i] {
					t.Fatalf("differs at byte %d:\n got %q\nwant %q", i, b[max(0, i-80):min(len(b), i+80)], ref[max(0, i-80):min(len(ref), i+80)])
				}
			}
			t.Fatalf("lengths %d and %d", len(b), len(ref))
		}
	}
	empty := appendAnswerTail(appendAnswerHead(nil, "t", 0), 0, 0, 0)
	ref, _ := json.Marshal(readAnswer{Topic: "t", Records: []readRecord{}})
	if string(empty) != string(ref)+"\n" {
		t.Fatalf("empty answer %s, want %s", empty, ref)
	}
}

// Every ASCII byte and a few runes are escaped as encoding/json does.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	var all strings.Builder
	for c := 0; c < 128; c++ {
		all.WriteByte(byte(c))
	}
	for _, s := range []string{all.String(), "é\u2028\u2029\ufffd\xff\xc3(", "", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}
