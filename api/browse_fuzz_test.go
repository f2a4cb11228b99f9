package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseJSONPath(t *testing.T) {
	doc := []byte(`{"user":{"id":42,"name":"ann","tags":["a","b"],"x.y":true},"n":null,"f":1.50}`)
	for expr, want := range map[string]bool{
		"$.user.id == 42": true, "user.id=42": true, "user.id = 42.0": true, "$.user.id != 42": false,
		`$.user.name == "ann"`: true, "user.name=ann": true, "$.user.tags[1] == b": true, "$.user.tags[2]": false,
		`$.user["x.y"] == true`: true, "$.n == null": true, "$.f == 1.5": true, "$.user.missing != 1": true,
		"$.user": true, "$.user.id.deeper": false, "$.user.tags.x": false, "$.user[0]": false,
	} {
		e, err := parseJSONPath(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		if got := e.matches(doc); got != want {
			t.Errorf("%q: %v, want %v", expr, got, want)
		}
	}
	for _, bad := range []string{"", "$", "$.", "a..b", "a.[0]", "a[x]", "a[-1]", "a[0", `a["x`, "a == ", "a == {}", "a == [1]",
		`a == "x`, "a b == 1", strings.Repeat("a.", maxJSONPathSegs) + "a", strings.Repeat("x", maxJSONPathText+1)} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	e, _ := parseJSONPath("a == 1")
	if e.matches([]byte("not json")) || e.matches(nil) {
		t.Fatal("a value that is not JSON matched")
	}
}

// FuzzJSONPath: any expression parses or is refused without panicking,
// and a parsed one applies to any value.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{"$.user.id == 42", "user.id=42", `$["a]"][0] != "x"`, "$.a.b", "a[99999999999]", `a == "\u00e9"`} {
		f.Add(s, []byte(`{"user":{"id":42},"a":{"b":[1]}}`))
	}
	f.Fuzz(func(t *testing.T, expr string, value []byte) {
		e, err := parseJSONPath(expr)
		if err != nil {
			return
		}
		if len(e.path) == 0 || len(e.path) > maxJSONPathSegs {
			t.Fatalf("%q: %d segments", expr, len(e.path))
		}
		e.matches(value)
	})
}

func TestCursorRoundTrip(t *testing.T) {
	c := &searchCursor{fingerprint: 12345, newest: true, ranges: []scanRange{{0, 5, 10}, {2, 0, 7}, {1, 3, 3}}}
	got, err := decodeCursor(c.encode(), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := &searchCursor{fingerprint: 12345, newest: true, ranges: []scanRange{{0, 5, 10}, {2, 0, 7}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v", got)
	}
	if _, err := decodeCursor(c.encode(), 2); err == nil {
		t.Fatal("a cursor naming partition 2 of 2 decoded")
	}
}

// FuzzSearchCursor: any text decodes to a valid cursor or is refused;
// a decoded one encodes back to the same cursor.
func FuzzSearchCursor(f *testing.F) {
	f.Add((&searchCursor{fingerprint: 1, ranges: []scanRange{{0, 1, 2}}}).encode(), int32(4))
	f.Add("eyJ2IjoxLCJmIjoiMSIsIm8iOiJuIiwicCI6W1swLC0xLDJdXX0", int32(1))
	f.Add("", int32(0))
	f.Fuzz(func(t *testing.T, text string, partitions int32) {
		c, err := decodeCursor(text, partitions)
		if err != nil {
			return
		}
		seen := map[int32]bool{}
		for _, r := range c.ranges {
			if r.Partition < 0 || r.Partition >= partitions || seen[r.Partition] || r.Lo < 0 || r.Hi < r.Lo {
				t.Fatalf("accepted %+v", r)
			}
			seen[r.Partition] = true
		}
		again, err := decodeCursor(c.encode(), partitions)
		if err != nil {
			t.Fatalf("re-encoded cursor refused: %v", err)
		}
		var live []scanRange
		for _, r := range c.ranges {
			if r.Lo < r.Hi {
				live = append(live, r)
			}
		}
		if again.fingerprint != c.fingerprint || again.newest != c.newest || !reflect.DeepEqual(again.ranges, live) {
			b, _ := json.Marshal(again.ranges)
			t.Fatalf("round trip: %s", b)
		}
	})
}
