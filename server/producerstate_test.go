package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server/records"
)

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

// produceSeqs appends batches of n records from producer id, sequences
// from 0, to topic "idem" partition 0, and returns the batches sent.
func produceSeqs(t *testing.T, b *Broker, id int64, batches, n int) [][]byte {
	t.Helper()
	var sent [][]byte
	for i := 0; i < batches; i++ {
		batch := idemBatch(t, id, 0, int32(i*n), n)
		sent = append(sent, append([]byte(nil), batch...))
		if off, err := produceIdem(t, b, batch); err != nil || off != int64(i*n) {
			t.Fatalf("batch %d: offset %d err %v", i, off, err)
		}
	}
	return sent
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
	producers = append(producers, snapshotProducer{id: id, epoch: 3, lastTimestamp: 7, lastAppend: time.Now().UnixMilli(),
		batches: []seqBatch{{firstSeq: 40, lastSeq: 41, baseOffset: 0, lastOffset: 1}}})
	if err := os.WriteFile(path, encodeSnapshot(off, producers), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hasProducer(t *testing.T, b *Broker, id int64) bool {
	t.Helper()
	states, err := b.Producers("idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.ProducerID == id {
			return true
		}
	}
	return false
}

func TestProducerSnapshotWrittenAtCleanClose(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	sent := produceSeqs(t, b, id, 4, 3)
	dir := b.partitionDir("idem", 0)
	b = reopen(t, b)
	if got := snapshotOffsets(t, dir); len(got) != 1 || got[0] != 12 {
		t.Fatalf("snapshots after a clean close: %v, want [12]", got)
	}
	b = reopen(t, b) // untouched: the snapshot stays as it is
	withExtraProducer(t, dir, 12, 999)
	b = reopen(t, b)
	if !hasProducer(t, b, 999) {
		t.Fatal("the state was not loaded from the snapshot")
	}
	if off, err := produceIdem(t, b, sent[3]); err != nil || off != 9 {
		t.Fatalf("retry after restart: offset %d err %v, want 9", off, err)
	}
	if _, err := produceIdem(t, b, idemBatch(t, id, 0, 13, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after restart: %v", err)
	}
}

// crashCopy copies a live broker's data dir, as a kill -9 leaves it (the
// page cache survives a process crash), without the clean-close snapshot.
func crashCopy(t *testing.T, b *Broker) Config {
	t.Helper()
	cfg := b.cfg
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(cfg.DataDir)); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = dst
	return cfg
}

func TestProducerSnapshotWrittenAtRoll(t *testing.T) {
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "idem", Partitions: 1, Configs: map[string]string{CfgSegmentBytes: "1024"}}); err != nil {
		t.Fatal(err)
	}
	id, _, _ := b.InitProducerID(-1, -1)
	sent := produceSeqs(t, b, id, 30, 2) // ~80 bytes a batch: several rolls
	p, _ := b.Partition("idem", 0)
	if p.SegmentCount() < 2 {
		t.Fatalf("%d segments, want a roll", p.SegmentCount())
	}
	b.flushDue(time.Now()) // the flush loop writes the snapshot of a roll
	dir := b.partitionDir("idem", 0)
	snaps := snapshotOffsets(t, dir)
	if len(snaps) != 1 || snaps[0] != 60 {
		t.Fatalf("snapshots after rolls: %v, want [60]", snaps)
	}
	more := produceSeqs2(t, b, id, 30, 3, 2) // after the snapshot, replayed at load
	cfg := crashCopy(t, b)
	withExtraProducer(t, filepath.Join(cfg.DataDir, "idem-0"), 60, 999)
	nb, err := Open(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Close() })
	if !hasProducer(t, nb, 999) {
		t.Fatal("the state was not loaded from the roll snapshot")
	}
	if off, err := produceIdem(t, nb, more[2]); err != nil || off != 64 {
		t.Fatalf("retry of the last batch after a crash: offset %d err %v, want 64", off, err)
	}
	if _, err := produceIdem(t, nb, sent[20]); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry of a batch older than the last 5: %v, want out of order", err)
	}
	if p, _ := nb.Partition("idem", 0); p.LogEndOffset() != 66 {
		t.Fatalf("log end %d, want 66: nothing appended twice", p.LogEndOffset())
	}
}

