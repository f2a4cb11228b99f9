package storage_test

import (
	"sync"
	"testing"

	"github.com/ferry-mq/ferry/storage"
)

// TestOnRollReportsEachNewSegment: Options.OnRoll is called once per roll
// with the new active segment's base offset.
func TestOnRollReportsEachNewSegment(t *testing.T) {
	var mu sync.Mutex
	var bases []int64
	l, err := storage.Open(t.TempDir(), storage.Config{SegmentBytes: 1024}, storage.Options{
		Logger: testLogger(t),
		OnRoll: func(base int64) {
			mu.Lock()
			defer mu.Unlock()
			bases = append(bases, base)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 6; i++ {
		if _, err := l.Append(makeBatch(4, 100, 1000), storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bases) != l.SegmentCount()-1 || len(bases) == 0 {
		t.Fatalf("rolls reported at %v, %d segments", bases, l.SegmentCount())
	}
	for i, base := range bases {
		if base <= 0 || base%4 != 0 || (i > 0 && base <= bases[i-1]) {
			t.Fatalf("roll bases %v: not new segment bases", bases)
		}
	}
}
