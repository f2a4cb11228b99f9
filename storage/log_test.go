package storage_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

func TestAppendAssignsOffsetsAndReadsBack(t *testing.T) {
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	defer l.Close()
	b := makeBatch(5, 10, 1000)
	res, err := l.Append(b, storage.AppendOptions{LeaderEpoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 4 || res.Records != 5 || res.MaxTimestamp != 1000 || res.LogAppendTime != -1 {
		t.Fatalf("result %+v", res)
	}
	res, err = l.Append(makeBatch(3, 10, 2000), storage.AppendOptions{LeaderEpoch: 7})
	if err != nil || res.BaseOffset != 5 || res.LastOffset != 7 {
		t.Fatalf("second append %+v, %v", res, err)
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	hs := readAll(t, l)
	if len(hs) != 2 || hs[0].LeaderEpoch != 7 || hs[1].BaseOffset != 5 {
		t.Fatalf("headers %+v", hs)
	}
	// The caller's buffer was rewritten in place (documented).
	if h, _ := recordbatch.ParseHeader(b); h.BaseOffset != 0 || h.LeaderEpoch != 7 {
		t.Fatalf("caller buffer header %+v", h)
	}
}

func TestReadAtEveryOffsetAcrossSegments(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 2000, IndexIntervalBytes: 300}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	for i := 0; i < 60; i++ {
		if _, err := l.Append(makeBatch(1+i%4, 20+i, int64(i)), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() < 5 {
		t.Fatalf("only %d segments", l.SegmentCount())
	}
	all := readAll(t, l)
	if len(all) != 60 {
		t.Fatalf("read %d batches", len(all))
	}
	for off := int64(0); off < l.LogEndOffset(); off++ {
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1}, nil)
		if err != nil || res.Batches != 0 {
			t.Fatalf("MaxBytes 1 at %d: %d batches, %v", off, res.Batches, err)
		}
		res, err = l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
		if err != nil || res.Batches != 1 {
			t.Fatalf("read at %d: %d batches, %v", off, res.Batches, err)
		}
		h := headers(t, res.Data)[0]
		if h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("read at %d returned batch [%d, %d]", off, h.BaseOffset, h.LastOffset())
		}
	}
	// One read spanning every segment, with a chunk per segment.
	res, err := l.Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20}, nil)
	if err != nil || res.Batches != 60 || len(res.Chunks) != l.SegmentCount() {
		t.Fatalf("full read: %d batches, %d chunks, %d segments, %v", res.Batches, len(res.Chunks), l.SegmentCount(), err)
	}
	size := 0
	for i := range res.Chunks {
		// A chunk is what sendfile would send: the same bytes, in the file.
		c := &res.Chunks[i]
		if err := c.Open(); err != nil {
			t.Fatal(err)
		}
		b, err := c.AppendTo(nil)
		if err != nil || string(b) != string(res.Data[size:size+c.Size()]) {
			t.Fatalf("chunk %d of %d bytes does not match the data: %v", i, c.Size(), err)
		}
		var w bytes.Buffer
		if n, err := c.WriteTo(&w); err != nil || n != int64(c.Size()) || !bytes.Equal(w.Bytes(), b) {
			t.Fatalf("chunk %d: WriteTo sent %d of %d bytes: %v", i, n, c.Size(), err)
		}
		c.Close()
		size += c.Size()
	}
	if size != len(res.Data) || int64(size) != l.Size() {
		t.Fatalf("chunks cover %d bytes, data %d, log %d", size, len(res.Data), l.Size())
	}
}

