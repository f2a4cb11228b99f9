package storage_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func segPath(dir string, base int64, ext string) string {
	return filepath.Join(dir, storageName(base)+ext)
}

func storageName(base int64) string {
	b := []byte("00000000000000000000")
	for i := len(b) - 1; base > 0; i-- {
		b[i] = byte('0' + base%10)
		base /= 10
	}
	return string(b)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestStartupDoesNotReadTheLog builds 64 MiB of log in 1 MiB segments and
// counts the bytes Open reads: after a clean close only the active
// segment's index and tail, after a crash only from the recovery point.
func TestStartupDoesNotReadTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 1 << 20, IndexIntervalBytes: 4096}
	l := openLog(t, dir, cfg, nil)
	batch := makeBatch(8, 1000, 1) // ~8 KiB
	for l.Size() < 64<<20 {
		if _, err := l.Append(append([]byte(nil), batch...), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 20, 8, 1000, 2) // above the recovery point
	end, segments := l.LogEndOffset(), l.SegmentCount()
	// Crash: abandon l without Close.

	fs := newErrorFS()
	l2 := openLog(t, dir, cfg, fs)
	if got := fs.BytesRead(); got > 3<<20 {
		t.Errorf("unclean open read %d bytes of a %d-segment log", got, segments)
	}
	t.Logf("unclean open read %d bytes", fs.BytesRead())
	if l2.LogEndOffset() != end || l2.FlushedOffset() != end {
		t.Fatalf("unclean open: LEO %d flushed %d, want %d", l2.LogEndOffset(), l2.FlushedOffset(), end)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}

	fs.ResetCounters()
	l3 := openLog(t, dir, cfg, fs)
	defer l3.Close()
	if got := fs.BytesRead(); got > 64<<10 {
		t.Errorf("clean open read %d bytes", got)
	}
	t.Logf("clean open read %d bytes", fs.BytesRead())
	if l3.LogEndOffset() != end {
		t.Fatalf("clean open: LEO %d, want %d", l3.LogEndOffset(), end)
	}

	// A read in the middle of an old segment costs its index plus about
	// one index interval of headers plus the batch, not the segment.
	for _, off := range []int64{end / 3, end / 2, end - 1} {
		fs.ResetCounters()
		res, err := l3.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
		if err != nil || res.Batches != 1 {
			t.Fatalf("read at %d: %v", off, err)
		}
		if got := fs.BytesRead(); got > 32<<10 {
			t.Errorf("read at %d cost %d bytes", off, got)
		}
	}
	fs.ResetCounters()
	if _, err := l3.OffsetForTimestamp(2); err != nil {
		t.Fatal(err)
	}
	if got := fs.BytesRead(); got > 1<<20 {
		t.Errorf("OffsetForTimestamp read %d bytes", got)
	}
}

// crashLog appends n batches, flushes after flushAt of them, and abandons
// the log as a crash would. It returns the data as read before the crash.
func crashLog(t *testing.T, dir string, cfg storage.Config, n, flushAt int) []byte {
	t.Helper()
	l := openLog(t, dir, cfg, nil)
	for i := 0; i < n; i++ {
		if i == flushAt {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		appendBatches(t, l, 1, 1+i%3, 50, int64(100+i))
	}
	res, err := l.Read(storage.ReadOptions{MaxBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Data
}

func TestUncleanRestartTruncatesTornTail(t *testing.T) {
	dir := t.TempDir()
	cfg := storage.Config{IndexIntervalBytes: 200}
	before := crashLog(t, dir, cfg, 10, 5)
	logFile := segPath(dir, 0, ".log")
	size := fileSize(t, logFile)
	if err := os.Truncate(logFile, size-7); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, dir, cfg, nil)
	defer l.Close()
	hs := readAll(t, l)
	if len(hs) != 9 {
		t.Fatalf("%d batches after torn tail", len(hs))
	}
	last := hs[8]
	if l.LogEndOffset() != last.LastOffset()+1 {
		t.Fatalf("LEO %d after batch ending at %d", l.LogEndOffset(), last.LastOffset())
	}
	if got := fileSize(t, logFile); got != sumSizes(hs) {
		t.Fatalf("log file %d bytes, batches %d", got, sumSizes(hs))
	}
	if !bytes.Equal(before[:sumSizes(hs)], mustRead(t, l, 0)) {
		t.Fatal("recovered bytes differ")
	}
	// Appends continue at the recovered end.
	if res, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); err != nil || res.BaseOffset != last.LastOffset()+1 {
		t.Fatalf("append after recovery: %+v %v", res, err)
	}
}

func sumSizes(hs []recordbatch.Header) int64 {
	var n int64
	for _, h := range hs {
		n += h.Size()
	}
	return n
}

func mustRead(t *testing.T, l *storage.Log, off int64) []byte {
	t.Helper()
	res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Data
}

func TestUncleanRestartTruncatesBadCRC(t *testing.T) {
	dir := t.TempDir()
	before := crashLog(t, dir, storage.Config{}, 10, 10)
	f, err := os.OpenFile(segPath(dir, 0, ".log"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a record byte of the last batch: only the CRC can tell.
	if _, err := f.WriteAt([]byte{0xee}, int64(len(before)-3)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The last batch is above the recovery point (flushed after 9 of 10).
	l := openLog(t, dir, storage.Config{}, nil)
	defer l.Close()
	hs := readAll(t, l)
	if len(hs) != 9 {
		t.Fatalf("%d batches, want 9", len(hs))
	}
}

func TestRecoveryKeepsEverythingBelowRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 1500, IndexIntervalBytes: 150}
	l := openLog(t, dir, cfg, nil)
	appendBatches(t, l, 40, 2, 40, 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.FlushedOffset()
	want := mustRead(t, l, 0)
	appendBatches(t, l, 5, 2, 40, 1)
	segs := l.SegmentCount()
	// Crash; then garbage lands at the end of the active segment and in
	// its index, as after a power loss.
	last := lastSegment(t, dir)
	appendFile(t, last+".log", bytes.Repeat([]byte{0xab}, 100))
	appendFile(t, last+".index", bytes.Repeat([]byte{0xcd}, 13))
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	if l2.LogEndOffset() < flushed || l2.SegmentCount() != segs {
		t.Fatalf("LEO %d below recovery point %d (segments %d, were %d)", l2.LogEndOffset(), flushed, l2.SegmentCount(), segs)
	}
	got := mustRead(t, l2, 0)
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatal("data below the recovery point changed")
	}
	readAll(t, l2)
}

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(m) == 0 {
		t.Fatal("no segments", err)
	}
	return m[len(m)-1][:len(m[len(m)-1])-4]
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// checkEveryOffset reads at every offset and checks the batch holds it.
func checkEveryOffset(t *testing.T, l *storage.Log) {
	t.Helper()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
		if err != nil || res.Batches != 1 {
			t.Fatalf("read at %d: %d batches, %v", off, res.Batches, err)
		}
		if h := headers(t, res.Data)[0]; h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read at %d returned [%d, %d]", off, h.BaseOffset, h.LastOffset())
		}
	}
}

