package group

import (
	"testing"
	"time"
)

func TestLagHistoryRing(t *testing.T) {
	h := newLagHistory(3, 2)
	at := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	h.record(at(1), map[string]map[string]int64{"a": {"t1": 5, "t2": 1}, "b": {"t1": 0}})
	h.record(at(2), map[string]map[string]int64{"a": {"t1": 4}, "b": {}, "c": {"t1": 9}}) // c: over maxGroups
	if _, ok := h.history("c"); ok {
		t.Fatal("a third group got a history beyond maxGroups 2")
	}
	for i := int64(3); i <= 5; i++ {
		h.record(at(i), map[string]map[string]int64{"a": {"t1": 10 * i}, "b": {}})
	}
	got, ok := h.history("a")
	if !ok || len(got) != 3 {
		t.Fatalf("%+v", got)
	}
	for i, want := range []int64{30, 40, 50} { // the oldest two fell out, order kept
		if got[i].Lag != want || got[i].Time != (int64(i)+3)*1000 {
			t.Fatalf("sample %d: %+v", i, got[i])
		}
	}
	first, _ := newLagHistoryWith(t).history("a")
	if first[0].Lag != 6 || first[0].Topics["t2"] != 1 {
		t.Fatalf("sum over topics: %+v", first[0])
	}
	// A group no longer reported (deleted, coordinated elsewhere) is forgotten,
	// and its place is free for another.
	h.record(at(6), map[string]map[string]int64{"a": {}, "c": {"t1": 1}})
	if _, ok := h.history("b"); ok {
		t.Fatal("b kept after it was no longer reported")
	}
	if c, ok := h.history("c"); !ok || len(c) != 1 || c[0].Lag != 1 {
		t.Fatalf("c: %+v", c)
	}
}

func newLagHistoryWith(t *testing.T) *lagHistory {
	h := newLagHistory(3, 2)
	h.record(time.UnixMilli(0), map[string]map[string]int64{"a": {"t1": 5, "t2": 1}})
	return h
}
