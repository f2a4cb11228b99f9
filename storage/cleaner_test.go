package storage_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/memfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// kv is one record of a compaction scenario: key "" is keyless, tombstone
// a null value.
type kv struct {
	key, value string
	tombstone  bool
}

// rec is a record as read back from the log.
type rec struct {
	offset     int64
	key, value string
	tombstone  bool
}

func keyedBatch(t testing.TB, ts int64, kvs ...kv) []byte {
	t.Helper()
	var b records.Builder
	for _, r := range kvs {
		var key, value []byte
		if r.key != "" {
			key = []byte(r.key)
		}
		if !r.tombstone {
			value = []byte(r.value)
		}
		b.Add(records.Record{Key: key, Value: value, Timestamp: ts})
	}
	batch, err := b.AppendBatch(nil, records.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// readRecords reads every record of the log from its start, checking
// that offsets increase.
func readRecords(t testing.TB, l *storage.Log) []rec {
	t.Helper()
	res, err := l.Read(storage.ReadOptions{Offset: l.LogStartOffset(), MaxBytes: 64 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []rec
	err = records.Decode(res.Data, 0, 0, func(r records.Record) bool {
		if n := len(out); n > 0 && out[n-1].offset >= r.Offset {
			t.Fatalf("offset %d after %d", r.Offset, out[n-1].offset)
		}
		out = append(out, rec{r.Offset, string(r.Key), string(r.Value), r.Value == nil})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scenario appends librdkafka-style traffic (10 keys updated over 6
// rounds, two of them deleted, keyless records), with 8 records a batch
// into tiny segments, then one batch that rolls a new active segment.
func scenario(t testing.TB, l *storage.Log, ts int64) { scenarioKeys(t, l, ts, "k") }

// scenarioKeys is scenario with keys named prefix0..prefix9.
func scenarioKeys(t testing.TB, l *storage.Log, ts int64, prefix string) {
	t.Helper()
	var pending []kv
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if _, err := l.Append(keyedBatch(t, ts, pending...), storage.AppendOptions{Sync: true}); err != nil {
			t.Fatal(err)
		}
		pending = nil
	}
	for round := 0; round < 6; round++ {
		for k := 0; k < 10; k++ {
			r := kv{key: fmt.Sprintf("%s%d", prefix, k), value: fmt.Sprintf("v%d-%d", k, round)}
			if round == 5 && (k == 3 || k == 7) {
				r = kv{key: r.key, tombstone: true}
			}
			pending = append(pending, r)
			if k == 4 {
				pending = append(pending, kv{value: "keyless"})
			}
			if len(pending) >= 8 {
				flush()
			}
		}
	}
	flush()
}

// wantCompacted is Kafka's result of cleaning recs below end: for each
// key only its latest record, keyless records gone; records at or above
// end untouched.
func wantCompacted(recs []rec, end int64, dropTombstones bool) []rec {
	latest := map[string]int64{}
	for _, r := range recs {
		if r.key != "" && r.offset < end {
			latest[r.key] = r.offset
		}
	}
	var out []rec
	for _, r := range recs {
		if r.offset >= end {
			out = append(out, r)
			continue
		}
		if r.key == "" || latest[r.key] != r.offset || (r.tombstone && dropTombstones) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func cleanOpts(m *storage.OffsetMap, upper int64, now time.Time) storage.CleanOptions {
	return storage.CleanOptions{Codec: records.Cleaner{}, Map: m, UpperBound: upper, DeleteRetention: time.Hour,
		Now: func() time.Time { return now }}
}

func TestCleanerKeepsLatestPerKey(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/c-0", cfg, fs)
	scenario(t, l, 1000)
	before := readRecords(t, l)
	segsBefore := l.SegmentCount()
	now := time.UnixMilli(1_000_000)
	res, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), now))
	if err != nil {
		t.Fatal(err)
	}
	after := readRecords(t, l)
	want := wantCompacted(before, res.CleanedTo, false)
	if !slices.Equal(after, want) {
		t.Fatalf("after cleaning to %d:\n got %v\nwant %v", res.CleanedTo, after, want)
	}
	if res.KeylessRemoved == 0 {
		t.Fatalf("pass %+v: keyless records kept", res)
	}
	t.Logf("pass %+v; segments %d -> %d; records %d -> %d", res, segsBefore, l.SegmentCount(), len(before), len(after))

	// A restart keeps the cleaned log, its gaps and the cleaner's offset.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, "/data/c-0", cfg, fs)
	if got := readRecords(t, l); !slices.Equal(got, after) {
		t.Fatalf("after restart:\n got %v\nwant %v", got, after)
	}
	if l.CleanedTo() != res.CleanedTo {
		t.Fatalf("cleaner offset %d after restart, want %d", l.CleanedTo(), res.CleanedTo)
	}
	// Reads that start inside a gap land on the next survivor.
	for _, r := range before {
		got, err := l.Read(storage.ReadOptions{Offset: r.offset, MaxBytes: 1, MinOneBatch: true}, nil)
		if err != nil || got.Batches == 0 {
			t.Fatalf("read at %d in a gap: %v, %d batches", r.offset, err, got.Batches)
		}
	}

	// Tombstones stay within delete.retention.ms of the pass that first
	// cleaned past them, and go in a pass after it.
	scenarioKeys(t, l, 2000, "x")
	all := readRecords(t, l)
	res2, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), now.Add(30*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	if got := readRecords(t, l); !slices.Equal(got, wantCompacted(all, res2.CleanedTo, false)) {
		t.Fatalf("second pass, tombstones within retention:\n got %v", got)
	}
	scenarioKeys(t, l, 3000, "y")
	all = readRecords(t, l)
	res3, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), now.Add(2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, l)
	// Tombstones stamped by pass 2 are past their horizon; the newest
	// ones (stamped now) stay.
	if res3.TombstonesRemoved == 0 {
		t.Fatalf("third pass removed no tombstone: %+v", res3)
	}
	if res3.SegmentsOut >= res3.SegmentsIn {
		t.Fatalf("third pass merged no small segments: %+v", res3)
	}
	for _, r := range got {
		if r.tombstone && r.offset < res2.CleanedTo {
			t.Fatalf("tombstone at %d kept past its horizon", r.offset)
		}
	}
	if !slices.ContainsFunc(got, func(r rec) bool { return r.tombstone && r.offset >= res2.CleanedTo && r.offset < res3.CleanedTo }) {
		t.Fatalf("the tombstones pass 3 first cleaned past are gone already: %v", got)
	}
	checkLatestVisible(t, all, got, res3.CleanedTo)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkLatestVisible: a reader from the start sees the last value of
// every key (a tombstone may be gone, never a stale value).
func checkLatestVisible(t testing.TB, all, got []rec, end int64) {
	t.Helper()
	latest := map[string]rec{}
	for _, r := range all {
		if r.key != "" {
			latest[r.key] = r
		}
	}
	seen := map[string]rec{}
	for _, r := range got {
		if r.key != "" {
			seen[r.key] = r
		}
	}
	for k, r := range latest {
		s, ok := seen[k]
		if ok && s != r || !ok && !r.tombstone {
			t.Fatalf("key %s: latest %v, reader sees %v (%v)", k, r, s, ok)
		}
	}
}

// TestCleanerSeveralPasses: a map too small for every key cleans the log
// in several passes, ending where one large map would.
func TestCleanerSeveralPasses(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	big := openLog(t, "/data/big-0", cfg, memfs.New())
	small := openLog(t, "/data/small-0", cfg, memfs.New())
	scenario(t, big, 1000)
	scenario(t, small, 1000)
	now := time.UnixMilli(1_000_000)
	if _, err := big.Clean(cleanOpts(storage.NewOffsetMap(1<<20), big.LogEndOffset(), now)); err != nil {
		t.Fatal(err)
	}
	m := storage.NewOffsetMap(12 * 24) // 10 keys' worth at 90%
	passes := 0
	for ; passes < 50; passes++ {
		res, err := small.Clean(cleanOpts(m, small.LogEndOffset(), now))
		if err != nil {
			t.Fatal(err)
		}
		if res.CleanedTo == 0 {
			break
		}
	}
	if passes < 3 {
		t.Fatalf("%d passes with a %d-key map", passes, m.Capacity())
	}
	// Each pass knows only the keys of its own range, so the small map
	// may leave older copies the big pass dropped: a reader still sees
	// every key's latest value.
	got, want := readRecords(t, small), readRecords(t, big)
	checkLatestVisible(t, want, got, 0)
	t.Logf("%d passes; %d records left (one big pass: %d)", passes, len(got), len(want))
}

// TestCleanerCrashAtEveryFileOperation takes a crash image before every
// file operation of a pass: each recovers to the log before the pass,
// after it, or after some of its segment groups in order (the groups
// before a cut cleaned, the rest untouched), never a group half swapped.
func TestCleanerCrashAtEveryFileOperation(t *testing.T) {
	t.Run("first pass", func(t *testing.T) { crashDuringPass(t, false) })
	t.Run("merging pass", func(t *testing.T) { crashDuringPass(t, true) })
}

// crashDuringPass runs the crash-image check over a log's first pass or,
// with merging, over a second pass that merges the first's small
// segments with new ones. At every file operation of the pass, and of
// the reads after it that rebuild the cleaned segments' indexes, it takes
// three images: a kill -9 (every byte and name the kernel has), a crash
// (fsynced bytes plus a random part of the rest) and a power loss (also
// the directory entries since each directory's last fsync undone).
func crashDuringPass(t *testing.T, merging bool) {
	mem := memfs.New()
	efs := errorfs.New(mem)
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/x-0", cfg, efs)
	scenario(t, l, 1000)
	if merging {
		if _, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000))); err != nil {
			t.Fatal(err)
		}
		scenarioKeys(t, l, 2000, "x")
	}
	before := readRecords(t, l)
	var images []*memfs.FS
	r := rand.New(rand.NewSource(7))
	snap := func(string) { images = append(images, mem.KillImage(), mem.CrashImage(r), mem.PowerLossImage(r)) }
	for _, op := range []errorfs.Op{errorfs.OpOpen, errorfs.OpWrite, errorfs.OpSync, errorfs.OpTruncate, errorfs.OpRemove, errorfs.OpRename} {
		efs.Inject(errorfs.Fault{Op: op, Hook: snap})
	}
	res, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	after := readRecords(t, l)
	checkReads(t, l) // rebuilds the cleaned segments' indexes, hooks still on
	efs.Clear()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	images = append(images, mem.CrashImage(r), mem.PowerLossImage(r))
	if len(images) < 60 {
		t.Fatalf("only %d crash images", len(images))
	}
	nested := 0
	for i, img := range images {
		pristine := img.KillImage() // recovery changes img
		got, err := recoverImage(t, img, cfg)
		if err == nil {
			err = beforeOrAfter(before, after, got)
		}
		if err != nil {
			t.Fatalf("image %d of %d: %v", i, len(images), err)
		}
		if i%3 == 2 { // a crash while recovering: the same log again
			nested += crashDuringRecovery(t, pristine, cfg, got)
		}
	}
	if merging && res.SegmentsOut >= res.SegmentsIn {
		t.Fatalf("the pass merged nothing: %+v", res)
	}
	t.Logf("%d crash images recovered, %d more taken during their recoveries; pass %+v", len(images), nested, res)
}

// recoverImage opens the log in img and checks what recovery promises:
// no cleaner file left, everything fsynced (a power loss right after
// open changes nothing), the cleaner checkpoint within the log, and reads
// through the indexes that agree with a scan. It returns the records.
func recoverImage(t *testing.T, img *memfs.FS, cfg storage.Config) ([]rec, error) {
	t.Helper()
	l := openLog(t, "/data/x-0", cfg, img)
	got := readRecords(t, l)
	checkReads(t, l)
	names, _ := img.ReadDir("/data/x-0")
	for _, n := range names {
		if strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
			return nil, fmt.Errorf("%s left after open", n)
		}
	}
	if l.FlushedOffset() != l.LogEndOffset() || l.CleanedTo() > l.LogEndOffset() {
		return nil, fmt.Errorf("after open: recovery point %d, cleaned to %d, log end %d", l.FlushedOffset(), l.CleanedTo(), l.LogEndOffset())
	}
	lost := img.PowerLossImage(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, "/data/x-0", cfg, lost)
	defer l2.Close()
	if again := readRecords(t, l2); !slices.Equal(again, got) {
		return nil, fmt.Errorf("a power loss after recovery changed the log:\n got %v\nwant %v", again, got)
	}
	return got, nil
}

// crashDuringRecovery crashes again at every file operation of the
// recovery of img (completing a swap, removing a .cleaned file,
// rebuilding indexes): each image must recover to want. It returns how
// many images it checked.
func crashDuringRecovery(t *testing.T, img *memfs.FS, cfg storage.Config, want []rec) int {
	t.Helper()
	efs := errorfs.New(img)
	var images []*memfs.FS
	r := rand.New(rand.NewSource(11))
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync, errorfs.OpTruncate, errorfs.OpRemove, errorfs.OpRename} {
		efs.Inject(errorfs.Fault{Op: op, Hook: func(string) { images = append(images, img.KillImage(), img.PowerLossImage(r)) }})
	}
	l := openLog(t, "/data/x-0", cfg, efs)
	checkReads(t, l)
	efs.Clear()
	l.Close()
	for i, again := range images {
		got, err := recoverImage(t, again, cfg)
		if err == nil && !slices.Equal(got, want) {
			err = fmt.Errorf("got %v\nwant %v", got, want)
		}
		if err != nil {
			t.Fatalf("crash %d during recovery: %v", i, err)
		}
	}
	return len(images)
}

// checkReads reads from every offset of the log, through its offset
// index, and looks timestamps up through its time index: each answer
// must be the batch a scan of the whole log finds.
func checkReads(t *testing.T, l *storage.Log) {
	t.Helper()
	hs := readAll(t, l)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		i := slices.IndexFunc(hs, func(h recordbatch.Header) bool { return h.LastOffset() >= off })
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
		if err != nil || res.Batches != 1 {
			t.Fatalf("read at %d: %d batches, %v", off, res.Batches, err)
		}
		if got := headers(t, res.Data)[0].BaseOffset; got != hs[i].BaseOffset {
			t.Fatalf("read at %d found the batch at %d, want %d", off, got, hs[i].BaseOffset)
		}
	}
	for _, ts := range []int64{0, 1000, 1001, 2000, 2001} {
		want := int64(-1)
		if i := slices.IndexFunc(hs, func(h recordbatch.Header) bool { return h.MaxTimestamp >= ts }); i >= 0 {
			want = hs[i].BaseOffset
		}
		if got, err := l.OffsetForTimestamp(ts); err != nil || got != want {
			t.Fatalf("offset for timestamp %d: %d, %v; want %d", ts, got, err, want)
		}
	}
}

