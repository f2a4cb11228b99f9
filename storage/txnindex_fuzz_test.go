package storage

import "testing"

// FuzzDecodeTxnIndex: any file content decodes without panicking into at
// most one entry per 34 bytes, each well formed, sorted by marker offset,
// and whole valid entries written back decode the same.
func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(appendTxnEntry(appendTxnEntry(nil, AbortedTxn{1, 0, 5, 6}), AbortedTxn{2, 3, 4, 4}))
	f.Add([]byte{0, 0, 1})
	f.Add(append(appendTxnEntry(nil, AbortedTxn{1, 9, 5, 6}), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := decodeTxnIndex(b)
		if len(got) > len(b)/txnIndexEntrySize {
			t.Fatalf("%d entries from %d bytes", len(got), len(b))
		}
		var again []byte
		for i, a := range got {
			if a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset {
				t.Fatalf("malformed entry %+v", a)
			}
			if i > 0 && got[i-1].LastOffset > a.LastOffset {
				t.Fatalf("unsorted: %+v", got)
			}
			again = appendTxnEntry(again, a)
		}
		if back := decodeTxnIndex(again); len(back) != len(got) {
			t.Fatalf("re-decoded %d entries, want %d", len(back), len(got))
		}
	})
}
