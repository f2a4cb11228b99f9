package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := storage.Config{SegmentBytes: 1000, RetentionTime: time.Hour}
	l, err := storage.Open(dir, cfg, storage.Options{Now: clock.Now, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Ten minutes of data per segment-ish: timestamps follow the clock.
	for i := 0; i < 40; i++ {
		appendBatches(t, l, 1, 2, 100, clock.Now().UnixMilli())
		clock.Advance(5 * time.Minute)
	}
	segs := l.SegmentCount()
	if segs < 5 {
		t.Fatalf("%d segments", segs)
	}
	n, err := l.EnforceRetention(clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	// 200 minutes of data, one hour kept.
	if n == 0 || l.SegmentCount() != segs-n {
		t.Fatalf("deleted %d of %d, %d left", n, segs, l.SegmentCount())
	}
	start := l.LogStartOffset()
	res, err := l.Read(storage.ReadOptions{Offset: start, MaxBytes: 1, MinOneBatch: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := headers(t, res.Data)[0]; clock.Now().UnixMilli()-h.MaxTimestamp > (time.Hour + 30*time.Minute).Milliseconds() {
		t.Fatalf("oldest kept batch is %v old", time.Duration(clock.Now().UnixMilli()-h.MaxTimestamp)*time.Millisecond)
	}
	if _, err := l.Read(storage.ReadOptions{Offset: start - 1, MaxBytes: 100}, nil); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// Far in the future everything expired, but the active segment stays.
	clock.Advance(24 * time.Hour)
	if _, err := l.EnforceRetention(clock.Now()); err != nil {
		t.Fatal(err)
	}
	if l.SegmentCount() != 1 || l.LogEndOffset() != 80 {
		t.Fatalf("%d segments, LEO %d", l.SegmentCount(), l.LogEndOffset())
	}
	start = l.LogStartOffset()
	readAll(t, l)
	l.Close()
	// The start offset survives a restart.
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	if l2.LogStartOffset() != start {
		t.Fatalf("start offset %d after restart, want %d", l2.LogStartOffset(), start)
	}
}

func TestRetentionRollsAnOldActiveSegment(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := storage.Config{SegmentMaxAge: time.Hour, RetentionTime: time.Hour}
	l, err := storage.Open(t.TempDir(), cfg, storage.Options{Now: clock.Now, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBatches(t, l, 3, 1, 10, clock.Now().UnixMilli())
	clock.Advance(3 * time.Hour)
	if n, err := l.EnforceRetention(clock.Now()); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 || l.SegmentCount() != 1 {
		t.Fatalf("start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.SegmentCount())
	}
	// Roll by age on append too.
	appendBatches(t, l, 1, 1, 10, clock.Now().UnixMilli())
	clock.Advance(2 * time.Hour)
	appendBatches(t, l, 1, 1, 10, clock.Now().UnixMilli())
	if l.SegmentCount() != 2 {
		t.Fatalf("%d segments after an old active segment got an append", l.SegmentCount())
	}
}

func TestRetentionByBytes(t *testing.T) {
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 1000, RetentionBytes: 3000, RetentionTime: -1}
	l := openLog(t, dir, cfg, nil)
	defer l.Close()
	appendBatches(t, l, 60, 1, 100, 0) // 161 bytes each, 6 per segment
	n, err := l.EnforceRetention(time.Now())
	if err != nil || n == 0 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	// As Kafka: a segment goes only if the log stays at or above the limit.
	if l.Size() < 3000 || l.Size()-966 >= 3000 {
		t.Fatalf("size %d after retention to 3000", l.Size())
	}
	readAll(t, l)
	l.SetConfig(storage.Config{SegmentBytes: 1000, RetentionBytes: 1, RetentionTime: -1})
	if _, err := l.EnforceRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	if l.SegmentCount() != 1 {
		t.Fatalf("%d segments: the active one must stay, alone", l.SegmentCount())
	}
}

func TestAdvanceStartOffset(t *testing.T) {
	dir := t.TempDir()
	cfg := storage.Config{SegmentBytes: 1000}
	l := openLog(t, dir, cfg, nil)
	appendBatches(t, l, 30, 2, 100, 0) // 261 bytes, 3 batches per segment
	segs := l.SegmentCount()
	if err := l.AdvanceStartOffset(13); err != nil {
		t.Fatal(err)
	}
	// Segments are [0..5], [6..11], [12..17]...: two go.
	if l.LogStartOffset() != 13 || l.SegmentCount() != segs-2 {
		t.Fatalf("start %d, %d of %d segments", l.LogStartOffset(), l.SegmentCount(), segs)
	}
	if _, err := l.Read(storage.ReadOptions{Offset: 12, MaxBytes: 100}, nil); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	res, err := l.Read(storage.ReadOptions{Offset: 13, MaxBytes: 1, MinOneBatch: true}, nil)
	if err != nil || headers(t, res.Data)[0].BaseOffset != 12 {
		t.Fatalf("read at start: %v", err)
	}
	if err := l.AdvanceStartOffset(5); err != nil || l.LogStartOffset() != 13 {
		t.Fatalf("moving back: %v, start %d", err, l.LogStartOffset())
	}
	if err := l.AdvanceStartOffset(61); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	if err := l.AdvanceStartOffset(60); err != nil || l.SegmentCount() != 1 {
		t.Fatalf("to the end: %v, %d segments", err, l.SegmentCount())
	}
	// Persisted, even across a crash.
	l2 := openLog(t, dir, cfg, nil)
	defer l2.Close()
	if l2.LogStartOffset() != 60 || l2.LogEndOffset() != 60 {
		t.Fatalf("after restart start %d end %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

func TestTruncateTo(t *testing.T) {
	for _, clean := range []bool{true, false} {
		dir := t.TempDir()
		cfg := storage.Config{SegmentBytes: 1000, IndexIntervalBytes: 100}
		l := openLog(t, dir, cfg, nil)
		appendBatches(t, l, 30, 2, 100, 0) // 3 batches per segment
		segs := l.SegmentCount()
		if err := l.TruncateTo(45); err != nil { // mid-batch [44, 45]
			t.Fatal(err)
		}
		if l.LogEndOffset() != 44 || l.SegmentCount() != segs-2 {
			t.Fatalf("after truncate to 45: LEO %d, %d segments (were %d)", l.LogEndOffset(), l.SegmentCount(), segs)
		}
		if err := l.TruncateTo(36); err != nil { // first batch of a segment
			t.Fatal(err)
		}
		if l.LogEndOffset() != 36 {
			t.Fatalf("LEO %d", l.LogEndOffset())
		}
		if err := l.TruncateTo(17); err != nil { // last batch of an older one
			t.Fatal(err)
		}
		if l.LogEndOffset() != 16 {
			t.Fatalf("LEO %d", l.LogEndOffset())
		}
		if err := l.TruncateTo(100); err != nil || l.LogEndOffset() != 16 {
			t.Fatalf("truncate above end: %v", err)
		}
		appendBatches(t, l, 10, 2, 100, 0)
		checkEveryOffset(t, l)
		want := mustRead(t, l, 0)
		if clean {
			l.Close()
		}
		l2 := openLog(t, dir, cfg, nil)
		if l2.LogEndOffset() != 36 || string(mustRead(t, l2, 0)) != string(want) {
			t.Fatalf("clean=%v: after restart LEO %d", clean, l2.LogEndOffset())
		}
		checkEveryOffset(t, l2)
		l2.Close()
	}
}
