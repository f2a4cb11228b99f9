package jepsen

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// cleanTxns is a history every check must pass, with the cases that are
// allowed but look close to an anomaly:
//
//   - tx-0 committed across two partitions; tx-1 aborted; tx-2 asked to
//     commit and heard nothing back, and is committed as a whole; tx-3
//     asked to commit and heard nothing, and is aborted as a whole;
//   - tx-4 (another producer) overlaps tx-2 in time, and their records
//     interleave differently in the two partitions: concurrent
//     transactions have no order;
//   - markers and aborted records take offsets that read_committed reads
//     skip, so the offsets read have holes;
//   - a live consumer read tx-4's j after tx-4 asked to commit but before
//     the commit was acknowledged: the commit was decided by then.
//
// Partition 0: a@0 [marker 1] c@2(aborted) [3] i@4 e@5 k@6 …
// Partition 1: b@0 [1] d@2(aborted) [3] f@4 j@5 …
func cleanTxns() ([]Txn, []Record) {
	txns := []Txn{
		txnAt("p", "tx-0", Committed, 1, "a", "b"),
		txnAt("p", "tx-1", Aborted, 2, "c", "d"),
		txnAt("p", "tx-2", TxnIndeterminate, 3, "e", "f"),
		txnAt("p", "tx-3", TxnIndeterminate, 4, "g", "h"),
		txnAt("q", "tx-4", Committed, 3.5, "i", "j", "k"),
	}
	reads := []Record{
		final(0, 0, "a"), final(0, 4, "i"), final(0, 5, "e"), final(0, 6, "k"),
		final(1, 0, "b"), final(1, 4, "f"), final(1, 5, "j"),
		live(1, 0, "b", 1.2), live(1, 4, "f", 3.1), live(1, 5, "j", 3.6),
		live(0, 0, "a", 1.2),
	}
	return txns, reads
}

// txnAt is a transaction that asks to commit at second commitAt (aborted
// ones never ask), started a second before and ended half a second after;
// its values go to partitions 0, 1, 0, … of topic t.
func txnAt(producer, name string, o TxnOutcome, commitAt float64, vals ...string) Txn {
	x := Txn{Producer: producer, Name: name, Outcome: o, Start: at(commitAt - 1), End: at(commitAt + 0.5)}
	if o != Aborted {
		x.CommitAt = at(commitAt)
	}
	for i, v := range vals {
		x.Values = append(x.Values, TxnValue{Topic: "t", Partition: int32(i % 2), Value: v})
	}
	return x
}

func final(p int32, off int64, v string) Record {
	return Record{Source: "final", Topic: "t", Partition: p, Offset: off, Value: v}
}

func live(p int32, off int64, v string, sec float64) Record {
	return Record{Source: "live", Live: true, At: at(sec), Topic: "t", Partition: p, Offset: off, Value: v}
}

func TestCleanTxnHistoryHasNoAnomaly(t *testing.T) {
	txns, reads := cleanTxns()
	r := CheckTxn(txns, reads)
	if r.Total() != 0 {
		t.Fatalf("anomalies in a clean history:\n%s", r)
	}
	if r.Txns[Committed] != 2 || r.Txns[Aborted] != 1 || r.Txns[TxnIndeterminate] != 2 || r.Read != 7 || r.LiveRead != 4 {
		t.Fatalf("counts: %s", r)
	}
}

