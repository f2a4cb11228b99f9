package storage_test

import (
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/memfs"
)

// TestAbortedTxnIndex: entries land in the marker's segment, a range query
// finds those overlapping it across segments, a replayed entry is ignored,
// and the entries survive a crash image (each is fsynced) and a reopen.
func TestAbortedTxnIndex(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 2 << 10, IndexIntervalBytes: 256}
	l := openLog(t, "/data/t-0", cfg, fs)
	appendBatches(t, l, 39, 1, 100, 1) // several segments
	if _, err := l.Append(makeBatch(1, 100, 1), storage.AppendOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if l.SegmentCount() < 3 {
		t.Fatalf("%d segments", l.SegmentCount())
	}
	a1 := storage.AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 12, LastStableOffset: 13}
	a2 := storage.AbortedTxn{ProducerID: 8, FirstOffset: 10, LastOffset: 30, LastStableOffset: 31}
	for _, a := range []storage.AbortedTxn{a2, a1, a1} { // out of marker order (concurrent aborts), then a replay
		if err := l.AppendAbortedTxn(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AppendAbortedTxn(storage.AbortedTxn{ProducerID: 1, FirstOffset: 50, LastOffset: 90}); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("entry above the log end: %v", err)
	}
	check := func(l *storage.Log, from, upTo int64, want ...storage.AbortedTxn) {
		t.Helper()
		got, err := l.AbortedTxns(from, upTo)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("AbortedTxns(%d, %d) = %v, %v; want %v", from, upTo, got, err, want)
		}
	}
	check(l, 0, 40, a1, a2)
	check(l, 13, 40, a2)
	check(l, 0, 10, a1)
	check(l, 31, 40)
	img := fs.CrashImage(rand.New(rand.NewSource(1)))
	l2 := openLog(t, "/data/t-0", cfg, img)
	check(l2, 0, 40, a1, a2)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	l3 := openLog(t, "/data/t-0", cfg, img)
	check(l3, 0, 40, a1, a2)
	// A truncation below a marker drops its entry.
	if err := l3.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	check(l3, 0, 40, a1)
	l3.Close()
	l.Close()
}

// TestAbortedTxnIndexCrashAboveEnd: an entry whose marker a crash cut
// from the log (the log tail was not fsynced, the entry was) is dropped at
// open, so the offsets appended again are not taken for aborted.
func TestAbortedTxnIndexCrashAboveEnd(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 1 << 20, IndexIntervalBytes: 256}
	l := openLog(t, "/data/t-0", cfg, fs)
	if _, err := l.Append(makeBatch(5, 10, 1), storage.AppendOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, 5, 1, 10, 2) // not fsynced
	a := storage.AbortedTxn{ProducerID: 3, FirstOffset: 5, LastOffset: 9, LastStableOffset: 10}
	if err := l.AppendAbortedTxn(a); err != nil {
		t.Fatal(err)
	}
	img := fs.CrashImage(rand.New(rand.NewSource(2)))
	l2 := openLog(t, "/data/t-0", cfg, img)
	defer l2.Close()
	got, err := l2.AbortedTxns(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if l2.LogEndOffset() <= 9 && len(got) != 0 {
		t.Fatalf("log ends at %d but the index still holds %v", l2.LogEndOffset(), got)
	}
	if l2.LogEndOffset() > 9 && !slices.Equal(got, []storage.AbortedTxn{a}) {
		t.Fatalf("log ends at %d, index %v", l2.LogEndOffset(), got)
	}
	l.Close()
}

// TestAbortedTxnIndexGoesWithSegment: retention deletes a segment's
// index with it.
func TestAbortedTxnIndexGoesWithSegment(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 2 << 10, IndexIntervalBytes: 256, RetentionTime: time.Hour}
	l := openLog(t, "/data/t-0", cfg, fs)
	defer l.Close()
	appendBatches(t, l, 40, 1, 100, 1) // timestamps of 1970: expired
	a := storage.AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}
	if err := l.AppendAbortedTxn(a); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat("/data/t-0/00000000000000000000.txnindex"); err != nil {
		t.Fatal(err)
	}
	if n, err := l.EnforceRetention(time.Now()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	if _, err := fs.Stat("/data/t-0/00000000000000000000.txnindex"); err == nil {
		t.Fatal("the deleted segment's .txnindex is still there")
	}
	if got, _ := l.AbortedTxns(0, 100); len(got) != 0 {
		t.Fatalf("index after retention: %v", got)
	}
}
