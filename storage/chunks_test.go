package storage_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/memfs"
)

// A ChunksOnly read finds the very ranges a copying read returns, for
// every offset, budget and high watermark, across segments, without
// touching dst.
// Small batches (headers read a window at a time) and large ones (one
// header at a time) are mixed.
func TestChunksOnlyMatchesCopyingRead(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 64 << 10, IndexIntervalBytes: 300}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	for i := 0; i < 400; i++ {
		size := 20 + i%50
		if i%37 == 0 {
			size = 3000 + 100*i // 4 KiB and up
		}
		if _, err := l.Append(makeBatch(1+i%4, size, int64(i)), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() < 3 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	end := l.LogEndOffset()
	for off := int64(0); off <= end; off += 7 {
		for _, maxBytes := range []int{0, 1, 150, 700, 5000, 40000, 1 << 20} {
			for _, maxOffset := range []int64{0, off + 1, off + 7, end - 2} {
				for _, minOne := range []bool{false, true} {
					opt := storage.ReadOptions{Offset: off, MaxBytes: maxBytes, MinOneBatch: minOne, MaxOffset: maxOffset}
					want, werr := l.Read(opt, nil)
					opt.ChunksOnly = true
					got, gerr := l.Read(opt, []byte("dst"))
					if (werr == nil) != (gerr == nil) {
						t.Fatalf("%+v: errors %v and %v", opt, werr, gerr)
					}
					if string(got.Data) != "dst" {
						t.Fatalf("%+v: ChunksOnly changed dst to %d bytes", opt, len(got.Data))
					}
					want.Data, got.Data = nil, nil
					if !reflect.DeepEqual(want, got) {
						t.Fatalf("%+v:\ncopying    %+v\nchunks only %+v", opt, want, got)
					}
				}
			}
		}
	}
}

// A ChunksOnly read with CopyBelow copies what a copying read returns
// when it starts in the last segment with less than CopyBelow left (a
// consumer at the tail), Chunks as before; anything else stays on disk.
func TestChunksOnlyCopiesASmallTail(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 16 << 10, IndexIntervalBytes: 300}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	for i := 0; i < 300; i++ {
		if _, err := l.Append(makeBatch(1+i%3, 40+i%50, int64(i)), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.SegmentCount() < 3 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	const copyBelow = 2000
	end := l.LogEndOffset()
	copiedTail := false
	for off := int64(0); off < end; off++ {
		for _, maxBytes := range []int{1, 700, 1 << 20} {
			opt := storage.ReadOptions{Offset: off, MaxBytes: maxBytes, MinOneBatch: true}
			want, err := l.Read(opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			opt.ChunksOnly, opt.CopyBelow = true, copyBelow
			got, err := l.Read(opt, []byte("dst"))
			if err != nil {
				t.Fatal(err)
			}
			copied := len(got.Data) > len("dst")
			switch {
			case copied && string(got.Data) != "dst"+string(want.Data):
				t.Fatalf("%+v: copied %d bytes, a copying read %d", opt, len(got.Data)-3, len(want.Data))
			case copied && (len(want.Data) >= copyBelow || off < end-60):
				t.Fatalf("%+v: copied %d bytes from offset %d of %d", opt, len(want.Data), off, end)
			case !copied && off >= end-5:
				t.Fatalf("%+v: the last records (%d bytes) were not copied", opt, len(want.Data))
			}
			copiedTail = copiedTail || copied
			if !reflect.DeepEqual(want.Chunks, got.Chunks) || want.NextOffset != got.NextOffset || want.Batches != got.Batches {
				t.Fatalf("%+v:\ncopying    %+v\nchunks only %+v", opt, want, got)
			}
		}
	}
	if !copiedTail {
		t.Fatal("no read copied")
	}
}

// A chunk goes through the log's FS: on an in-memory FS it opens, writes
// itself and copies itself as the bytes a copying read returns.
func TestChunkThroughTheLogsFS(t *testing.T) {
	mem := memfs.New()
	mem.MkdirAll("/p-0", 0o755)
	l := openLog(t, "/p-0", storage.Config{SegmentBytes: 4096}, mem)
	defer l.Close()
	appendBatches(t, l, 40, 3, 50, 1)
	want, err := l.Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20}, nil)
	if err != nil || len(want.Chunks) < 2 {
		t.Fatalf("read: %d chunks, %v", len(want.Chunks), err)
	}
	got, err := l.Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20, ChunksOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sent, copied bytes.Buffer
	for i := range got.Chunks {
		c := &got.Chunks[i]
		if err := c.Open(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteTo(&sent); err != nil {
			t.Fatal(err)
		}
		b, err := c.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		copied.Write(b)
		c.Close()
	}
	if !bytes.Equal(sent.Bytes(), want.Data) || !bytes.Equal(copied.Bytes(), want.Data) {
		t.Fatalf("chunks sent %d and copied %d bytes, the read %d, or they differ", sent.Len(), copied.Len(), len(want.Data))
	}
}

// Open refuses a segment that is gone or no longer holds a batch at the
// chunk; a file cut under an opened chunk fails its write.
func TestChunkNoticesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, storage.Config{}, nil)
	defer l.Close()
	appendBatches(t, l, 5, 2, 100, 1)
	read := func() *storage.Chunk {
		res, err := l.Read(storage.ReadOptions{Offset: 4, MaxBytes: 1 << 20, ChunksOnly: true}, nil)
		if err != nil || len(res.Chunks) != 1 {
			t.Fatalf("read: %d chunks, %v", len(res.Chunks), err)
		}
		return &res.Chunks[0]
	}
	seg := filepath.Join(dir, "00000000000000000000.log")
	c := read()
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, 300); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTo(io.Discard); !errors.Is(err, storage.ErrChunkChanged) {
		t.Fatalf("write of a cut file: %v", err)
	}
	c.Close()
	if err := c.Open(); !errors.Is(err, storage.ErrChunkChanged) {
		t.Fatalf("open of a cut file: %v", err)
	}
	if err := os.Remove(seg); err != nil {
		t.Fatal(err)
	}
	if err := c.Open(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a deleted file: %v", err)
	}
}
