package recordbatch_test

import (
	"bytes"
	"testing"

	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// FuzzValidate: Validate and ParseHeader never panic, and Validate counts
// exactly the batches a header walk finds in data it accepts.
func FuzzValidate(f *testing.F) {
	one := makeBatch(3, 10, 5)
	f.Add(one)
	f.Add(append(bytes.Clone(one), makeBatch(1, 0, 1)...))
	f.Add(one[:40])
	f.Add([]byte{})
	bad := makeBatch(1, 4, 0)
	bad[9] = 0xff
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := recordbatch.Validate(b)
		if n < 0 {
			t.Fatal("negative count")
		}
		if err == nil {
			walked := 0
			for pos := 0; pos < len(b); walked++ {
				h, err := recordbatch.ParseHeader(b[pos:])
				if err != nil {
					t.Fatalf("valid data does not parse at %d: %v", pos, err)
				}
				pos += int(h.Size())
			}
			if walked != n {
				t.Fatalf("valid data with %d batches parsed as %d", n, walked)
			}
		}
		_, _ = recordbatch.ParseHeader(b)
	})
}

// FuzzNext: Next never panics and splits src into a batch and the rest.
func FuzzNext(f *testing.F) {
	f.Add(makeBatch(2, 3, 0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49})
	f.Fuzz(func(t *testing.T, src []byte) {
		batch, rest, err := recordbatch.Next(src)
		if err != nil || batch == nil {
			return
		}
		if len(batch) < recordbatch.HeaderSize || len(batch)+len(rest) != len(src) {
			t.Fatalf("split %d bytes into %d and %d", len(src), len(batch), len(rest))
		}
		_ = recordbatch.ReadHeader(batch)
	})
}