// beforeOrAfter checks that got is after below some offset and before
// from it on.
func beforeOrAfter(before, after, got []rec) error {
	kept := map[int64]bool{}
	for _, r := range after {
		kept[r.offset] = true
	}
	cut := int64(-1)
	in := map[int64]bool{}
	for _, r := range got {
		in[r.offset] = true
		if !kept[r.offset] && cut < 0 {
			cut = r.offset
		}
	}
	var want []rec
	for _, r := range before {
		if cut >= 0 && r.offset >= cut || kept[r.offset] {
			want = append(want, r)
		}
	}
	if cut >= 0 { // the groups before cut cleaned, the rest not
		var w []rec
		for _, r := range want {
			if r.offset >= cut || kept[r.offset] {
				w = append(w, r)
			}
		}
		want = w
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("a mix: cut %d\n got %v\nwant %v", cut, got, want)
	}
	return nil
}

// TestCleanerFaultsLeaveOldLog: ENOSPC or an fsync error while writing
// the cleaned segment, or a failed rename before the commit point, fail
// the pass and leave the old log whole, with no partial file.
func TestCleanerFaultsLeaveOldLog(t *testing.T) {
	for _, f := range []errorfs.Fault{
		{Op: errorfs.OpWrite, PathSuffix: ".cleaned", Err: errorfs.ENOSPC},
		{Op: errorfs.OpSync, PathSuffix: ".cleaned", Err: errorfs.EIO},
		{Op: errorfs.OpRename, PathSuffix: ".swap", Err: errorfs.EIO},
	} {
		mem := memfs.New()
		efs := errorfs.New(mem)
		cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
		l := openLog(t, "/data/f-0", cfg, efs)
		scenario(t, l, 1000)
		before := readRecords(t, l)
		efs.Inject(f)
		_, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000)))
		if !errors.Is(err, f.Err) {
			t.Fatalf("fault %v: pass returned %v", f.Op, err)
		}
		efs.Clear()
		if got := readRecords(t, l); !slices.Equal(got, before) && beforeOrAfter(before, wantCompacted(before, l.LogEndOffset(), false), got) != nil {
			t.Fatalf("fault %v: log changed to %v", f.Op, got)
		}
		names, _ := mem.ReadDir("/data/f-0")
		for _, n := range names {
			if strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") {
				t.Fatalf("fault %v: %s left behind", f.Op, n)
			}
		}
		if _, err := l.Append(keyedBatch(t, 1, kv{key: "a", value: "b"}), storage.AppendOptions{Sync: true}); err != nil {
			t.Fatalf("fault %v: log refuses appends after a failed pass: %v", f.Op, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCleanerChunkReadBeforeSwap: a zero-copy chunk found before a pass
// and opened after it (its path now names the cleaned file) is refused
// or starts with the batch the read found, never another one.
func TestCleanerChunkReadBeforeSwap(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/ch-0", cfg, memfs.New())
	scenario(t, l, 1000)
	var chunks []storage.Chunk
	var firsts []int64
	for off := int64(0); off < 50; off += 3 {
		res, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 300, MinOneBatch: true, ChunksOnly: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 1, MinOneBatch: true}, nil)
		chunks = append(chunks, res.Chunks[0])
		firsts = append(firsts, headers(t, data.Data)[0].BaseOffset)
	}
	if _, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000))); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range chunks {
		c := &chunks[i]
		if err := c.Open(); err != nil {
			if !errors.Is(err, storage.ErrChunkChanged) {
				t.Fatalf("chunk %d: %v", i, err)
			}
			refused++
			continue
		}
		b, err := c.AppendTo(nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if h := recordbatch.ReadHeader(b); h.BaseOffset != firsts[i] {
			t.Fatalf("chunk %d starts at batch %d, the read found %d", i, h.BaseOffset, firsts[i])
		}
	}
	t.Logf("%d of %d chunks refused after the swap", refused, len(chunks))
}

