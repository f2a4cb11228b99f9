package storage_test

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// makeBatch builds a valid record batch v2 of records records, each
// recordBytes of dummy bytes (storage never decodes records), with every
// timestamp ts. Its base offset is 0: Append assigns the real one.
func makeBatch(records, recordBytes int, ts int64) []byte {
	b := make([]byte, recordbatch.HeaderSize+records*recordBytes)
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(len(b)-12))
	b[16] = 2
	be.PutUint32(b[23:], uint32(records-1))
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[35:], uint64(ts))
	be.PutUint64(b[43:], ^uint64(0)) // producerId -1
	be.PutUint16(b[51:], 0xffff)     // producerEpoch -1
	be.PutUint32(b[53:], 0xffffffff) // baseSequence -1
	be.PutUint32(b[57:], uint32(records))
	for i := recordbatch.HeaderSize; i < len(b); i++ {
		b[i] = byte(i)
	}
	fixCRC(b)
	return b
}

// fixCRC recomputes the CRC of the single batch b.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], recordbatch.Checksum(b[21:]))
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// testLogger routes the log's slog output to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// fakeClock is an injectable Options.Now.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func openLog(t testing.TB, dir string, cfg storage.Config, fs storage.FS) *storage.Log {
	t.Helper()
	l, err := storage.Open(dir, cfg, storage.Options{FS: fs, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// appendBatches appends n batches of records records each, returning the
// base offset of each.
func appendBatches(t testing.TB, l *storage.Log, n, records, recordBytes int, ts int64) []int64 {
	t.Helper()
	var bases []int64
	for i := 0; i < n; i++ {
		res, err := l.Append(makeBatch(records, recordBytes, ts), storage.AppendOptions{})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		bases = append(bases, res.BaseOffset)
	}
	return bases
}

// readAll reads the whole log from its start and returns the batch headers,
// checking that everything read is valid and in increasing offset order
// (gaps are legal, as after compaction; the tests' own logs have none).
func readAll(t testing.TB, l *storage.Log) []recordbatch.Header {
	t.Helper()
	var hs []recordbatch.Header
	off := l.LogStartOffset()
	for {
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1 << 20, MinOneBatch: true}, nil)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if res.Batches == 0 {
			break
		}
		hs = append(hs, headers(t, res.Data)...)
		off = res.NextOffset
	}
	if off != l.LogEndOffset() {
		t.Fatalf("read up to %d, log end %d", off, l.LogEndOffset())
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].BaseOffset <= hs[i-1].LastOffset() {
			t.Fatalf("batch %d at offset %d follows one ending at %d", i, hs[i].BaseOffset, hs[i-1].LastOffset())
		}
	}
	return hs
}

// headers validates data as concatenated batches and parses their headers.
func headers(t testing.TB, data []byte) []recordbatch.Header {
	t.Helper()
	if _, err := recordbatch.Validate(data); err != nil {
		t.Fatalf("invalid data: %v", err)
	}
	var hs []recordbatch.Header
	for pos := 0; pos < len(data); {
		h, err := recordbatch.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		pos += int(h.Size())
	}
	return hs
}

func newErrorFS() *errorfs.FS { return errorfs.New(nil) }

func mustIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// noSyncFS is the real disk without fsyncs, for tests that open many logs
// and do not test durability (fuzzing, benchmarks of the non-sync path).
type noSyncFS struct{ storage.OSFS }

func (fs noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	f, err := fs.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ storage.File }

func (noSyncFile) Sync() error { return nil }
