package storage_test

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/memfs"
)

// TestCrashKeepsAcknowledgedData takes crash images of an in-memory disk
// while writers append (some with Sync, across many segment rolls), then
// recovers each image: every Sync append acknowledged before the image and
// everything below the recovery point seen before it must be there, whole.
func TestCrashKeepsAcknowledgedData(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 8 << 10, IndexIntervalBytes: 256}
	l := openLog(t, "/data/p-0", cfg, fs)
	type acked struct{ base, last int64 }
	type image struct {
		fs      *memfs.FS
		acked   []acked
		flushed int64
	}
	var (
		mu      sync.Mutex
		ackList []acked
		images  []image
		wg      sync.WaitGroup
		r       = rand.New(rand.NewSource(1)) // guarded by mu
	)
	const writers, each = 12, 60
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				sync := w%3 != 0
				res, err := l.Append(makeBatch(1+i%3, 100+w, int64(i)), storage.AppendOptions{Sync: sync})
				if err != nil {
					t.Error(err)
					return
				}
				if sync {
					mu.Lock()
					ackList = append(ackList, acked{res.BaseOffset, res.LastOffset})
					if len(ackList)%25 == 0 {
						// Crash now, while the other writers go on.
						img := image{acked: append([]acked(nil), ackList...), flushed: l.FlushedOffset()}
						img.fs = fs.CrashImage(r)
						images = append(images, img)
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	if len(images) < 5 {
		t.Fatalf("only %d crash images", len(images))
	}
	for i, img := range images {
		l2 := openLog(t, "/data/p-0", cfg, img.fs)
		if l2.LogEndOffset() < img.flushed {
			t.Fatalf("image %d: LEO %d below recovery point %d", i, l2.LogEndOffset(), img.flushed)
		}
		readAll(t, l2)
		for _, a := range img.acked {
			res, err := l2.Read(storage.ReadOptions{Offset: a.base, MaxBytes: 1, MinOneBatch: true}, nil)
			if err != nil || res.Batches != 1 {
				t.Fatalf("image %d: acknowledged batch at %d lost: %v", i, a.base, err)
			}
			if h := headers(t, res.Data)[0]; h.BaseOffset != a.base || h.LastOffset() != a.last {
				t.Fatalf("image %d: batch [%d, %d] came back as [%d, %d]", i, a.base, a.last, h.BaseOffset, h.LastOffset())
			}
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d crash images checked, the last with %d acknowledged appends, %d segments", len(images), len(images[len(images)-1].acked), l.SegmentCount())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
