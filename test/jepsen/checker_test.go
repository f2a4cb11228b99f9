package jepsen

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// acked is producer p's acknowledged write of v at partition 0, offset off,
// started at second start.
func acked(p, via, v string, off int64, start float64) Write {
	return Write{Producer: p, Via: via, Node: "b1", Topic: "t", Partition: 0, Value: v,
		Outcome: Acked, Offset: off, Start: at(start), End: at(start + 0.1)}
}

func read(source string, off int64, v string) Record {
	return Record{Source: source, Topic: "t", Partition: 0, Offset: off, Value: v}
}

// clean is a history with one write of every outcome and reads from two
// sources that agree: no anomaly.
func clean() ([]Write, []Record) {
	writes := []Write{
		acked("k1", "kafka", "a", 0, 0),
		acked("h1", "http", "b", 1, 1),
		{Producer: "k1", Via: "kafka", Topic: "t", Value: "c", Outcome: Indeterminate, Start: at(2), End: at(3)},
		acked("k1", "kafka", "d", 3, 4),
		{Producer: "h1", Via: "http", Topic: "t", Value: "e", Outcome: Failed, Start: at(5), End: at(5)},
	}
	var reads []Record
	for _, src := range []string{"kafka", "http b2"} {
		reads = append(reads, read(src, 0, "a"), read(src, 1, "b"), read(src, 2, "c"), read(src, 3, "d"))
	}
	return writes, reads
}

func TestCleanHistoryHasNoAnomaly(t *testing.T) {
	writes, reads := clean()
	// A consumer read the first two records during the faults.
	for _, r := range reads[:2] {
		r.Source, r.Live = "live http b1", true
		reads = append(reads, r)
	}
	r := Check(writes, reads)
	if r.Total() != 0 {
		t.Fatalf("anomalies in a clean history:\n%s", r)
	}
	if r.Writes[Acked] != 3 || r.Writes[Failed] != 1 || r.Writes[Indeterminate] != 1 || r.Read != 4 {
		t.Fatalf("counts: %s", r)
	}
}

// Each case breaks the clean history in one way and expects exactly one
// anomaly of one kind.
func TestEachAnomalyIsFound(t *testing.T) {
	cases := []struct {
		kind   Kind
		break_ func(w []Write, r []Record) ([]Write, []Record)
	}{
		{Lost, func(w []Write, r []Record) ([]Write, []Record) {
			// d (acked over Kafka at 3) is in no read.
			return w, dropValue(r, "d")
		}},
		{LostHTTP, func(w []Write, r []Record) ([]Write, []Record) {
			// b (acked over HTTP at 1) is in no read: offset 1 holds nothing.
			return w, dropValue(r, "b")
		}},
		{Duplicate, func(w []Write, r []Record) ([]Write, []Record) {
			// a, written once, is also at offset 4 in both reads.
			return w, append(r, read("kafka", 4, "a"), read("http b2", 4, "a"))
		}},
		{InconsistentOffset, func(w []Write, r []Record) ([]Write, []Record) {
			// The second source holds the indeterminate c's offset with a
			// value nobody else has there; x was attempted (indeterminate).
			w = append(w, Write{Producer: "k2", Via: "kafka", Topic: "t", Value: "x", Outcome: Indeterminate, Start: at(2), End: at(3)})
			r[6] = read("http b2", 2, "x")
			return w, r
		}},
		{NonmonotonicOffset, func(w []Write, r []Record) ([]Write, []Record) {
			// k1's later write d is acknowledged below its earlier write a:
			// reads say the same, so only the order is wrong.
			w[0].Offset, w[3].Offset = 3, 0
			for i := range r {
				switch r[i].Value {
				case "a":
					r[i].Value = "d"
				case "d":
					r[i].Value = "a"
				}
			}
			return w, r
		}},
		{NonmonotonicRead, func(w []Write, r []Record) ([]Write, []Record) {
			// The first source reads offset 1 again after 3.
			return w, append(r[:4:4], append([]Record{read("kafka", 1, "b")}, r[4:]...)...)
		}},
		{WrongOffset, func(w []Write, r []Record) ([]Write, []Record) {
			// a was acknowledged at 0, and every read has it at 5 (and
			// offset 0 empty).
			for i := range r {
				if r[i].Value == "a" {
					r[i].Offset = 5
				}
			}
			return w, sortReads(r)
		}},
		{FailedPresent, func(w []Write, r []Record) ([]Write, []Record) {
			// e, refused, is at offset 4.
			return w, append(r, read("kafka", 4, "e"))
		}},
		{Unexpected, func(w []Write, r []Record) ([]Write, []Record) {
			return w, append(r, read("kafka", 4, "zzz"))
		}},
		{ReadLost, func(w []Write, r []Record) ([]Write, []Record) {
			// A consumer read the indeterminate x at offset 4 during the
			// faults; the final reads end at 3.
			w = append(w, Write{Producer: "k2", Via: "kafka", Topic: "t", Value: "x", Outcome: Indeterminate, Start: at(2), End: at(3)})
			return w, append(r, liveReads(r[0], r[1], r[2], r[3], read("kafka", 4, "x"))...)
		}},
		{PollSkip, func(w []Write, r []Record) ([]Write, []Record) {
			// A consumer read a, then d: b and c, which the final reads
			// hold, passed by.
			return w, append(r, liveReads(r[0], r[3])...)
		}},
	}
	covered := map[Kind]bool{}
	for _, c := range cases {
		covered[c.kind] = true
		t.Run(string(c.kind), func(t *testing.T) {
			w, r := c.break_(clean())
			rep := Check(w, r)
			if rep.Count[c.kind] != 1 || rep.Total() != 1 {
				t.Fatalf("want exactly one %s:\n%s", c.kind, rep)
			}
			if !strings.Contains(rep.String(), string(c.kind)+": ") {
				t.Fatalf("the report does not describe it:\n%s", rep)
			}
		})
	}
	for _, k := range Kinds {
		if !covered[k] {
			t.Errorf("no case finds %s", k)
		}
	}
}

