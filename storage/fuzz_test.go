package storage_test

import (
	"os"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/memfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// FuzzRecover writes arbitrary bytes as a segment and its index, opens the
// log (unclean, so it rescans), and checks that everything it then serves is
// valid and that appends work.
func FuzzRecover(f *testing.F) {
	valid := concat(makeBatch(2, 10, 1), makeBatch(1, 30, 2), makeBatch(3, 5, 3))
	fixOffsets(valid)
	f.Add(valid, []byte{}, false)
	gap := concat(makeBatch(2, 10, 1), makeBatch(1, 10, 1))
	gap[len(gap)-71+4] = 0x30 // second batch's base offset jumps far ahead
	f.Add(gap, []byte("0"), false)
	f.Add(valid[:len(valid)-5], []byte{0, 0, 0, 2, 0, 0, 0, 71}, true)
	f.Add(append(append([]byte(nil), valid...), 0xff, 0xff), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}, false)
	f.Fuzz(func(t *testing.T, logBytes, index []byte, fixCRCs bool) {
		if fixCRCs {
			// Let the fuzzer past the CRC to the offset and length rules.
			fixAllCRCs(logBytes)
		}
		fs, dir := memfs.New(), "/p-0"
		fs.MkdirAll(dir, 0o755)
		write := func(name string, b []byte) {
			f, err := fs.OpenFile(dir+"/"+name, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(b, 0)
			f.Close()
		}
		write("00000000000000000000.log", logBytes)
		write("00000000000000000000.index", index)
		write("00000000000000000000.timeindex", index)
		cfg := storage.Config{IndexIntervalBytes: 50}
		l, err := storage.Open(dir, cfg, storage.Options{FS: fs, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// Offsets may have gaps (as after compaction): check each batch is
		// found from both its ends.
		for _, h := range readAll(t, l) {
			for _, off := range []int64{h.BaseOffset, h.LastOffset()} {
				res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
				if err != nil || res.Batches != 1 || headers(t, res.Data)[0] != h {
					t.Fatalf("read at %d: %v", off, err)
				}
			}
		}
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
		h, err := recordbatch.ParseHeader(b[pos:])
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

// fixAllCRCs recomputes the CRC of every batch whose header parses.
func fixAllCRCs(b []byte) {
	for pos := 0; pos < len(b); {
		h, err := recordbatch.ParseHeader(b[pos:])
		if err != nil || h.Size() > int64(len(b)-pos) {
			return
		}
		fixCRC(b[pos : pos+int(h.Size())])
		pos += int(h.Size())
	}
}
