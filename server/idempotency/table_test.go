package idempotency

import (
	"testing"
	"time"
)

// Scripted scenarios of the table: each step feeds one event and checks
// the decision, as the store would feed them.

func fp(s string) Fingerprint { return FingerprintOf([]byte(s)) }

func servingTable(t *testing.T, window time.Duration, maxBytes int64) *table {
	t.Helper()
	tab := newTable(window, maxBytes)
	tab.install(0, nil)
	return tab
}

func TestTableReplayConflictAndWait(t *testing.T) {
	tab := servingTable(t, time.Minute, 1<<20)
	d, e := tab.begin(0, "k", fp("a"), 1000)
	if d != Proceed {
		t.Fatalf("first: %v", d)
	}
	if d, _ := tab.begin(0, "k", fp("a"), 1001); d != Wait {
		t.Fatalf("duplicate in flight: %v, want Wait", d)
	}
	if d, _ := tab.begin(0, "k", fp("b"), 1001); d != Conflict {
		t.Fatalf("other request in flight: %v, want Conflict", d)
	}
	ans := Answer{Status: 200, ContentType: "application/json", Body: []byte(`{"offsets":[]}`)}
	tab.finish(0, "k", e, ans)
	select {
	case <-e.finished:
	default:
		t.Fatal("waiters not woken")
	}
	d, got := tab.begin(0, "k", fp("a"), 2000)
	if d != Replay || string(got.answer.Body) != string(ans.Body) {
		t.Fatalf("retry: %v %q", d, got.answer.Body)
	}
	if d, _ := tab.begin(0, "k", fp("b"), 2000); d != Conflict {
		t.Fatalf("reuse: %v, want Conflict", d)
	}
	if d, _ := tab.begin(1, "k", fp("a"), 2000); d != NotHere {
		t.Fatalf("partition not led: %v", d)
	}
}

func TestTableReleaseLetsTheRetryRun(t *testing.T) {
	tab := servingTable(t, time.Minute, 1<<20)
	_, e := tab.begin(0, "k", fp("a"), 1000)
	tab.release(0, "k", e)
	if tab.bytes != 0 {
		t.Fatalf("%d bytes left after release", tab.bytes)
	}
	if d, _ := tab.begin(0, "k", fp("b"), 1001); d != Proceed {
		t.Fatalf("after release: %v, want Proceed (even with another body)", d)
	}
}

func TestTableWindowExpiry(t *testing.T) {
	tab := servingTable(t, time.Second, 1<<20)
	_, e := tab.begin(0, "k", fp("a"), 1000)
	if due := tab.expiredKeys(5000); len(due) != 0 {
		t.Fatalf("an in-flight key expired: %v", due)
	}
	tab.finish(0, "k", e, Answer{Status: 200})
	if due := tab.expiredKeys(1999); len(due) != 0 {
		t.Fatalf("expired inside the window: %v", due)
	}
	due := tab.expiredKeys(2000)
	if len(due[0]) != 1 || due[0][0] != "k" {
		t.Fatalf("due at the window's end: %v", due)
	}
	// While its tombstone is written the key is not taken again: the
	// tombstone would land after the new request's records.
	if d, _ := tab.begin(0, "k", fp("b"), 2000); d != Expiring {
		t.Fatalf("while expiring: %v, want Expiring", d)
	}
	tab.keep(0, "k") // the tombstone failed: the next pass tries again
	if due := tab.expiredKeys(2000); len(due[0]) != 1 {
		t.Fatalf("kept key not due again: %v", due)
	}
	if !tab.forget(0, "k") || tab.bytes != 0 {
		t.Fatalf("forget: %d bytes left", tab.bytes)
	}
	if d, _ := tab.begin(0, "k", fp("b"), 2000); d != Proceed {
		t.Fatalf("after the tombstone: %v, want Proceed", d)
	}
	if tab.forget(0, "k") {
		t.Fatal("forget dropped the key's new request")
	}
	// Past the window and not yet picked by an expiry pass, a key is new.
	_, e2 := tab.begin(0, "k2", fp("a"), 3000)
	tab.finish(0, "k2", e2, Answer{Status: 200})
	if d, _ := tab.begin(0, "k2", fp("b"), 4000); d != Proceed {
		t.Fatalf("past the window: %v, want Proceed", d)
	}
}

func TestTableMemoryBudget(t *testing.T) {
	tab := servingTable(t, time.Second, 3*(entryOverhead+2))
	for _, k := range []string{"k1", "k2", "k3"} {
		if d, _ := tab.begin(0, k, fp(k), 1000); d != Proceed {
			t.Fatalf("%s: %v", k, d)
		}
	}
	if d, _ := tab.begin(0, "k4", fp("k4"), 1000); d != Full {
		t.Fatalf("over the budget: %v, want Full", d)
	}
	// Known keys still answer when full.
	if d, _ := tab.begin(0, "k1", fp("k1"), 1000); d != Wait {
		t.Fatalf("known key when full: %v", d)
	}
}

func TestTableLoadedPendingIsInDoubtAndResignForgets(t *testing.T) {
	tab := newTable(time.Minute, 1<<20)
	if d, _ := tab.begin(3, "k", fp("a"), 1000); d != NotHere {
		t.Fatalf("before install: %v", d)
	}
	loaded := map[string]storedKey{
		"p": {state: statePending, fp: fp("a"), created: 1000},
		"d": {state: stateDone, fp: fp("a"), created: 1000, answer: Answer{Status: 200, Body: []byte("x")}},
	}
	tab.install(3, loaded)
	if d, _ := tab.begin(3, "p", fp("a"), 1001); d != InDoubt {
		t.Fatalf("pending: %v, want InDoubt", d)
	}
	if d, _ := tab.begin(3, "d", fp("a"), 1001); d != Replay {
		t.Fatalf("done: %v, want Replay", d)
	}
	_, e := tab.begin(3, "new", fp("a"), 1001)
	if n := tab.resign(3); n != 3 || tab.bytes != 0 {
		t.Fatalf("resign: %d keys, %d bytes left", n, tab.bytes)
	}
	tab.finish(3, "new", e, Answer{Status: 200}) // the request ends after resigning
	if tab.bytes != 0 {
		t.Fatalf("a finish after resigning counted %d bytes", tab.bytes)
	}
	if d, _ := tab.begin(3, "d", fp("a"), 1001); d != NotHere {
		t.Fatalf("after resign: %v", d)
	}
}