// liveReads is rs as read by a consumer while the faults ran.
func liveReads(rs ...Record) []Record {
	var out []Record
	for _, r := range rs {
		r.Source, r.Live = "live http b1", true
		out = append(out, r)
	}
	return out
}

func dropValue(r []Record, v string) []Record {
	var out []Record
	for _, x := range r {
		if x.Value != v {
			out = append(out, x)
		}
	}
	return out
}

// sortReads orders each source's records by offset, keeping sources apart.
func sortReads(r []Record) []Record {
	var out []Record
	for _, src := range []string{"kafka", "http b2"} {
		var mine []Record
		for _, x := range r {
			if x.Source == src {
				mine = append(mine, x)
			}
		}
		for i := 1; i < len(mine); i++ {
			for j := i; j > 0 && mine[j].Offset < mine[j-1].Offset; j-- {
				mine[j], mine[j-1] = mine[j-1], mine[j]
			}
		}
		out = append(out, mine...)
	}
	return out
}

// A partition whose acks stop for 5 s inside the window shows a 5 s gap; a
// partition with no ack in the window shows the whole window.
func TestAckGaps(t *testing.T) {
	w := []Write{
		acked("k1", "kafka", "a", 0, 0.9), // ack at 1.0
		acked("k1", "kafka", "b", 1, 1.9), // 2.0
		acked("k1", "kafka", "c", 2, 6.9), // 7.0
		acked("k1", "kafka", "d", 3, 7.9), // 8.0
		{Producer: "k2", Topic: "t", Partition: 1, Value: "e", Outcome: Indeterminate, Start: at(1), End: at(9)},
	}
	gaps := AckGaps(w, at(0.5), at(10))
	if g := gaps["t-0"]; g.Duration != 5*time.Second || !g.From.Equal(at(2)) || !g.To.Equal(at(7)) {
		t.Errorf("t-0: %+v, want 5s from 2 to 7", g)
	}
	if g := gaps["t-1"]; g.Duration != 9500*time.Millisecond {
		t.Errorf("t-1: %+v, want the whole window, 9.5s", g)
	}
}

// A producer whose commits stop for 3 s shows a 3 s gap; aborted and
// undecided transactions are no commits.
func TestCommitGaps(t *testing.T) {
	txns := []Txn{
		txnAt("p", "p-0", Committed, 1), // ends 1.5
		txnAt("p", "p-1", Aborted, 2),   // 2.5, not a commit
		txnAt("p", "p-2", Committed, 4), // 4.5
		txnAt("q", "q-0", TxnIndeterminate, 1),
	}
	gaps := CommitGaps(txns, at(0), at(5))
	if g := gaps["p"]; g.Duration != 3*time.Second || !g.From.Equal(at(1.5)) || !g.To.Equal(at(4.5)) {
		t.Errorf("p: %+v, want 3s from 1.5 to 4.5", g)
	}
	if g := gaps["q"]; g.Duration != 5*time.Second {
		t.Errorf("q: %+v, want the whole window, 5s", g)
	}
}
