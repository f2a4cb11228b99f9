package isr

import (
	"slices"
	"testing"
	"time"
)

// Changes go out after a quiet ChangeLinger, or at the latest
// ChangeMaxDelay after the previous batch however busy, as Kafka's.
func TestChangeNotifierBatches(t *testing.T) {
	now := t0
	n := NewChangeNotifier(now)
	if n.Due(now.Add(time.Hour)) != nil {
		t.Fatal("a batch without changes")
	}
	now = now.Add(10 * time.Second)
	a, b := Partition{"a", 1}, Partition{"a", 0}
	n.Changed(a, now)
	n.Changed(b, now)
	n.Changed(a, now)
	if n.Due(now.Add(ChangeLinger)) != nil {
		t.Fatal("sent before the linger passed")
	}
	if got := n.Due(now.Add(ChangeLinger + time.Millisecond)); !slices.Equal(got, []Partition{b, a}) {
		t.Fatalf("batch %v", got)
	}
	if n.Due(now.Add(time.Hour)) != nil {
		t.Fatal("a batch sent twice")
	}
	// Long after the previous batch, a change goes out at the next check.
	late := now.Add(time.Hour)
	n.Changed(a, late)
	if got := n.Due(late.Add(ChangeCheckInterval)); !slices.Equal(got, []Partition{a}) {
		t.Fatalf("late batch %v", got)
	}

	// A storm: a change every second holds the linger off, so the batch
	// waits for the maximum delay since the previous one.
	sent := late.Add(ChangeCheckInterval)
	var got []Partition
	for i := 1; got == nil && i < 200; i++ {
		at := sent.Add(time.Duration(i) * time.Second)
		n.Changed(Partition{"storm", int32(i)}, at)
		got = n.Due(at)
		if got != nil && at.Sub(sent) <= ChangeMaxDelay {
			t.Fatalf("sent %v after the previous batch, in a storm", at.Sub(sent))
		}
	}
	if len(got) != 61 {
		t.Fatalf("storm batch of %d", len(got))
	}
}
