package replication

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// The idempotent producer state of one partition: its snapshots at clean
// close, rolls, retention and DeleteRecords, and their recovery. The
// broker-level tests (server/idempotence_test.go) cover the rules through
// produceBatch.

func testConfig(t *testing.T) Config {
	return Config{Topic: "idem", Index: 0, BrokerID: 1, Dir: filepath.Join(t.TempDir(), "idem-0"),
		Log:                  storage.Config{RetentionTime: -1, RetentionBytes: -1},
		ProducerIDExpiration: 24 * time.Hour}
}

func newTestPartition(t *testing.T, mutate ...func(*Config)) (*Replica, Config) {
	t.Helper()
	cfg := testConfig(t)
	for _, m := range mutate {
		m(&cfg)
	}
	return openPartition(t, cfg), cfg
}

func openPartition(t *testing.T, cfg Config) *Replica {
	t.Helper()
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func reopen(t *testing.T, p *Replica, cfg Config) *Replica {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return openPartition(t, cfg)
}

// crashCopy copies a live partition's directory, as a kill -9 leaves it
// (the page cache survives a process crash), without the clean-close
// snapshot.
func crashCopy(t *testing.T, cfg Config) Config {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "idem-0")
	if err := os.CopyFS(dst, os.DirFS(cfg.Dir)); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = dst
	return cfg
}