// produceSeqs2 appends count batches of n records starting at batch from.
func produceSeqs2(t *testing.T, b *Broker, id int64, from, count, n int) [][]byte {
	t.Helper()
	var sent [][]byte
	for i := from; i < from+count; i++ {
		batch := idemBatch(t, id, 0, int32(i*n), n)
		sent = append(sent, append([]byte(nil), batch...))
		if off, err := produceIdem(t, b, batch); err != nil || off != int64(i*n) {
			t.Fatalf("batch %d: offset %d err %v", i, off, err)
		}
	}
	return sent
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
			b := newTestBroker(t)
			id, _, _ := b.InitProducerID(-1, -1)
			sent := produceSeqs(t, b, id, 4, 3)
			dir := b.partitionDir("idem", 0)
			b = reopen(t, b)
			path := filepath.Join(dir, snapshotName(12))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			b = reopen(t, b)
			if off, err := produceIdem(t, b, sent[3]); err != nil || off != 9 {
				t.Fatalf("retry with a corrupt snapshot: offset %d err %v, want 9 (replayed from the log)", off, err)
			}
			if got := snapshotOffsets(t, dir); len(got) != 0 {
				t.Fatalf("snapshots %v: the corrupt one should be gone", got)
			}
		})
	}
}

func TestStaleProducerSnapshotAboveLogEndIgnored(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	sent := produceSeqs(t, b, id, 4, 3)
	dir := b.partitionDir("idem", 0)
	b = reopen(t, b)
	// a snapshot of bytes a crash lost: above the log end
	stale := encodeSnapshot(50, []snapshotProducer{{id: id, epoch: 0, batches: []seqBatch{{firstSeq: 30, lastSeq: 32, baseOffset: 40, lastOffset: 42}}}})
	if err := os.WriteFile(filepath.Join(dir, snapshotName(50)), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	b = reopen(t, b)
	if off, err := produceIdem(t, b, sent[3]); err != nil || off != 9 {
		t.Fatalf("retry: offset %d err %v, want 9", off, err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotName(50))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale snapshot is still there: %v", err)
	}
}

func TestProducerSnapshotsFollowTheLogStart(t *testing.T) {
	b := newTestBroker(t, func(c *Config) { c.RetentionCheckInterval = time.Hour })
	if err := b.CreateTopic(TopicSpec{Name: "idem", Partitions: 1, Configs: map[string]string{CfgSegmentBytes: "1024"}}); err != nil {
		t.Fatal(err)
	}
	id, _, _ := b.InitProducerID(-1, -1)
	dir := b.partitionDir("idem", 0)
	for round := 0; round < 3; round++ {
		produceSeqs2(t, b, id, round*30, 30, 2)
		b.flushDue(time.Now())
	}
	if got := snapshotOffsets(t, dir); len(got) != snapshotsKept {
		t.Fatalf("snapshots %v, want the newest %d", got, snapshotsKept)
	}

	if err := b.AlterTopicConfigs("idem", map[string]string{CfgRetentionBytes: "2048"}, nil, false); err != nil {
		t.Fatal(err)
	}
	b.enforceRetention(time.Now())
	p, _ := b.Partition("idem", 0)
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
	if off, err := produceIdem(t, b, append([]byte(nil), last...)); err != nil || off != 180 {
		t.Fatalf("produce: %d %v", off, err)
	}
	if _, err := b.DeleteRecords("idem", 0, 182); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, dir); len(got) != 1 || got[0] != 182 {
		t.Fatalf("snapshots after DeleteRecords to 182: %v, want [182]", got)
	}
	b = reopen(t, b)
	if off, err := produceIdem(t, b, last); err != nil || off != 180 {
		t.Fatalf("retry after DeleteRecords and restart: offset %d err %v, want 180", off, err)
	}
}

