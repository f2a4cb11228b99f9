package storage_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-mq/ferry/storage"
)

func FuzzValidateBatches(f *testing.F) {
	one := makeBatch(3, 10, 5)
	f.Add(one)
	f.Add(concat(one, makeBatch(1, 0, 1)))
	f.Add(one[:40])
	f.Add([]byte{})
	bad := makeBatch(1, 4, 0)
	bad[9] = 0xff
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := storage.ValidateBatches(b)
		if err == nil {
			if hs := headersNoFatal(b); len(hs) != n {
				t.Fatalf("valid data with %d batches parsed as %d", n, len(hs))
			}
		}
		if n < 0 {
			t.Fatal("negative count")
		}
		_, _ = storage.ParseBatchHeader(b)
	})
}

// FuzzRecover writes arbitrary bytes as a segment and its index, opens the
// log (unclean, so it rescans), and checks that everything it then serves is
// valid and that appends work.
func FuzzRecover(f *testing.F) {
	valid := concat(makeBatch(2, 10, 1), makeBatch(1, 30, 2), makeBatch(3, 5, 3))
	fixOffsets(valid)
	f.Add(valid, []byte{})
	f.Add(valid[:len(valid)-5], []byte{0, 0, 0, 2, 0, 0, 0, 71})
	f.Add(append(append([]byte(nil), valid...), 0xff, 0xff), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, logBytes, index []byte) {
		dir := t.TempDir()
		write := func(name string, b []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("00000000000000000000.log", logBytes)
		write("00000000000000000000.index", index)
		write("00000000000000000000.timeindex", index)
		cfg := storage.Config{IndexIntervalBytes: 50}
		l, err := storage.Open(dir, cfg, storage.Options{FS: noSyncFS{}, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		checkEveryOffset(t, l)
		readAll(t, l)
		if _, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		readAll(t, l)
	})
}

// fixOffsets gives concatenated batches contiguous base offsets from 0.
func fixOffsets(b []byte) {
	var next int64
	for pos := 0; pos < len(b); {
		h, err := storage.ParseBatchHeader(b[pos:])
		if err != nil {
			return
		}
		for i := 0; i < 8; i++ {
			b[pos+i] = byte(uint64(next) >> (56 - 8*i))
		}
		next += int64(h.LastOffsetDelta) + 1
		pos += int(h.Size())
	}
}