func TestDamagedIndexesAreRebuilt(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 2000, IndexIntervalBytes: 100}
	damage := map[string]func(t *testing.T, dir string){
		"missing index": func(t *testing.T, dir string) {
			for _, p := range []string{segPath(dir, 0, ".index"), lastSegment(t, dir) + ".index"} {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		},
		"truncated timeindex": func(t *testing.T, dir string) {
			for _, p := range []string{segPath(dir, 0, ".timeindex"), lastSegment(t, dir) + ".timeindex"} {
				if err := os.Truncate(p, 17); err != nil {
					t.Fatal(err)
				}
			}
		},
		"garbage index": func(t *testing.T, dir string) {
			for _, p := range []string{segPath(dir, 0, ".index"), lastSegment(t, dir) + ".index"} {
				if err := os.WriteFile(p, bytes.Repeat([]byte{0x7f, 1, 2, 3}, 9), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
	for name, fn := range damage {
		for _, clean := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/clean", false: "/unclean"}[clean], func(t *testing.T) {
				dir := t.TempDir()
				l := openLog(t, dir, cfg, nil)
				for i := 0; i < 50; i++ {
					appendBatches(t, l, 1, 1+i%3, 30, int64(1000+i))
				}
				want := mustRead(t, l, 0)
				if clean {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
				idxSize := fileSize(t, segPath(dir, 0, ".index"))
				fn(t, dir)
				l2 := openLog(t, dir, cfg, nil)
				defer l2.Close()
				if !bytes.Equal(mustRead(t, l2, 0), want) {
					t.Fatal("data changed")
				}
				checkEveryOffset(t, l2)
				for i := int64(0); i < 50; i++ {
					if off, err := l2.OffsetForTimestamp(1000 + i); err != nil || off < 0 {
						t.Fatalf("OffsetForTimestamp(%d) = %d, %v", 1000+i, off, err)
					}
				}
				if got := fileSize(t, segPath(dir, 0, ".index")); got != idxSize {
					t.Fatalf("rebuilt index of segment 0 has %d bytes, had %d", got, idxSize)
				}
			})
		}
	}
}

func TestCleanRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 1000, IndexIntervalBytes: 100}
	l := openLog(t, dir, cfg, nil)
	appendBatches(t, l, 30, 2, 20, 5)
	want := mustRead(t, l, 0)
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".clean-shutdown")); err != nil {
		t.Fatalf("no clean shutdown marker: %v", err)
	}
	l2 := openLog(t, dir, cfg, nil)
	// Open writes nothing: the marker goes with the first change.
	if _, err := os.Stat(filepath.Join(dir, ".clean-shutdown")); err != nil {
		t.Fatalf("marker removed by a mere open: %v", err)
	}
	if l2.LogEndOffset() != end || l2.FlushedOffset() != end || !bytes.Equal(mustRead(t, l2, 0), want) {
		t.Fatal("clean restart lost data")
	}
	appendBatches(t, l2, 5, 2, 20, 5)
	if _, err := os.Stat(filepath.Join(dir, ".clean-shutdown")); !os.IsNotExist(err) {
		t.Fatalf("marker still there after an append: %v", err)
	}
	checkEveryOffset(t, l2)
	if err := l2.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there after Delete: %v", err)
	}
}