// TestIdempotentProducersOnManyPartitions: producers of different
// partitions (and two per partition) append and retry concurrently; every
// retry answers its original offset and nothing is appended twice.
func TestIdempotentProducersOnManyPartitions(t *testing.T) {
	const partitions, perPartition, batches = 8, 2, 50
	b := newTestBroker(t)
	if err := b.CreateTopic(TopicSpec{Name: "many", Partitions: partitions, Configs: map[string]string{CfgSegmentBytes: "4096"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, partitions*perPartition)
	for g := 0; g < partitions*perPartition; g++ {
		wg.Add(1)
		go func(part int32) {
			defer wg.Done()
			errs <- produceWithRetries(b, part, batches)
		}(int32(g % partitions))
	}
	stop := make(chan struct{})
	go func() { // snapshots race the appends, as the flush loop does
		for {
			select {
			case <-stop:
				return
			default:
				b.flushDue(time.Now())
			}
		}
	}()
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := int32(0); i < partitions; i++ {
		p, _ := b.Partition("many", i)
		if p.LogEndOffset() != perPartition*batches {
			t.Fatalf("partition %d: log end %d, want %d", i, p.LogEndOffset(), perPartition*batches)
		}
	}
}

func produceWithRetries(b *Broker, part int32, batches int) error {
	id, _, err := b.InitProducerID(-1, -1)
	if err != nil {
		return err
	}
	for seq := int32(0); seq < int32(batches); seq++ {
		batch, err := idemBatchErr(id, seq)
		if err != nil {
			return err
		}
		first, err := b.ProduceBatch(context.Background(), BatchProduce{Topic: "many", Partition: part, Batches: append([]byte(nil), batch...)})
		if err != nil {
			return err
		}
		again, err := b.ProduceBatch(context.Background(), BatchProduce{Topic: "many", Partition: part, Batches: batch})
		if err != nil || again.BaseOffset != first.BaseOffset {
			return fmt.Errorf("partition %d seq %d: retry at %d (%v), original %d", part, seq, again.BaseOffset, err, first.BaseOffset)
		}
	}
	return nil
}

func fixCRC(d []byte) []byte {
	binary.BigEndian.PutUint32(d[1:], crc32.Checksum(d[5:], castagnoli))
	return d
}

func idemBatchErr(id int64, seq int32) ([]byte, error) {
	var b records.Builder
	b.Add(records.Record{Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
	return b.AppendBatch(nil, records.BatchOptions{ProducerID: id, BaseSequence: seq})
}

func TestIdleProducersExpire(t *testing.T) {
	b := newTestBroker(t)
	id, _, _ := b.InitProducerID(-1, -1)
	sent := produceSeqs(t, b, id, 2, 3)
	p, _ := b.Partition("idem", 0)
	ps := p.(*localPartition).producers
	if n := ps.expire(time.Now().Add(23 * time.Hour)); n != 0 {
		t.Fatalf("%d producers expired before producer.id.expiration.ms", n)
	}
	b.enforceRetention(time.Now().Add(25 * time.Hour))
	if hasProducer(t, b, id) {
		t.Fatal("the producer is still there a day after its last append")
	}
	// as in Kafka, a batch from an expired producer is a new producer's
	if off, err := produceIdem(t, b, sent[1]); err != nil || off != 6 {
		t.Fatalf("batch of an expired producer: offset %d err %v, want appended at 6", off, err)
	}

	// expiry applies to a snapshot's entries when it loads
	dir := b.partitionDir("idem", 0)
	b = reopen(t, b)
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
	b = reopen(t, b)
	if hasProducer(t, b, id) {
		t.Fatal("an expired producer was loaded from the snapshot")
	}
}
