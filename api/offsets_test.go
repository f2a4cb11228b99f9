package api

import (
	"fmt"
	"net/http"
	"testing"
)

func TestListOffsetByTimestamp(t *testing.T) {
	e := newTestEnv(t)
	body := `{"records":[{"value":1,"timestamp":1000},{"value":2,"timestamp":2000},{"value":3,"timestamp":3000}]}`
	if a := e.do(t, "POST", "/kafka/times", "application/json", body); a.status != http.StatusOK {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	cases := []struct {
		query      string
		offset, ts int64
	}{
		{"earliest", 0, -1},
		{"latest", 3, -1},
		{"", 3, -1},
		{"0", 0, 1000},
		{"1000", 0, 1000},
		{"1001", 1, 2000},
		{"2500", 2, 3000},
		{"3000", 2, 3000},
		{"3001", -1, -1},
	}
	for _, c := range cases {
		a := e.do(t, "GET", "/kafka/times/partitions/0/offsets?timestamp="+c.query, "", "")
		var got offsetAnswer
		a.decode(t, &got)
		if a.status != http.StatusOK || got.Offset != c.offset || got.Timestamp != c.ts {
			t.Errorf("timestamp=%q: got %d %+v, want offset %d timestamp %d", c.query, a.status, got, c.offset, c.ts)
		}
	}
}

func TestListOffsetErrors(t *testing.T) {
	e := newTestEnv(t)
	if a := e.do(t, "POST", "/kafka/known", "application/json", `{"v":1}`); a.status != http.StatusOK {
		t.Fatalf("produce: %d %s", a.status, a.body)
	}
	for _, c := range []struct {
		path         string
		status, code int
	}{
		{"/kafka/known/partitions/0/offsets?timestamp=-5", 400, codeBadParam},
		{"/kafka/known/partitions/0/offsets?timestamp=soon", 400, codeBadParam},
		{"/kafka/known/partitions/x/offsets", 400, codeBadParam},
		{"/kafka/known/partitions/7/offsets", 404, codePartitionNotFound},
		{"/kafka/unknown-topic/partitions/0/offsets", 404, codeTopicNotFound},
	} {
		t.Run(fmt.Sprint(c.path), func(t *testing.T) {
			e.do(t, "GET", c.path, "", "").wantError(t, c.status, c.code)
		})
	}
}