// TestCleanerFsyncsBeforeCleaning: records appended without an fsync are
// made durable by the pass before it maps them, and nothing at or above
// the caller's bound is cleaned.
func TestCleanerFsyncsBeforeCleaning(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/ns-0", cfg, memfs.New())
	for i := 0; i < 40; i++ {
		b := keyedBatch(t, 1000, kv{key: fmt.Sprintf("k%d", i%4), value: fmt.Sprint(i)}, kv{key: fmt.Sprintf("k%d", i%4), value: fmt.Sprint(i)})
		if _, err := l.Append(b, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.FlushedOffset() != 0 {
		t.Fatalf("flushed %d before the pass", l.FlushedOffset())
	}
	before := readRecords(t, l)
	bound := int64(30)
	res, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), bound, time.UnixMilli(1_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	if res.CleanedTo == 0 || res.CleanedTo > bound || l.FlushedOffset() < res.CleanedTo {
		t.Fatalf("pass %+v with bound %d, flushed %d", res, bound, l.FlushedOffset())
	}
	if got := readRecords(t, l); !slices.Equal(got, wantCompacted(before, res.CleanedTo, false)) {
		t.Fatalf("got %v", got)
	}
}

// TestCleanerTruncationLowersCleanedTo: a follower truncating below the
// cleaned point makes what it appends again dirty, so the next pass maps
// it (Kafka lowers its cleaner checkpoint on truncation); the lowered
// offset survives a restart.
func TestCleanerTruncationLowersCleanedTo(t *testing.T) {
	fs := memfs.New()
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/tr-0", cfg, fs)
	scenario(t, l, 1000)
	res, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000)))
	if err != nil || res.CleanedTo == 0 {
		t.Fatalf("pass %+v: %v", res, err)
	}
	cut := res.CleanedTo - 10
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if l.CleanedTo() > l.LogEndOffset() {
		t.Fatalf("cleaned to %d above the truncated end %d", l.CleanedTo(), l.LogEndOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, "/data/tr-0", cfg, fs)
	defer l.Close()
	if l.CleanedTo() > l.LogEndOffset() {
		t.Fatalf("after restart cleaned to %d above the end %d", l.CleanedTo(), l.LogEndOffset())
	}
}

