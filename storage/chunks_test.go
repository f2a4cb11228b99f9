package storage_test

import (
	"reflect"
	"testing"

	"github.com/ferry-mq/ferry/storage"
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