// Each case breaks the clean history in one way and expects exactly one
// anomaly, of its kind.
func TestEachTxnAnomalyIsFound(t *testing.T) {
	type edit = func(x []Txn, r []Record) ([]Txn, []Record)
	cases := []struct {
		name string
		kind Kind
		edit edit
	}{
		{"G1a: a live read of an aborted record", AbortedRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Insert(r, 8, live(1, 2, "d", 5)) // between b@0 and f@4
		}},
		{"G1a: a transaction that never asked to commit, in the final reads", AbortedRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			x[3].CommitAt, x[3].Err = time.Time{}, "produce: timed out"
			return x, slices.Insert(r, 4, final(0, 9, "g")) // h is absent: no nonatomic either
		}},
		{"a read before the commit was asked", PrecommittedRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[len(r)-1].At = at(0.9) // a, tx-0 asks at 1
			return x, r
		}},
		{"a committed record missing", LostCommitted, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Delete(r, 3, 4) // k, of tx-4
		}},
		{"half an undecided transaction visible", Nonatomic, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Insert(r, 4, final(0, 9, "g"))
		}},
		{"a committed record again in a later transaction", Duplicate, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Insert(r, 4, final(0, 9, "a"))
		}},
		{"two values at one offset", InconsistentOffset, func(x []Txn, r []Record) ([]Txn, []Record) {
			x = append(x, txnAt("s", "tx-5", TxnIndeterminate, 3.5, "x"))
			return x, append(r, Record{Source: "final2", Topic: "t", Partition: 0, Offset: 4, Value: "x"})
		}},
		{"a reader going back", NonmonotonicRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[0], r[1] = r[1], r[0]
			return x, r
		}},
		{"a live reader passing over a committed record", PollSkip, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Delete(r, 8, 9) // the live f@4
		}},
		{"a transaction's records out of send order", SendOrder, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[1], r[3] = final(0, 4, "k"), final(0, 6, "i")
			return x, r
		}},
		{"a transaction's record after a later transaction's", RealtimeOrder, func(x []Txn, r []Record) ([]Txn, []Record) {
			x[4].Start = at(3.2) // after tx-2 asked to commit; i@4 is before e@5
			return x, r
		}},
		{"a record in another partition than written", WrongOffset, func(x []Txn, r []Record) ([]Txn, []Record) {
			r = slices.Delete(r, 3, 4) // k from partition 0 …
			return x, slices.Insert(r, 6, final(1, 7, "k"))
		}},
		{"a record no transaction wrote", Unexpected, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Insert(r, 7, final(1, 8, "zz"))
		}},
		{"a live read the final reads do not hold", ReadLost, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.Insert(r, 10, live(1, 7, "h", 4.5)) // tx-3 is not there
		}},
	}
	covered := map[Kind]bool{}
	for _, c := range cases {
		covered[c.kind] = true
		t.Run(c.name, func(t *testing.T) {
			r := CheckTxn(c.edit(cleanTxns()))
			if r.Total() != 1 || r.Count[c.kind] != 1 {
				t.Fatalf("want one %s:\n%s", c.kind, r)
			}
			if !strings.Contains(r.String(), string(c.kind)+": ") {
				t.Fatalf("the report does not describe it:\n%s", r)
			}
		})
	}
	for _, k := range TxnKinds {
		if !covered[k] {
			t.Errorf("no case finds %s", k)
		}
	}
}

// What Kafka allows must pass: a read once the commit was asked (before
// its acknowledgement), an undecided transaction that is wholly there or
// wholly not, concurrent transactions in either order, and holes where
// markers and aborted records are.
func TestTxnAllowedHistories(t *testing.T) {
	cases := []struct {
		name string
		edit func(x []Txn, r []Record) ([]Txn, []Record)
	}{
		{"read the instant the commit was asked", func(x []Txn, r []Record) ([]Txn, []Record) {
			r[len(r)-1].At = x[0].CommitAt
			return x, r
		}},
		{"an undecided transaction aborted whole", func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, slices.DeleteFunc(r, func(rec Record) bool { return rec.Value == "e" || rec.Value == "f" })
		}},
		{"an undecided transaction that never asked, absent", func(x []Txn, r []Record) ([]Txn, []Record) {
			x[3].CommitAt = time.Time{}
			return x, r
		}},
		{"concurrent transactions the other way round", func(x []Txn, r []Record) ([]Txn, []Record) {
			r[1], r[2] = final(0, 4, "e"), final(0, 5, "i")
			return x, r
		}},
		{"a live reader that stops early", func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, r[:len(r)-2]
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := CheckTxn(c.edit(cleanTxns())); r.Total() != 0 {
				t.Fatalf("anomalies:\n%s", r)
			}
		})
	}
}