// TestCleanerFaultAfterCommitFailsLog: an error after the swap is
// committed (removing an old segment's file) fails the log, which refuses
// appends; reopening completes the swap, and the log is the cleaned one.
func TestCleanerFaultAfterCommitFailsLog(t *testing.T) {
	mem := memfs.New()
	efs := errorfs.New(mem)
	cfg := storage.Config{SegmentBytes: 600, IndexIntervalBytes: 128}
	l := openLog(t, "/data/ac-0", cfg, efs)
	scenario(t, l, 1000)
	before := readRecords(t, l)
	efs.Inject(errorfs.Fault{Op: errorfs.OpRemove, PathSuffix: ".timeindex", Err: errorfs.EIO, Times: 1})
	_, err := l.Clean(cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000)))
	if !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("pass after a failed removal: %v, want ErrFailed", err)
	}
	if _, err := l.Append(keyedBatch(t, 1, kv{key: "a", value: "b"}), storage.AppendOptions{}); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("append to a failed log: %v", err)
	}
	l.Close()
	l = openLog(t, "/data/ac-0", cfg, mem)
	defer l.Close()
	got := readRecords(t, l)
	if err := beforeOrAfter(before, wantCompacted(before, 50, false), got); err != nil || slices.Equal(got, before) {
		t.Fatalf("after reopening: %v (unchanged: %v)", err, slices.Equal(got, before))
	}
}