func idemBatch(t *testing.T, id int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	var b records.Builder
	for range n {
		b.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	}
	data, err := b.AppendBatch(nil, records.BatchOptions{ProducerID: id, ProducerEpoch: epoch, BaseSequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func produceIdem(t *testing.T, p *Replica, batch []byte) (int64, error) {
	t.Helper()
	h, err := recordbatch.ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.AppendIdempotent(h, batch, storage.AppendOptions{})
	return res.BaseOffset, err
}

// produceSeqs appends batches of n records from producer id, sequences
// from 0, and returns the batches sent.
func produceSeqs(t *testing.T, p *Replica, id int64, batches, n int) [][]byte {
	t.Helper()
	return produceSeqs2(t, p, id, 0, batches, n)
}

// produceSeqs2 appends count batches of n records starting at batch from.
func produceSeqs2(t *testing.T, p *Replica, id int64, from, count, n int) [][]byte {
	t.Helper()
	var sent [][]byte
	for i := from; i < from+count; i++ {
		batch := idemBatch(t, id, 0, int32(i*n), n)
		sent = append(sent, append([]byte(nil), batch...))
		if off, err := produceIdem(t, p, batch); err != nil || off != int64(i*n) {
			t.Fatalf("batch %d: offset %d err %v", i, off, err)
		}
	}
	return sent
}

func hasProducer(t *testing.T, p *Replica, id int64) bool {
	t.Helper()
	for _, s := range p.Producers() {
		if s.ProducerID == id {
			return true
		}
	}
	return false
}

// snapshotOffsets lists the snapshot files of a partition directory.
func snapshotOffsets(t *testing.T, dir string) []int64 {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range names {
		if off, ok := parseSnapshotName(e.Name()); ok {
			out = append(out, off)
		}
	}
	return out
}

// withExtraProducer rewrites the snapshot at off with one more producer,
// one the log never saw, so a test can tell the state came from the file.
func withExtraProducer(t *testing.T, dir string, off, id int64) {
	t.Helper()
	path := filepath.Join(dir, snapshotName(off))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at, producers, err := decodeSnapshot(data)
	if err != nil || at != off {
		t.Fatalf("snapshot %d: at %d err %v", off, at, err)
	}
	producers = append(producers, snapshotProducer{id: id, epoch: 3, lastTimestamp: 7, lastAppend: time.Now().UnixMilli(), txnFirst: noTxn, coordinatorEpoch: -1,
		batches: []seqBatch{{firstSeq: 40, lastSeq: 41, baseOffset: 0, lastOffset: 1}}})
	if err := os.WriteFile(path, encodeSnapshot(off, producers), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixCRC(d []byte) []byte {
	binary.BigEndian.PutUint32(d[1:], recordbatch.Checksum(d[5:]))
	return d
}

func TestProducerSnapshotWrittenAtCleanClose(t *testing.T) {
	p, cfg := newTestPartition(t)
	id := int64(7)
	sent := produceSeqs(t, p, id, 4, 3)
	dir := p.Dir()
	p = reopen(t, p, cfg)
	if got := snapshotOffsets(t, dir); len(got) != 1 || got[0] != 12 {
		t.Fatalf("snapshots after a clean close: %v, want [12]", got)
	}
	p = reopen(t, p, cfg) // untouched: the snapshot stays as it is
	withExtraProducer(t, dir, 12, 999)
	p = reopen(t, p, cfg)
	if !hasProducer(t, p, 999) {
		t.Fatal("the state was not loaded from the snapshot")
	}
	if off, err := produceIdem(t, p, sent[3]); err != nil || off != 9 {
		t.Fatalf("retry after restart: offset %d err %v, want 9", off, err)
	}
	if _, err := produceIdem(t, p, idemBatch(t, id, 0, 13, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after restart: %v", err)
	}
}

func TestProducerSnapshotWrittenAtRoll(t *testing.T) {
	p, cfg := newTestPartition(t, func(c *Config) { c.Log.SegmentBytes = 1024 })
	id := int64(7)
	sent := produceSeqs(t, p, id, 30, 2) // ~80 bytes a batch: several rolls
	if p.SegmentCount() < 2 {
		t.Fatalf("%d segments, want a roll", p.SegmentCount())
	}
	p.MaybeFlush(time.Now()) // the flush loop writes the snapshot of a roll
	dir := p.Dir()
	snaps := snapshotOffsets(t, dir)
	if len(snaps) != 1 || snaps[0] != 60 {
		t.Fatalf("snapshots after rolls: %v, want [60]", snaps)
	}
	more := produceSeqs2(t, p, id, 30, 3, 2) // after the snapshot, replayed at load
	crashed := crashCopy(t, cfg)
	withExtraProducer(t, crashed.Dir, 60, 999)
	nb := openPartition(t, crashed)
	if !hasProducer(t, nb, 999) {
		t.Fatal("the state was not loaded from the roll snapshot")
	}
	if off, err := produceIdem(t, nb, more[2]); err != nil || off != 64 {
		t.Fatalf("retry of the last batch after a crash: offset %d err %v, want 64", off, err)
	}
	if _, err := produceIdem(t, nb, sent[20]); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of a batch older than the last 5: %v, want out of order", err)
	}
	if nb.LogEndOffset() != 66 {
		t.Fatalf("log end %d, want 66: nothing appended twice", nb.LogEndOffset())
	}
}

func TestCorruptProducerSnapshotIgnored(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"bad crc":   func(d []byte) []byte { d[len(d)-1] ^= 0xff; return d },
		"truncated": func(d []byte) []byte { return d[:len(d)-7] },
		"empty":     func([]byte) []byte { return nil },
		"huge count": func(d []byte) []byte {
			d[13], d[14] = 0xff, 0xff
			return fixCRC(d)
		},
		"batch at the snapshot offset": func(d []byte) []byte {
			binary.BigEndian.PutUint64(d[5:], 9) // the last batch starts at 9
			return fixCRC(d)
		},
	} {
		t.Run(name, func(t *testing.T) {
			p, cfg := newTestPartition(t)
			id := int64(7)
			sent := produceSeqs(t, p, id, 4, 3)
			dir := p.Dir()
			p = reopen(t, p, cfg)
			path := filepath.Join(dir, snapshotName(12))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			p = reopen(t, p, cfg)
			if off, err := produceIdem(t, p, sent[3]); err != nil || off != 9 {
				t.Fatalf("retry with a corrupt snapshot: offset %d err %v, want 9 (replayed from the log)", off, err)
			}
			if got := snapshotOffsets(t, dir); len(got) != 0 {
				t.Fatalf("snapshots %v: the corrupt one should be gone", got)
			}
		})
	}
}

func TestStaleProducerSnapshotAboveLogEndIgnored(t *testing.T) {
	p, cfg := newTestPartition(t)
	id := int64(7)
	sent := produceSeqs(t, p, id, 4, 3)
	dir := p.Dir()
	p = reopen(t, p, cfg)
	// a snapshot of bytes a crash lost: above the log end
	stale := encodeSnapshot(50, []snapshotProducer{{id: id, epoch: 0, txnFirst: noTxn, coordinatorEpoch: -1, batches: []seqBatch{{firstSeq: 30, lastSeq: 32, baseOffset: 40, lastOffset: 42}}}})
	if err := os.WriteFile(filepath.Join(dir, snapshotName(50)), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	p = reopen(t, p, cfg)
	if off, err := produceIdem(t, p, sent[3]); err != nil || off != 9 {
		t.Fatalf("retry: offset %d err %v, want 9", off, err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotName(50))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale snapshot is still there: %v", err)
	}
}

func TestProducerSnapshotsFollowTheLogStart(t *testing.T) {
	p, cfg := newTestPartition(t, func(c *Config) { c.Log.SegmentBytes = 1024 })
	id := int64(7)
	dir := p.Dir()
	for round := 0; round < 3; round++ {
		produceSeqs2(t, p, id, round*30, 30, 2)
		p.MaybeFlush(time.Now())
	}
	if got := snapshotOffsets(t, dir); len(got) != snapshotsKept {
		t.Fatalf("snapshots %v, want the newest %d", got, snapshotsKept)
	}

	cfg.Log.RetentionBytes = 2048
	p.SetConfig(cfg.Log)
	p.EnforceRetention(time.Now())
	start := p.LogStartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	for _, off := range snapshotOffsets(t, dir) {
		if off < start {
			t.Fatalf("snapshot %d below the log start %d after retention", off, start)
		}
	}

	last := idemBatch(t, id, 0, 180, 2)
	if off, err := produceIdem(t, p, append([]byte(nil), last...)); err != nil || off != 180 {
		t.Fatalf("produce: %d %v", off, err)
	}
	if err := p.AdvanceStartOffset(182); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, dir); len(got) != 1 || got[0] != 182 {
		t.Fatalf("snapshots after DeleteRecords to 182: %v, want [182]", got)
	}
	p = reopen(t, p, cfg)
	if off, err := produceIdem(t, p, last); err != nil || off != 180 {
		t.Fatalf("retry after DeleteRecords and restart: offset %d err %v, want 180", off, err)
	}
}

func TestIdleProducersExpire(t *testing.T) {
	p, cfg := newTestPartition(t)
	id := int64(7)
	sent := produceSeqs(t, p, id, 2, 3)
	if n := p.producers.expire(time.Now().Add(23 * time.Hour)); n != 0 {
		t.Fatalf("%d producers expired before producer.id.expiration.ms", n)
	}
	p.EnforceRetention(time.Now().Add(25 * time.Hour))
	if hasProducer(t, p, id) {
		t.Fatal("the producer is still there a day after its last append")
	}
	// as in Kafka, a batch from an expired producer is a new producer's
	if off, err := produceIdem(t, p, sent[1]); err != nil || off != 6 {
		t.Fatalf("batch of an expired producer: offset %d err %v, want appended at 6", off, err)
	}

	// expiry applies to a snapshot's entries when it loads
	dir := p.Dir()
	p = reopen(t, p, cfg)
	path := filepath.Join(dir, snapshotName(9))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, producers, err := decodeSnapshot(data)
	if err != nil || len(producers) != 1 {
		t.Fatalf("snapshot: %+v %v", producers, err)
	}
	producers[0].lastAppend = time.Now().Add(-25 * time.Hour).UnixMilli()
	if err := os.WriteFile(path, encodeSnapshot(9, producers), 0o644); err != nil {
		t.Fatal(err)
	}
	p = reopen(t, p, cfg)
	if hasProducer(t, p, id) {
		t.Fatal("an expired producer was loaded from the snapshot")
	}
}

// TestIdempotentStateAfterRecoveryComesFromSnapshotAndLog: with a roll
// snapshot on disk, recovery reloads the producer state from it plus the
// recovered log: the batch kept by recovery answers its retry, and the
// producer's next sequence continues.
func TestIdempotentStateAfterRecoveryComesFromSnapshotAndLog(t *testing.T) {
	fs := errorfs.New(nil)
	p, _ := newTestPartition(t, func(c *Config) { c.FS, c.Log.FlushMessages, c.Log.SegmentBytes = fs, 1, 1024 })
	id := int64(7)
	produceSeqs(t, p, id, 30, 2)
	p.MaybeFlush(time.Now())
	dir := p.Dir()
	if got := snapshotOffsets(t, dir); len(got) != 1 || got[0] != 60 {
		t.Fatalf("snapshots %v, want [60]", got)
	}
	withExtraProducer(t, dir, 60, 999) // seen only if recovery reads the file
	failing := idemBatch(t, id, 0, 60, 2)
	h, err := recordbatch.ParseHeader(failing)
	if err != nil {
		t.Fatal(err)
	}
	fs.Inject(errorfs.Fault{Op: errorfs.OpSync, Err: errorfs.EIO})
	if _, err := p.AppendIdempotent(h, append([]byte(nil), failing...), storage.AppendOptions{Sync: true}); !errors.Is(err, storage.ErrFailed) {
		t.Fatalf("append under fsync fault: %v", err)
	}
	fs.Clear()
	if ok, err := p.Recover(); !ok || err != nil {
		t.Fatalf("recover: %v %v", ok, err)
	}
	if !hasProducer(t, p, 999) {
		t.Fatal("the state after recovery did not come from the snapshot")
	}
	if off, err := produceIdem(t, p, failing); err != nil || off != 60 {
		t.Fatalf("retry after recovery: offset %d err %v, want the kept batch's 60", off, err)
	}
	if off, err := produceIdem(t, p, idemBatch(t, id, 0, 62, 2)); err != nil || off != 62 {
		t.Fatalf("next batch after recovery: offset %d err %v, want 62", off, err)
	}
}

// TestCleanerKeepsEachProducersLastBatch: the cleaner's KeepEmpty of a
// partition answers yes for the last batch of each producer it
// remembers, and no for their earlier batches and for other producers.
func TestCleanerKeepsEachProducersLastBatch(t *testing.T) {
	p, _ := newTestPartition(t)
	a := produceSeqs(t, p, 7, 3, 2)
	var b [][]byte
	for i := 0; i < 2; i++ { // producer 8's batches follow 7's
		batch := idemBatch(t, 8, 0, int32(i), 1)
		if _, err := produceIdem(t, p, batch); err != nil {
			t.Fatal(err)
		}
		b = append(b, batch)
	}
	keep := p.keepLastBatches()
	header := func(batch []byte) recordbatch.Header {
		h, err := recordbatch.ParseHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for i, batch := range a {
		h := header(batch)
		h.BaseOffset = int64(2 * i) // as appended
		if got, want := keep(h), i == len(a)-1; got != want {
			t.Fatalf("producer 7 batch %d: keep %v, want %v", i, got, want)
		}
	}
	last := header(b[1])
	last.BaseOffset = 7
	if !keep(last) {
		t.Fatal("producer 8's last batch not kept")
	}
	last.ProducerID = 9
	if keep(last) {
		t.Fatal("a batch of a producer the partition does not know kept")
	}
}
