package jepsen

import (
	"testing"
)

// cleanTxns: tx-0 committed across two partitions, tx-1 aborted, tx-2
// indeterminate and committed as a whole, tx-3 indeterminate and aborted
// as a whole; markers take offsets, so the final reads skip some. A live
// reader saw tx-0 after its commit was asked.
func cleanTxns() ([]Txn, []Record) {
	txn := func(name string, o TxnOutcome, commitAt float64, vals ...string) Txn {
		x := Txn{Producer: "p", Name: name, Outcome: o, Start: at(commitAt - 1), End: at(commitAt + 0.5)}
		if o != Aborted {
			x.CommitAt = at(commitAt)
		}
		for i, v := range vals {
			x.Values = append(x.Values, TxnValue{Topic: "t", Partition: int32(i % 2), Value: v})
		}
		return x
	}
	txns := []Txn{
		txn("tx-0", Committed, 1, "a", "b"),
		txn("tx-1", Aborted, 2, "c", "d"),
		txn("tx-2", TxnIndeterminate, 3, "e", "f"),
		txn("tx-3", TxnIndeterminate, 4, "g", "h"),
	}
	rec := func(p int32, off int64, v string) Record {
		return Record{Source: "final", Topic: "t", Partition: p, Offset: off, Value: v}
	}
	reads := []Record{rec(0, 0, "a"), rec(0, 4, "e"), rec(1, 0, "b"), rec(1, 4, "f")}
	live := rec(0, 0, "a")
	live.Source, live.Live, live.At = "live", true, at(1.2)
	return txns, append(reads, live)
}

func TestCleanTxnHistoryHasNoAnomaly(t *testing.T) {
	txns, reads := cleanTxns()
	r := CheckTxn(txns, reads)
	if r.Total() != 0 {
		t.Fatalf("anomalies in a clean history:\n%s", r)
	}
	if r.Txns[Committed] != 1 || r.Txns[Aborted] != 1 || r.Txns[TxnIndeterminate] != 2 || r.Read != 4 || r.LiveRead != 1 {
		t.Fatalf("counts: %s", r)
	}
}

// Each case breaks the clean history in one way and expects exactly one
// anomaly of that kind.
func TestEachTxnAnomalyIsFound(t *testing.T) {
	cases := []struct {
		name   string
		kind   Kind
		mutate func(txns []Txn, reads []Record) ([]Txn, []Record)
	}{
		{"an aborted record read at read_committed", AbortedRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, append(r, Record{Source: "live", Live: true, At: at(5), Topic: "t", Partition: 1, Offset: 2, Value: "d"})
		}},
		{"a record read before its commit was asked", PrecommittedRead, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[len(r)-1].At = at(0.9)
			return x, r
		}},
		{"a committed record missing", LostCommitted, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, append(r[:2:2], r[3:]...) // b
		}},
		{"half an indeterminate transaction visible", Nonatomic, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, append(r, Record{Source: "final", Topic: "t", Partition: 0, Offset: 6, Value: "g"})
		}},
		{"a record at two offsets", TxnDuplicate, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, append(r, Record{Source: "final", Topic: "t", Partition: 1, Offset: 8, Value: "b"})
		}},
		{"a record no transaction wrote", TxnUnexpected, func(x []Txn, r []Record) ([]Txn, []Record) {
			return x, append(r, Record{Source: "final", Topic: "t", Partition: 1, Offset: 8, Value: "zz"})
		}},
		{"a live read the final reads do not hold there", TxnReadLost, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[len(r)-1].Offset = 1
			return x, r
		}},
		{"a reader going back", TxnNonmonotonicRd, func(x []Txn, r []Record) ([]Txn, []Record) {
			r[0], r[1] = r[1], r[0]
			return x, r
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			txns, reads := cleanTxns()
			r := CheckTxn(c.mutate(txns, reads))
			if r.Total() != 1 || r.Count[c.kind] != 1 {
				t.Fatalf("want one %s:\n%s", c.kind, r)
			}
		})
	}
}