// TestCleanerConcurrentWithAppendsAndReads: passes run while a writer
// appends keyed batches and a reader reads the log from its start again
// and again; every read is in order and the final log holds each key's
// last value.
func TestCleanerConcurrentWithAppendsAndReads(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 1024, IndexIntervalBytes: 128}
	l := openLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	const rounds = 300
	done := make(chan struct{})
	errs := make(chan error, 3)
	go func() {
		defer close(done)
		defer func() { errs <- nil }() // the writer's done (after its error, if any)
		for i := 0; i < rounds; i++ {
			b := keyedBatch(t, 1000, kv{key: fmt.Sprint("k", i%7), value: fmt.Sprint(i)}, kv{key: fmt.Sprint("j", i%3), value: fmt.Sprint(i)})
			if _, err := l.Append(b, storage.AppendOptions{Sync: i%10 == 0}); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			res, err := l.Read(storage.ReadOptions{Offset: l.LogStartOffset(), MaxBytes: 1 << 20}, nil)
			if err != nil {
				errs <- err
				return
			}
			last := int64(-1)
			if err := records.Decode(res.Data, 0, 0, func(r records.Record) bool {
				if r.Offset <= last {
					err = fmt.Errorf("offset %d after %d", r.Offset, last)
				}
				last = r.Offset
				return err == nil
			}); err != nil {
				errs <- err
				return
			}
		}
	}()
	m := storage.NewOffsetMap(1 << 16)
	passes := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		res, err := l.Clean(cleanOpts(m, l.LogEndOffset(), time.UnixMilli(1_000_000)))
		if err != nil {
			t.Fatal(err)
		}
		if res.CleanedTo > 0 {
			passes++
		}
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Clean(cleanOpts(m, l.LogEndOffset(), time.UnixMilli(1_000_000))); err != nil {
		t.Fatal(err)
	}
	got := readRecords(t, l)
	last := map[string]string{}
	for _, r := range got {
		last[r.key] = r.value
	}
	for i := rounds - 7; i < rounds; i++ {
		if k := fmt.Sprint("k", i%7); last[k] != fmt.Sprint(i) {
			t.Fatalf("key %s: %q, want %d", k, last[k], i)
		}
	}
	t.Logf("%d passes while appending; %d of %d records left", passes, len(got), 2*rounds)
}