func TestReadLimits(t *testing.T) {
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	defer l.Close()
	b := makeBatch(10, 10, 0) // 161 bytes, offsets 10 per batch
	for i := 0; i < 5; i++ {
		if _, err := l.Append(append([]byte(nil), b...), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	size := len(b)
	cases := []struct {
		name    string
		opt     storage.ReadOptions
		batches int
		next    int64
	}{
		{"exact budget", storage.ReadOptions{Offset: 0, MaxBytes: 2 * size}, 2, 20},
		{"budget cuts partial batch", storage.ReadOptions{Offset: 0, MaxBytes: 2*size + 100}, 2, 20},
		{"budget below one batch", storage.ReadOptions{Offset: 15, MaxBytes: size - 1}, 0, 15},
		{"min one batch", storage.ReadOptions{Offset: 15, MaxBytes: size - 1, MinOneBatch: true}, 1, 20},
		{"max offset stops before batch reaching it", storage.ReadOptions{Offset: 0, MaxBytes: 10 * size, MaxOffset: 25}, 2, 20},
		{"max offset at batch end", storage.ReadOptions{Offset: 0, MaxBytes: 10 * size, MaxOffset: 30}, 3, 30},
		{"max offset beats min one batch", storage.ReadOptions{Offset: 20, MaxBytes: 1, MinOneBatch: true, MaxOffset: 25}, 0, 20},
		{"mid-batch offset", storage.ReadOptions{Offset: 33, MaxBytes: 10 * size}, 2, 50},
		{"at log end", storage.ReadOptions{Offset: 50, MaxBytes: 10 * size}, 0, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := l.Read(c.opt, []byte("prefix"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Batches != c.batches || res.NextOffset != c.next {
				t.Fatalf("got %d batches next %d, want %d next %d", res.Batches, res.NextOffset, c.batches, c.next)
			}
			if string(res.Data[:6]) != "prefix" || len(res.Data)-6 != c.batches*size {
				t.Fatalf("data %d bytes", len(res.Data))
			}
			headers(t, res.Data[6:])
		})
	}
	for _, off := range []int64{-1, 51} {
		if _, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 100}, nil); !errors.Is(err, storage.ErrOffsetOutOfRange) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 3000, IndexIntervalBytes: 200}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	for i := 0; i < 100; i++ {
		// offsets 2i, 2i+1 with timestamp 1000+10i
		if _, err := l.Append(makeBatch(2, 30, int64(1000+10*i)), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ ts, want int64 }{
		{0, 0}, {1000, 0}, {1001, 2}, {1010, 2}, {1500, 100}, {1990, 198}, {1991, -1},
	} {
		got, err := l.OffsetForTimestamp(c.ts)
		if err != nil || got != c.want {
			t.Errorf("OffsetForTimestamp(%d) = %d, %v; want %d", c.ts, got, err, c.want)
		}
	}
	if err := l.AdvanceStartOffset(51); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.OffsetForTimestamp(0); got != 51 {
		t.Errorf("after start moved to 51: %d", got)
	}
}

func TestRejectedBatchWritesNothing(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, storage.Config{}, nil)
	defer l.Close()
	appendBatches(t, l, 2, 3, 10, 0)
	before, beforeFile := l.Size(), fileSize(t, segPath(dir, 0, ".log"))
	bad := makeBatch(2, 10, 0)
	bad[len(bad)-1] ^= 0xff
	tooFew := makeBatch(2, 10, 0)
	tooFew[60] = 9 // recordCount 9 != lastOffsetDelta+1
	fixCRC(tooFew)
	wrongMagic := makeBatch(2, 10, 0)
	wrongMagic[16] = 1
	cases := map[string][]byte{
		"bad crc in 2nd of 3": concat(makeBatch(2, 10, 0), bad, makeBatch(2, 10, 0)),
		"record count":        concat(makeBatch(2, 10, 0), tooFew),
		"magic":               wrongMagic,
		"torn":                makeBatch(2, 10, 0)[:70],
		"empty":               nil,
	}
	for name, b := range cases {
		if _, err := l.Append(b, storage.AppendOptions{}); !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
		if l.LogEndOffset() != 6 || l.Size() != before || fileSize(t, segPath(dir, 0, ".log")) != beforeFile {
			t.Fatalf("%s: LEO %d size %d", name, l.LogEndOffset(), l.Size())
		}
	}
	l.SetConfig(storage.Config{MaxBatchBytes: 100})
	if _, err := l.Append(makeBatch(5, 10, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrBatchTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, err := l.Append(makeBatch(1, 10, 0), storage.AppendOptions{}); err != nil {
		t.Errorf("small batch after SetConfig: %v", err)
	}
}

func TestKeepOffsetsAndLogAppendTime(t *testing.T) {
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	defer l.Close()
	b := makeBatch(3, 10, 5)
	b[7] = 0 // base offset 0
	if _, err := l.Append(b, storage.AppendOptions{KeepOffsets: true}); err != nil {
		t.Fatal(err)
	}
	next := makeBatch(3, 10, 5)
	next[7] = 2 // overlaps 0..2
	if _, err := l.Append(next, storage.AppendOptions{KeepOffsets: true}); !errors.Is(err, storage.ErrInvalidOffsets) {
		t.Fatalf("overlapping KeepOffsets append: %v", err)
	}
	next[7] = 3
	if res, err := l.Append(next, storage.AppendOptions{KeepOffsets: true}); err != nil || res.BaseOffset != 3 || res.LastOffset != 5 {
		t.Fatalf("KeepOffsets append: %+v %v", res, err)
	}
	// A gap, as a compacted leader's log has where it cleaned a batch away.
	next[7] = 9
	if res, err := l.Append(next, storage.AppendOptions{KeepOffsets: true}); err != nil || res.BaseOffset != 9 || l.LogEndOffset() != 12 {
		t.Fatalf("KeepOffsets append across a gap: %+v %v, end %d", res, err, l.LogEndOffset())
	}
	res, err := l.Append(makeBatch(1, 10, 5), storage.AppendOptions{LogAppendTime: true})
	if err != nil || res.LogAppendTime < 1e12 || res.MaxTimestamp != res.LogAppendTime {
		t.Fatalf("LogAppendTime append: %+v %v", res, err)
	}
	hs := readAll(t, l) // validates the recomputed CRC
	if h := hs[3]; h.MaxTimestamp != res.LogAppendTime || h.Attributes&8 == 0 {
		t.Fatalf("stamped header %+v", h)
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	c := storage.Config{}.Defaults()
	if c.SegmentBytes != 1<<30 || c.IndexIntervalBytes != 4096 || c.RetentionBytes != -1 || c.RetentionTime <= 0 || c.SegmentMaxAge <= 0 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := c
	bad.SegmentBytes = 10
	bad.MaxBatchBytes = -1
	if err := bad.Validate(); err == nil {
		t.Fatal("invalid config accepted")
	}
	if _, err := storage.Open(t.TempDir(), bad, storage.Options{}); err == nil {
		t.Fatal("Open accepted an invalid config")
	}
}

func TestClosedLog(t *testing.T) {
	l := openLog(t, t.TempDir(), storage.Config{}, nil)
	appendBatches(t, l, 1, 1, 1, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(1, 1, 0), storage.AppendOptions{}); !errors.Is(err, storage.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := l.Read(storage.ReadOptions{}, nil); !errors.Is(err, storage.ErrClosed) {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, storage.ErrClosed) {
		t.Fatal(err)
	}
}

// TestSealedIndexCacheBounded reads a many-segment log with an index cache
// that holds about two segments' indexes: views are dropped and reloaded,
// and every read stays correct.
func TestSealedIndexCacheBounded(t *testing.T) {
	defer storage.SetIndexCacheLimit(2 * (20*16 + 64))()
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 4000, IndexIntervalBytes: 200}
	l := openLog(t, dir, cfg, nil)
	appendBatches(t, l, 200, 2, 100, 7)
	check := func(l *storage.Log) {
		checkEveryOffset(t, l)
		if used := storage.IndexCacheUsed(); used > 4*(20*16+64) {
			t.Fatalf("cache holds %d bytes", used)
		}
		if off, err := l.OffsetForTimestamp(7); err != nil || off != l.LogStartOffset() {
			t.Fatalf("OffsetForTimestamp: %d, %v", off, err)
		}
	}
	check(l)
	if err := l.TruncateTo(150); err != nil { // into a sealed segment
		t.Fatal(err)
	}
	appendBatches(t, l, 50, 2, 100, 7)
	check(l)
	l.Close()
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	check(l2)
}