// producerBatch is keyedBatch from an idempotent producer.
func producerBatch(t testing.TB, id int64, seq int32, kvs ...kv) []byte {
	t.Helper()
	var b records.Builder
	for _, r := range kvs {
		b.Add(records.Record{Key: []byte(r.key), Value: []byte(r.value), Timestamp: 1000})
	}
	batch, err := b.AppendBatch(nil, records.BatchOptions{Codec: records.Gzip, ProducerID: id, ProducerEpoch: 3, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// TestCleanerKeepsLiveProducersLastBatchEmpty: a producer batch whose
// records are all superseded stays as an empty batch (its header: offsets,
// producer id, epoch and sequence; no records, no codec) when KeepEmpty
// says it is its producer's last, as Kafka keeps it so producer state
// survives; an earlier batch of the same producer goes, and a later pass
// drops the empty batch once it is no longer the last.
func TestCleanerKeepsLiveProducersLastBatchEmpty(t *testing.T) {
	cfg := storage.Config{SegmentBytes: 400, IndexIntervalBytes: 128}
	l := openLog(t, "/data/pe-0", cfg, memfs.New())
	defer l.Close()
	appendB := func(b []byte) int64 {
		res, err := l.Append(b, storage.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.BaseOffset
	}
	first := appendB(producerBatch(t, 7, 0, kv{key: "a", value: "1"}, kv{key: "b", value: "1"}))
	last := appendB(producerBatch(t, 7, 2, kv{key: "a", value: "2"}, kv{key: "b", value: "2"}))
	for i := 0; i < 12; i++ { // supersede both, and roll past them
		appendB(keyedBatch(t, 1000, kv{key: "a", value: fmt.Sprint(i)}, kv{key: "b", value: fmt.Sprint(i)}))
	}
	lastOf7 := last + 1
	opts := cleanOpts(storage.NewOffsetMap(1<<20), l.LogEndOffset(), time.UnixMilli(1_000_000))
	opts.KeepEmpty = func(h recordbatch.Header) bool { return h.ProducerID == 7 && h.LastOffset() == lastOf7 }
	if res, err := l.Clean(opts); err != nil || res.CleanedTo <= lastOf7 {
		t.Fatalf("pass %+v: %v", res, err)
	}
	hs := readAll(t, l)
	var empty []recordbatch.Header
	for _, h := range hs {
		if h.ProducerID == 7 {
			empty = append(empty, h)
		}
	}
	if len(empty) != 1 {
		t.Fatalf("producer 7 has %d batches after the pass, want its last one: %+v", len(empty), empty)
	}
	h := empty[0]
	if h.BaseOffset != last || h.LastOffset() != lastOf7 || h.RecordCount != 0 || h.ProducerEpoch != 3 || h.BaseSequence != 2 || h.Codec() != 0 {
		t.Fatalf("kept batch %+v, want the empty header of [%d, %d] epoch 3 sequence 2", h, last, lastOf7)
	}
	if first >= last {
		t.Fatal("test setup: batches out of order")
	}
	// Another batch of producer 7 makes the empty one no longer last.
	appendB(producerBatch(t, 7, 4, kv{key: "c", value: "1"}))
	for i := 0; i < 12; i++ {
		appendB(keyedBatch(t, 1000, kv{key: "d", value: fmt.Sprint(i)}))
	}
	opts.KeepEmpty = func(recordbatch.Header) bool { return false }
	opts.UpperBound = l.LogEndOffset()
	if _, err := l.Clean(opts); err != nil {
		t.Fatal(err)
	}
	for _, h := range readAll(t, l) {
		if h.RecordCount == 0 {
			t.Fatalf("empty batch at %d kept after its producer wrote again", h.BaseOffset)
		}
	}
}
